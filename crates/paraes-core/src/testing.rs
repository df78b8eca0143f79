//! The conformance kit every engine's tests call (`testing` feature): [`check_engine`] runs one
//! engine over every mode, key size and direction, odd offsets and lengths, counter carries at
//! 2^32, 2^64 and 2^128, chunked calls, and GCM chunk counters (format v3 bodies, back to back
//! and as records with a tag's room), and compares each result with [`modes::apply`] on the
//! portable path, which the kit itself checks against the RustCrypto `aes` + `ctr` and
//! `aes-gcm` oracles; and, for an engine that runs records jobs ([`Engine::runs_records`]),
//! whole GCM chunk records sealed and opened against `aes-gcm` ([`records`]).
//!
//! Adding an engine to the workspace takes its own file plus one call:
//!
//! ```
//! use paraes_core::testing::{check_engine, Budget};
//! # let my_engine = paraes_core::CpuEngine::new(Some(2)).unwrap();
//! let checked = check_engine(&my_engine, 0x5eed, Budget::quick());
//! assert!(checked.jobs > 0 && checked.bytes > 0);
//! ```
//!
//! Beyond the kit, every engine runs the C2SP chunked-encryption vectors in raw mode:
//! Wycheproof's ([`wycheproof::check_engine_vectors`]) and chunks at sparse high indices
//! ([`sparse::check_engine_sparse`]).

use aes::cipher::{
    generic_array::GenericArray, BlockDecrypt, BlockEncrypt, KeyInit, KeyIvInit, StreamCipher,
    StreamCipherSeek,
};

use crate::aes::AesImpl;
use crate::engine::{Counters, Direction, Engine, Job, Mode, GCM_CHUNK_LEN};
use crate::key::{ExpandedKey, Key, KeySize};
use crate::modes;
use crate::seeded::SplitMix64;

pub mod edges;
pub mod records;
#[cfg(unix)]
pub mod sparse;
#[cfg(unix)]
pub mod wycheproof;

/// How much work [`check_engine`] may do: the longest buffer it hands the engine and how many
/// random jobs it adds to the fixed sweep.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Budget {
    /// The longest buffer, in bytes (the fixed sweep stops at the lengths below it).
    pub max_len: usize,
    /// Random jobs (mode, key size, direction, offset, length up to `max_len`) after the sweep.
    pub random_jobs: usize,
}

impl Budget {
    /// Small enough for slow engines (simulators) and unoptimised builds: buffers up to 64 KiB.
    pub fn quick() -> Self {
        Budget {
            max_len: 64 << 10,
            random_jobs: 24,
        }
    }

    /// For fast engines in release builds: buffers up to 4 MiB + 3 bytes.
    pub fn thorough() -> Self {
        Budget {
            max_len: (4 << 20) + 3,
            random_jobs: 64,
        }
    }

    /// A budget with the longest buffer `max_len` and `random_jobs` random jobs.
    pub fn new(max_len: usize, random_jobs: usize) -> Self {
        Budget {
            max_len,
            random_jobs,
        }
    }
}

/// What [`check_engine`] covered, for the test's log.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Checked {
    /// Jobs compared (one engine call each, or several for chunked ones).
    pub jobs: usize,
    /// Bytes the engine transformed.
    pub bytes: u64,
}

/// Lengths of the fixed sweep: empty, sub-block, block edges, batch edges of every x86 width
/// (8, 16, 32 blocks), a page plus a bit, and the chunk sizes engines split on, each +-1.
const SWEEP_LENS: [usize; 20] = [
    0,
    1,
    15,
    16,
    17,
    31,
    127,
    129,
    255,
    257,
    511,
    513,
    4096 + 5,
    (64 << 10) - 1,
    64 << 10,
    (256 << 10) + 1,
    (512 << 10) - 3,
    (1 << 20) + 3,
    (4 << 20) - 1,
    (4 << 20) + 3,
];

/// Counter blocks just before a carry out of the low 32 bits, the low 64 bits, and the whole
/// 128 bits (where the counter wraps to zero), so a buffer of a few blocks crosses each.
const CARRIES: [u128; 3] = [(1u128 << 32) - 3, (1u128 << 64) - 3, u128::MAX - 2];

