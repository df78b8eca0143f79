//! The conformance kit's records jobs ([`RecordsJob`]): an engine that says it runs one
//! ([`Engine::runs_records`]) must seal and open whole GCM chunk records as RustCrypto's
//! `aes-gcm` seals and opens each chunk, at chunk edges, from any first index, out of place and
//! in place, name the lowest record whose tag fails, and refuse buffers not laid out as records. [`crate::testing::check_engine`]
//! runs it for every engine; an engine that runs no records job passes it untouched.

use aes::cipher::{BlockCipher, BlockEncrypt, KeyInit};
use aes_gcm::aead::AeadInPlace;

use super::{Budget, Checked};
use crate::aes::AesImpl;
use crate::engine::{
    Direction, Engine, RecordsError, RecordsJob, GCM_CHUNK_LEN, GCM_RECORD_LEN, GCM_TAG_LEN,
};
use crate::key::{Key, KeySize};
use crate::seeded::SplitMix64;

/// Checks `engine`'s records jobs, where it runs them, on the shapes `seed` and `budget`
/// pick, and panics with the first difference; returns what was covered (nothing for an
/// engine that runs no records job).
pub fn check_engine_records(engine: &dyn Engine, seed: u64, budget: Budget) -> Checked {
    let mut rng = SplitMix64::new(seed);
    let mut checked = Checked::default();
    let g = GCM_CHUNK_LEN;
    // (plaintext bytes, chunks): no chunk, an empty one, edges of one and of two, and a run.
    let most = (budget.max_len / g).max(2);
    let shapes = [
        (0, 0),
        (0, 1),
        (1, 1),
        (g - 1, 1),
        (g, 1),
        (g, 2),
        (g + 17, 2),
        (most * g - 3, most),
        (most * g, most + 1),
    ];
    for size in KeySize::ALL {
        let key = Key::new(&rng.bytes(size.bytes())).expect("a key size's length");
        let expanded = key.expand();
        let mut hash_key = [0u8; 16];
        AesImpl::Portable.encrypt_blocks(&expanded, &mut hash_key);
        let base_nonce: [u8; 12] = rng.array();
        for first in [0, 5, (1 << 32) - 1, (1 << 38) - 3] {
            let seal = RecordsJob::new(Direction::Encrypt, &expanded, &hash_key, base_nonce, first);
            let open = RecordsJob {
                direction: Direction::Decrypt,
                ..seal
            };
            if !engine.runs_records(&seal) || !engine.runs_records(&open) {
                continue;
            }
            for &(len, chunks) in &shapes {
                let what = |step: &str| {
                    format!(
                        "{}: records job {step}: AES-{} first index {first}, {len} bytes in {chunks} chunks",
                        engine.name(),
                        size.bits()
                    )
                };
                let plain = rng.bytes(len);
                let expected = oracle_seal(&key, &seal, &plain, chunks);
                let mut sealed = rng.bytes(expected.len());
                if let Err(e) = engine.process_records(&seal, &plain, &mut sealed) {
                    panic!("{} failed: {e}", what("seal"));
                }
                assert!(sealed == expected, "{} differs from AES-GCM", what("seal"));
                let mut opened = rng.bytes(len);
                if let Err(e) = engine.process_records(&open, &sealed, &mut opened) {
                    panic!("{} failed: {e}", what("open"));
                }
                assert!(
                    opened == plain,
                    "{} differs from the plaintext",
                    what("open")
                );
                checked.jobs += 2;
                checked.bytes += 2 * len as u64;
                check_in_place(engine, (&seal, &open), (&plain, &sealed), &what);
                checked.jobs += 2;
                checked.bytes += 2 * len as u64;
                if chunks >= 2 {
                    // A changed byte in the last record, and in the first and the last: the
                    // lowest is named.
                    for bad in [vec![chunks - 1], vec![0, chunks - 1]] {
                        let mut tampered = sealed.clone();
                        for &k in &bad {
                            let at = (k * GCM_RECORD_LEN + 3).min(tampered.len() - 1);
                            tampered[at] ^= 0x10;
                        }
                        let mut out = vec![0u8; len];
                        let answer = engine.process_records(&open, &tampered, &mut out);
                        let lowest = first + bad[0] as u64;
                        assert!(
                            matches!(answer, Err(RecordsError::Tampered(i)) if i == lowest),
                            "{} of records {bad:?} changed: {answer:?}, not chunk {lowest}",
                            what("open")
                        );
                        let answer = engine.process_records_in_place(&open, &mut tampered);
                        assert!(
                            matches!(answer, Err(RecordsError::Tampered(i)) if i == lowest),
                            "{} of records {bad:?} changed: {answer:?}, not chunk {lowest}",
                            what("open in place")
                        );
                        checked.jobs += 2;
                    }
                }
            }
            // Buffers that are not records, or not the records' plaintext, are refused.
            let r = GCM_RECORD_LEN;
            for (plain_len, records_len) in [(g, r + GCM_TAG_LEN - 1), (g + 1, r), (0, r)] {
                let mut out = vec![0u8; records_len];
                let answer = engine.process_records(&seal, &vec![0; plain_len], &mut out);
                assert!(
                    matches!(answer, Err(RecordsError::Engine(_))),
                    "{}: sealing {plain_len} bytes into {records_len} was not refused: {answer:?}",
                    engine.name()
                );
                let mut out = vec![0u8; plain_len];
                let answer = engine.process_records(&open, &vec![0; records_len], &mut out);
                assert!(
                    matches!(answer, Err(RecordsError::Engine(_))),
                    "{}: opening {records_len} bytes into {plain_len} was not refused: {answer:?}",
                    engine.name()
                );
            }
            // In place, a buffer whose last record has no room for its tag is refused, and left
            // as it was.
            for records_len in [GCM_TAG_LEN - 1, r + GCM_TAG_LEN - 1] {
                for job in [&seal, &open] {
                    let before = rng.bytes(records_len);
                    let mut buf = before.clone();
                    let answer = engine.process_records_in_place(job, &mut buf);
                    assert!(
                        matches!(answer, Err(RecordsError::Engine(_))) && buf == before,
                        "{}: {:?} in place of {records_len} bytes was not refused: {answer:?}",
                        engine.name(),
                        job.direction
                    );
                }
            }
        }
    }
    checked
}