/// Checks `engine` against the reference on the jobs `seed` and `budget` pick, and panics with
/// the first difference (job, length, offset, first differing byte). Returns what was covered.
///
/// For every key size, mode and direction it runs the fixed length sweep (up to
/// `budget.max_len`), starting counters just before each carry, odd CTR offsets (any byte of a
/// block) and block-aligned ECB ones, one buffer split into odd-sized chunks called one by one
/// with [`Job::advanced`], and ECB on a partial block (which must fail as the reference does);
/// then `budget.random_jobs` random jobs; then, where the engine runs them, records jobs
/// ([`records::check_engine_records`]).
pub fn check_engine(engine: &dyn Engine, seed: u64, budget: Budget) -> Checked {
    let mut kit = Kit {
        engine,
        rng: SplitMix64::new(seed),
        checked: Checked::default(),
    };
    for size in KeySize::ALL {
        let key = kit.key(size);
        oracle_agrees(&key, &mut kit.rng);
        let key = key.expand();
        for mode in [Mode::Ctr, Mode::Ecb] {
            for direction in [Direction::Encrypt, Direction::Decrypt] {
                for len in SWEEP_LENS.into_iter().filter(|&len| len <= budget.max_len) {
                    let counter = kit.rng.array();
                    let offset = kit.offset(mode);
                    kit.check(&key, mode, direction, counter, offset, len);
                }
                for carry in CARRIES {
                    for len in [16 * 5 + 3, 16 * 40 + 7] {
                        let offset = kit.offset(mode) % 16;
                        let counter = carry.wrapping_sub(u128::from(offset / 16));
                        kit.check(&key, mode, direction, counter.to_be_bytes(), offset, len);
                    }
                }
                kit.check_chunked(&key, mode, direction, budget.max_len);
                if mode == Mode::Ecb {
                    kit.check_refused(&key, direction);
                }
            }
        }
        kit.check_gcm_chunks(&key, budget.max_len);
    }
    for _ in 0..budget.random_jobs {
        let size = KeySize::ALL[(kit.rng.next_u64() % 3) as usize];
        let key = kit.key(size).expand();
        let mode = if kit.rng.next_u64().is_multiple_of(2) {
            Mode::Ctr
        } else {
            Mode::Ecb
        };
        let direction = if kit.rng.next_u64().is_multiple_of(2) {
            Direction::Encrypt
        } else {
            Direction::Decrypt
        };
        let len = (kit.rng.next_u64() % (budget.max_len as u64 + 1)) as usize;
        let counter = kit.rng.array();
        let offset = kit.offset(mode);
        kit.check(&key, mode, direction, counter, offset, len);
    }
    let records = records::check_engine_records(engine, seed ^ 0x0072_6563_6f72_6473, budget);
    kit.checked.jobs += records.jobs;
    kit.checked.bytes += records.bytes;
    kit.checked
}

/// The state of one [`check_engine`] run.
struct Kit<'e> {
    engine: &'e dyn Engine,
    rng: SplitMix64,
    checked: Checked,
}

impl Kit<'_> {
    fn key(&mut self, size: KeySize) -> Key {
        Key::new(&self.rng.bytes(size.bytes())).expect("a key size's length")
    }

    /// A stream position: any byte for CTR (a quarter of them inside the first block), a block
    /// boundary for ECB.
    fn offset(&mut self, mode: Mode) -> u64 {
        let offset = match self.rng.next_u64() % 4 {
            0 => self.rng.next_u64() % 16,
            _ => self.rng.next_u64() >> 20,
        };
        match mode {
            Mode::Ctr => offset,
            Mode::Ecb => offset & !15,
        }
    }

    /// Random bytes of `len` (whole blocks for ECB), the reference's result and the engine's.
    fn check(
        &mut self,
        key: &ExpandedKey,
        mode: Mode,
        direction: Direction,
        counter: [u8; 16],
        offset: u64,
        len: usize,
    ) {
        let len = match mode {
            Mode::Ctr => len,
            Mode::Ecb => len / 16 * 16,
        };
        let job = Job::new(mode, direction, key, counter, offset);
        self.check_job(&job, len);
    }

    /// `job` on `len` random bytes: the engine's result against the reference's.
    fn check_job(&mut self, job: &Job<'_>, len: usize) {
        let input = self.rng.bytes(len);
        let mut expected = input.clone();
        modes::apply(AesImpl::Portable, job, &mut expected).expect("a valid job");
        let mut got = input;
        if let Err(e) = self.engine.process(job, &mut got) {
            panic!("{}: {} failed: {e}", self.engine.name(), describe(job, len));
        }
        self.compare(job, &got, &expected);
        self.checked.bytes += len as u64;
    }

    /// One buffer in odd-sized chunks, each a call with the job advanced to its position,
    /// equals the reference on the whole buffer.
    fn check_chunked(&mut self, key: &ExpandedKey, mode: Mode, direction: Direction, max: usize) {
        let len = max.min(300_000) / 16 * 16;
        let job = Job::new(mode, direction, key, self.rng.array(), self.offset(mode));
        let input = self.rng.bytes(len);
        let mut expected = input.clone();
        modes::apply(AesImpl::Portable, &job, &mut expected).expect("a valid job");
        let mut got = input;
        let mut at = 0;
        while at < len {
            let piece = match mode {
                Mode::Ctr => 1 + (self.rng.next_u64() % 70_000) as usize,
                Mode::Ecb => 16 * (1 + (self.rng.next_u64() % 4_000) as usize),
            };
            let end = (at + piece).min(len);
            if let Err(e) = self
                .engine
                .process(&job.advanced(at as u64), &mut got[at..end])
            {
                panic!(
                    "{}: chunk {at}..{end} of {} failed: {e}",
                    self.engine.name(),
                    describe(&job, len)
                );
            }
            at = end;
        }
        self.compare(&job, &got, &expected);
        self.checked.bytes += len as u64;
    }

    /// GCM chunk counters ([`Counters::GcmChunks`]) back to back and as records with a tag's
    /// room: whole records from the start, odd positions inside a chunk and inside a tag's
    /// room, and one buffer in odd pieces; and ECB with them refused.
    fn check_gcm_chunks(&mut self, key: &ExpandedKey, max: usize) {
        for stride in [GCM_CHUNK_LEN, GCM_CHUNK_LEN + 16] {
            let base_nonce: [u8; 12] = self.rng.array();
            let counters = Counters::GcmChunks { base_nonce, stride };
            let record = stride as u64;
            let cases = [
                (0, 3 * stride + 100),
                (7 * record + 5, stride + 33),
                (record * 1000 + GCM_CHUNK_LEN as u64 + 3, 40),
                ((self.rng.next_u64() >> 24) / 16 * 16, 2 * stride),
            ];
            for (offset, len) in cases {
                let job = Job::ctr(key, [0; 16], offset).with_counters(counters);
                self.check_job(&job, len.min(max));
            }
            let len = (3 * stride + 77).min(max);
            let job = Job::new(Mode::Ctr, Direction::Decrypt, key, [0; 16], 2 * record)
                .with_counters(counters);
            let input = self.rng.bytes(len);
            let mut expected = input.clone();
            modes::apply(AesImpl::Portable, &job, &mut expected).expect("a valid job");
            let mut got = input;
            let mut at = 0;
            while at < len {
                let end = (at + 1 + (self.rng.next_u64() % 20_000) as usize).min(len);
                if let Err(e) = self
                    .engine
                    .process(&job.advanced(at as u64), &mut got[at..end])
                {
                    panic!(
                        "{}: GCM chunk piece {at}..{end} failed: {e}",
                        self.engine.name()
                    );
                }
                at = end;
            }
            self.compare(&job, &got, &expected);
            self.checked.bytes += len as u64;
            let ecb = job.with_mode(Mode::Ecb);
            assert!(
                self.engine.process(&ecb, &mut [0u8; 32]).is_err(),
                "{}: ECB with GCM chunk counters was accepted",
                self.engine.name()
            );
        }
    }

    /// ECB on a partial block or an unaligned position is refused, as the reference refuses it.
    fn check_refused(&mut self, key: &ExpandedKey, direction: Direction) {
        for (offset, len) in [(0u64, 17usize), (8, 32)] {
            let job = Job::ecb(key, direction).at(offset);
            assert!(
                self.engine.process(&job, &mut vec![0u8; len]).is_err(),
                "{}: {} was accepted, but ECB needs whole blocks",
                self.engine.name(),
                describe(&job, len)
            );
            self.checked.jobs += 1;
        }
    }

    fn compare(&mut self, job: &Job<'_>, got: &[u8], expected: &[u8]) {
        self.checked.jobs += 1;
        if got != expected {
            panic!(
                "{} differs from the reference on {}: first difference at byte {:?}",
                self.engine.name(),
                describe(job, got.len()),
                got.iter().zip(expected).position(|(a, b)| a != b)
            );
        }
    }
}