/// The same jobs in place ([`Engine::process_records_in_place`], on every engine that runs
/// records: its own or the seam's default): `plain` put in the data slots of a buffer of
/// `sealed`'s length seals to `sealed`, and `sealed` opens to `plain` in its data slots.
fn check_in_place(
    engine: &dyn Engine,
    (seal, open): (&RecordsJob<'_>, &RecordsJob<'_>),
    (plain, sealed): (&[u8], &[u8]),
    what: &dyn Fn(&str) -> String,
) {
    let mut buf = vec![0xa5u8; sealed.len()];
    RecordsJob::scatter_data(plain, &mut buf);
    if let Err(e) = engine.process_records_in_place(seal, &mut buf) {
        panic!("{} failed: {e}", what("seal in place"));
    }
    assert!(
        buf == sealed,
        "{} differs from AES-GCM",
        what("seal in place")
    );
    if let Err(e) = engine.process_records_in_place(open, &mut buf) {
        panic!("{} failed: {e}", what("open in place"));
    }
    assert!(
        RecordsJob::gather_data(&buf) == plain,
        "{} differs from the plaintext",
        what("open in place")
    );
}

/// The records of `chunks` chunks whose plaintext is `plain`, each sealed by RustCrypto's
/// AES-GCM under its nonce, with no associated data.
fn oracle_seal(key: &Key, job: &RecordsJob<'_>, plain: &[u8], chunks: usize) -> Vec<u8> {
    fn seal<C>(key: &[u8], nonce: &[u8; 12], data: &mut [u8]) -> [u8; 16]
    where
        C: BlockCipher<BlockSize = aes::cipher::consts::U16> + BlockEncrypt + KeyInit,
    {
        let cipher = aes_gcm::AesGcm::<C, aes::cipher::consts::U12>::new_from_slice(key)
            .expect("a key size's length");
        cipher
            .encrypt_in_place_detached(nonce.into(), &[], data)
            .expect("a short message")
            .into()
    }
    let mut out = Vec::new();
    for k in 0..chunks {
        let from = (k * GCM_CHUNK_LEN).min(plain.len());
        let to = ((k + 1) * GCM_CHUNK_LEN).min(plain.len());
        let start = out.len();
        out.extend_from_slice(&plain[from..to]);
        let nonce = job.nonce(k as u64);
        let data = &mut out[start..];
        let tag = match key.size() {
            KeySize::Aes128 => seal::<aes::Aes128>(key.as_bytes(), &nonce, data),
            KeySize::Aes192 => seal::<aes::Aes192>(key.as_bytes(), &nonce, data),
            KeySize::Aes256 => seal::<aes::Aes256>(key.as_bytes(), &nonce, data),
        };
        out.extend_from_slice(&tag);
    }
    out
}