/// A job in words, for failure messages that name a reproducible case.
fn describe(job: &Job<'_>, len: usize) -> String {
    format!(
        "AES-{} {:?} {:?} counter {:032x} offset {} len {len} ({:?})",
        job.key.size().bits(),
        job.mode,
        job.direction,
        u128::from_be_bytes(job.counter),
        job.offset,
        job.counters
    )
}

/// The reference itself against RustCrypto: ECB both ways and CTR from an odd offset across a
/// 2^64 carry, for `key`. Panics on a difference (then the reference, not an engine, is wrong).
fn oracle_agrees(key: &Key, rng: &mut SplitMix64) {
    let expanded = key.expand();
    let data = rng.bytes(16 * 37);
    for direction in [Direction::Encrypt, Direction::Decrypt] {
        let job = Job::ecb(&expanded, direction);
        let mut ours = data.clone();
        modes::apply(AesImpl::Portable, &job, &mut ours).expect("whole blocks");
        let mut theirs = data.clone();
        rustcrypto_ecb(key.as_bytes(), direction, &mut theirs);
        assert!(
            ours == theirs,
            "{}: reference != RustCrypto",
            describe(&job, data.len())
        );
    }
    let counter = ((1u128 << 64) - 2).to_be_bytes();
    let offset = 5;
    let job = Job::ctr(&expanded, counter, offset);
    let mut ours = data.clone();
    modes::apply(AesImpl::Portable, &job, &mut ours).expect("CTR takes any length");
    let mut theirs = data;
    rustcrypto_ctr(key.as_bytes(), &counter, offset, &mut theirs);
    assert!(
        ours == theirs,
        "{}: reference != RustCrypto",
        describe(&job, ours.len())
    );
    gcm_oracle_agrees(key, rng);
}

/// The reference's GCM chunk counters against RustCrypto `aes-gcm`: two records (a full chunk
/// and a short one) with a tag's room, each chunk's ciphertext equal to AES-GCM's under the
/// chunk's nonce.
fn gcm_oracle_agrees(key: &Key, rng: &mut SplitMix64) {
    use aes_gcm::aead::{AeadInPlace, KeyInit as _};
    fn seal<C>(key: &[u8], nonce: &[u8; 12], data: &mut [u8])
    where
        C: aes::cipher::BlockCipher<BlockSize = aes::cipher::consts::U16> + BlockEncrypt + KeyInit,
    {
        let cipher = aes_gcm::AesGcm::<C, aes::cipher::consts::U12>::new_from_slice(key)
            .expect("a key size's length");
        // The tag is not the reference's business: only the ciphertext is compared.
        let _tag = cipher
            .encrypt_in_place_detached(nonce.into(), &[], data)
            .expect("a short message");
    }
    let expanded = key.expand();
    let base_nonce: [u8; 12] = rng.array();
    let stride = GCM_CHUNK_LEN + 16;
    let data = rng.bytes(stride + 1000);
    let job = Job::gcm_chunks(&expanded, base_nonce, stride, 0);
    let mut ours = data.clone();
    modes::apply(AesImpl::Portable, &job, &mut ours).expect("a valid job");
    for (record, start) in [(0u64, 0), (1, stride)] {
        let end = (start + GCM_CHUNK_LEN).min(data.len());
        // Computed here, not by `modes::gcm_chunk_counter`: the oracle stays independent.
        let mut nonce = base_nonce;
        for (n, r) in nonce[4..].iter_mut().zip(record.to_be_bytes()) {
            *n ^= r;
        }
        let mut theirs = data[start..end].to_vec();
        match key.as_bytes().len() {
            16 => seal::<aes::Aes128>(key.as_bytes(), &nonce, &mut theirs),
            24 => seal::<aes::Aes192>(key.as_bytes(), &nonce, &mut theirs),
            _ => seal::<aes::Aes256>(key.as_bytes(), &nonce, &mut theirs),
        }
        assert!(
            ours[start..end] == theirs[..],
            "GCM chunk {record}: reference != RustCrypto aes-gcm (AES-{})",
            key.size().bits()
        );
    }
    assert!(
        ours[GCM_CHUNK_LEN..stride] == data[GCM_CHUNK_LEN..stride],
        "the tag's room was changed"
    );
}

fn rustcrypto_ecb(key: &[u8], direction: Direction, buf: &mut [u8]) {
    fn run<C: KeyInit + BlockEncrypt + BlockDecrypt>(key: &[u8], encrypt: bool, buf: &mut [u8]) {
        let cipher = C::new_from_slice(key).expect("a key size's length");
        for block in buf.chunks_exact_mut(16) {
            let block = GenericArray::from_mut_slice(block);
            if encrypt {
                cipher.encrypt_block(block);
            } else {
                cipher.decrypt_block(block);
            }
        }
    }
    let encrypt = direction == Direction::Encrypt;
    match key.len() {
        16 => run::<aes::Aes128>(key, encrypt, buf),
        24 => run::<aes::Aes192>(key, encrypt, buf),
        _ => run::<aes::Aes256>(key, encrypt, buf),
    }
}

fn rustcrypto_ctr(key: &[u8], counter: &[u8; 16], offset: u64, buf: &mut [u8]) {
    fn run<C>(key: &[u8], counter: &[u8; 16], offset: u64, buf: &mut [u8])
    where
        C: BlockEncrypt + KeyInit + aes::cipher::BlockCipher<BlockSize = aes::cipher::consts::U16>,
        ctr::Ctr128BE<C>: KeyIvInit + StreamCipher + StreamCipherSeek,
    {
        let mut cipher =
            ctr::Ctr128BE::<C>::new_from_slices(key, counter).expect("a key size's length");
        cipher.seek(offset);
        cipher.apply_keystream(buf);
    }
    match key.len() {
        16 => run::<aes::Aes128>(key, counter, offset, buf),
        24 => run::<aes::Aes192>(key, counter, offset, buf),
        _ => run::<aes::Aes256>(key, counter, offset, buf),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpu::CpuEngine;

    /// The kit passes the reference itself, and catches an engine that is off by one block.
    #[test]
    fn the_kit_passes_the_portable_engine() {
        let engine = CpuEngine::with_aes_impl(AesImpl::Portable, Some(1)).unwrap();
        let checked = check_engine(&engine, 1, Budget::new(5000, 4));
        assert!(checked.jobs > 100, "{checked:?}");
    }

    struct OffByOne(CpuEngine);

    impl Engine for OffByOne {
        fn name(&self) -> String {
            "off-by-one".into()
        }
        fn workers(&self) -> usize {
            1
        }
        fn process(&self, job: &Job<'_>, buf: &mut [u8]) -> Result<(), crate::EngineError> {
            self.0.process(&job.advanced(16), buf)
        }
    }

    #[test]
    #[should_panic(expected = "off-by-one differs from the reference")]
    fn the_kit_catches_a_wrong_engine() {
        let engine = OffByOne(CpuEngine::new(Some(1)).unwrap());
        check_engine(&engine, 2, Budget::new(100, 0));
    }

    /// A CPU engine that says it runs every records job (the CPU engine runs them on every
    /// implementation), optionally one chunk index off.
    struct Records(CpuEngine, u64);

    impl Engine for Records {
        fn name(&self) -> String {
            "records".into()
        }
        fn workers(&self) -> usize {
            1
        }
        fn process(&self, job: &Job<'_>, buf: &mut [u8]) -> Result<(), crate::EngineError> {
            self.0.process(job, buf)
        }
        fn runs_records(&self, _: &crate::RecordsJob<'_>) -> bool {
            true
        }
        fn process_records(
            &self,
            job: &crate::RecordsJob<'_>,
            input: &[u8],
            output: &mut [u8],
        ) -> Result<(), crate::RecordsError> {
            self.0.process_records(&job.advanced(self.1), input, output)
        }
    }

    /// The records part of the kit passes the CPU engine's records jobs (on every key size,
    /// and on the stitched kernel where the CPU has it), and catches one that seals the wrong
    /// chunks (below); an engine that runs none is not asked.
    #[test]
    fn the_kit_checks_records_jobs() {
        let budget = Budget::new(3 * GCM_CHUNK_LEN, 0);
        let engine = Records(CpuEngine::new(Some(2)).unwrap().with_split(0, 4096), 0);
        let checked = records::check_engine_records(&engine, 3, budget);
        assert!(checked.jobs > 100, "{checked:?}");
        let portable = CpuEngine::with_aes_impl(AesImpl::Portable, Some(1)).unwrap();
        assert_eq!(
            records::check_engine_records(&portable, 3, budget),
            Checked::default()
        );
    }

    #[test]
    #[should_panic(expected = "differs from AES-GCM")]
    fn the_kit_catches_a_wrong_records_job() {
        let wrong = Records(CpuEngine::new(Some(1)).unwrap(), 1);
        records::check_engine_records(&wrong, 4, Budget::new(GCM_CHUNK_LEN, 0));
    }
}
