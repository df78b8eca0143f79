//! Hostile input against the container decryptor (issue 8): every single-bit flip, every
//! truncation and every chunk reorder of a random container is refused and releases nothing
//! but whole chunks verified before the damage; random garbage never panics; headers asking for
//! absurd resources are refused by `Header::read`, before anything is allocated for them, even
//! when their header tag is authentic. The decrypt paths are those of the fuzz targets
//! (`paraes_core::fuzzing`).

use std::ops::Range;

use paraes_core::container::{ContainerError, UnverifiedHeader as Header, MAGIC, TAG_LEN};
use paraes_core::fuzzing::{
    all_paths, cheap_argon2_params, decrypt_container, decrypt_container_into, seal_container,
    SeedRecipient, FIXED_KEY,
};
use paraes_core::seeded::SplitMix64;
use paraes_core::{KeySize, Mode};
use proptest::prelude::*;

const CHUNK: usize = 4096;
const RECORD: usize = CHUNK + TAG_LEN;

/// A container and what it holds.
struct Sealed {
    name: String,
    plain: Vec<u8>,
    bytes: Vec<u8>,
    header_len: usize,
    /// The idle stanza slot: not authenticated by design (a rekey writes it while the other
    /// slot keeps the file open), so damage there must change nothing.
    idle: Range<usize>,
    /// End of the used part of the active slot (zero padding follows).
    used: usize,
}

fn plaintext(len: usize, seed: u64) -> Vec<u8> {
    SplitMix64::new(seed).bytes(len)
}

fn seal(mode: Mode, size: KeySize, passphrase: bool, len: usize, seed: u64) -> Sealed {
    let plain = plaintext(len, seed);
    let recipient = if passphrase {
        SeedRecipient::Passphrase(cheap_argon2_params())
    } else {
        SeedRecipient::Key
    };
    let bytes = seal_container(mode, size, CHUNK, &[recipient], &plain);
    let header_len = Header::read(&mut &bytes[..]).unwrap().info().header_len;
    let idle = (header_len + 64) / 2..header_len;
    let used = bytes[..idle.start].iter().rposition(|&b| b != 0).unwrap() + 1;
    assert_eq!(
        decrypt_container(&bytes).as_deref(),
        Ok(&plain[..]),
        "round trip"
    );
    Sealed {
        name: format!("{mode:?} {size:?} passphrase {passphrase} len {len} seed {seed}"),
        plain,
        bytes,
        header_len,
        idle,
        used,
    }
}

impl std::fmt::Debug for Sealed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.name)
    }
}

impl Sealed {
    /// Byte ranges of the chunk records (ciphertext + tag) after the header.
    fn records(&self) -> Vec<Range<usize>> {
        (self.header_len..self.bytes.len())
            .step_by(RECORD)
            .map(|start| start..(start + RECORD).min(self.bytes.len()))
            .collect()
    }

    /// The header followed by the records `order` (indexes into [`Sealed::records`]).
    fn reordered(&self, order: &[usize]) -> Vec<u8> {
        let records = self.records();
        let mut out = self.bytes[..self.header_len].to_vec();
        for &i in order {
            out.extend_from_slice(&self.bytes[records[i].clone()]);
        }
        out
    }

    /// Record index of byte `at` (0 for the header).
    fn record_of(&self, at: usize) -> usize {
        at.saturating_sub(self.header_len) / RECORD
    }

    /// Decrypting `bytes` must fail and release at most the `intact` chunks before the damage,
    /// and only as they are (a prefix of the plaintext).
    /// A flip of byte `at`: refused, or (in the idle slot) without effect.
    fn assert_flip_handled(&self, bytes: &[u8], at: usize, what: &str) {
        if self.idle.contains(&at) {
            let opened = decrypt_container(bytes);
            assert!(
                opened.as_deref() == Ok(&self.plain[..]),
                "{}: {what}: idle-slot damage changed the result",
                self.name
            );
        } else {
            self.assert_refused(bytes, self.record_of(at), what);
        }
    }

    fn assert_refused(&self, bytes: &[u8], intact: usize, what: &str) {
        let mut out = Vec::new();
        let result = decrypt_container_into(bytes, &mut out);
        let what = format!("{}: {what}", self.name);
        assert!(result.is_err(), "{what}: accepted");
        assert!(
            out.len() <= intact * CHUNK,
            "{what}: released {} bytes, only {intact} chunks verified before the damage",
            out.len()
        );
        assert!(
            self.plain.starts_with(&out),
            "{what}: released bytes that are not the plaintext"
        );
    }
}

fn mode_strategy() -> impl Strategy<Value = Mode> {
    prop_oneof![Just(Mode::Ctr), Just(Mode::Ecb)]
}

fn key_size_strategy() -> impl Strategy<Value = KeySize> {
    prop_oneof![
        Just(KeySize::Aes128),
        Just(KeySize::Aes192),
        Just(KeySize::Aes256)
    ]
}

/// A random container: mode, key size, raw key or passphrase, 0 ..= ~5 chunks of 4 KiB.
fn sealed_strategy() -> impl Strategy<Value = Sealed> {
    (
        mode_strategy(),
        key_size_strategy(),
        any::<bool>(),
        0..5 * CHUNK + 100,
        any::<u64>(),
    )
        .prop_map(|(mode, size, pass, len, seed)| seal(mode, size, pass, len, seed))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn any_single_bit_flip_is_refused(sealed in sealed_strategy(), at in any::<prop::sample::Index>(), bit in 0..8u8) {
        let at = at.index(sealed.bytes.len());
        let mut bytes = sealed.bytes.clone();
        bytes[at] ^= 1 << bit;
        sealed.assert_flip_handled(&bytes, at, &format!("flip of byte {at} bit {bit}"));
    }

    #[test]
    fn any_truncation_is_refused(sealed in sealed_strategy(), cut in any::<prop::sample::Index>()) {
        let len = cut.index(sealed.bytes.len());
        sealed.assert_refused(&sealed.bytes[..len], sealed.record_of(len), &format!("cut to {len}"));
    }

    #[test]
    fn any_chunk_swap_duplication_or_drop_is_refused(
        sealed in sealed_strategy(),
        a in any::<prop::sample::Index>(),
        b in any::<prop::sample::Index>(),
        kind in 0..3u8,
    ) {
        let n = sealed.records().len();
        let (a, b) = (a.index(n), b.index(n + 1));
        let mut order: Vec<usize> = (0..n).collect();
        match kind {
            0 => {
                prop_assume!(n >= 2 && a != b.min(n - 1));
                order.swap(a, b.min(n - 1));
            }
            1 => order.insert(b, a),
            _ => {
                order.remove(a);
            }
        }
        let intact = order.iter().zip(0..).take_while(|(i, k)| *i == k).count();
        let what = format!("records {order:?} of {n}");
        sealed.assert_refused(&sealed.reordered(&order), intact, &what);
    }

    #[test]
    fn random_garbage_never_panics(data in prop::collection::vec(any::<u8>(), 0..64 << 10)) {
        all_paths(&data);
    }

    #[test]
    fn garbage_after_a_valid_header_is_refused(
        mode in mode_strategy(),
        size in key_size_strategy(),
        pass in any::<bool>(),
        garbage in prop::collection::vec(any::<u8>(), 0..3 * RECORD),
    ) {
        let sealed = seal(mode, size, pass, 0, 1);
        let mut bytes = sealed.bytes[..sealed.header_len].to_vec();
        bytes.extend_from_slice(&garbage);
        sealed.assert_refused(&bytes, 0, "garbage body");
        all_paths(&bytes);
    }

    #[test]
    fn garbage_headers_never_panic(fields in prop::collection::vec(any::<u8>(), 0..200)) {
        for version in [1, 2] {
            let mut data = MAGIC.to_vec();
            data.push(version);
            data.extend_from_slice(&fields);
            all_paths(&data);
        }
    }
}

/// Every bit of small containers (every mode, key size and key source), exhaustively.
#[test]
fn every_bit_flip_of_small_containers_is_refused() {
    for mode in [Mode::Ctr, Mode::Ecb] {
        for size in [KeySize::Aes128, KeySize::Aes192, KeySize::Aes256] {
            for pass in [false, true] {
                let sealed = seal(mode, size, pass, 100, 7);
                // Every byte but the zero padding and the idle slot, which are sampled.
                let every = (0..sealed.used).chain(sealed.header_len..sealed.bytes.len());
                let sampled = (sealed.used..sealed.header_len).step_by(61);
                for at in every.chain(sampled) {
                    for bit in 0..8 {
                        let mut bytes = sealed.bytes.clone();
                        bytes[at] ^= 1 << bit;
                        let what = format!("{mode:?} {size:?} pass {pass}: byte {at} bit {bit}");
                        sealed.assert_flip_handled(&bytes, at, &what);
                    }
                }
            }
        }
    }
}

/// Positions near the structure of `sealed` (the header, every record boundary and tag, the
/// end) and every `stride`-th byte in between.
fn positions(sealed: &Sealed, stride: usize) -> Vec<usize> {
    let len = sealed.bytes.len();
    let mut at: Vec<usize> = (0..sealed.header_len + 40).collect();
    for record in sealed.records() {
        let near = |p: usize| p.saturating_sub(24)..(p + 24).min(len + 1);
        at.extend(near(record.start));
        at.extend(near(record.end - TAG_LEN));
        at.extend(near(record.end));
    }
    at.extend((0..len).step_by(stride));
    at.retain(|&p| p < len);
    at.sort_unstable();
    at.dedup();
    at
}

/// A three-chunk container: every byte of its header, around every tag and chunk boundary and
/// every 7th byte elsewhere, flipped or cut there.
#[test]
fn byte_flips_and_truncations_of_a_three_chunk_container_are_refused() {
    for mode in [Mode::Ctr, Mode::Ecb] {
        let sealed = seal(mode, KeySize::Aes256, false, 2 * CHUNK + 1000, 3);
        assert_eq!(sealed.records().len(), 3);
        for at in positions(&sealed, 7) {
            let mut bytes = sealed.bytes.clone();
            bytes[at] ^= 1 << (at % 8);
            sealed.assert_flip_handled(&bytes, at, &format!("byte {at} flipped"));
            let what = format!("cut to {at}");
            sealed.assert_refused(&sealed.bytes[..at], sealed.record_of(at), &what);
        }
    }
}

/// Appended bytes of any length are refused (nothing may follow the last chunk).
#[test]
fn appended_bytes_are_refused() {
    let sealed = seal(Mode::Ctr, KeySize::Aes128, false, CHUNK + 5, 9);
    for extra in [1, 15, 16, 17, TAG_LEN, RECORD - 1, RECORD, RECORD + 1] {
        let mut bytes = sealed.bytes.clone();
        bytes.extend(std::iter::repeat_n(0xa5, extra));
        sealed.assert_refused(&bytes, 1, &format!("{extra} bytes appended"));
    }
}

const MAC_KEY_CONTEXT: &str = "paraes 2026-11 container v1 authentication key";

/// A header of `fields` with an authentic tag under the fixed key of `key_len` bytes, so a
/// refusal cannot come from the tag: it must come from the limits.
fn authentic(fields: &[u8], key_len: usize) -> Vec<u8> {
    let mac = blake3::derive_key(MAC_KEY_CONTEXT, &FIXED_KEY[..key_len]);
    let mut out = fields.to_vec();
    out.extend_from_slice(blake3::keyed_hash(&mac, fields).as_bytes());
    out
}

fn fields(mode: u8, key_size: u8, source: u8, chunk: u32, argon2: Option<[u32; 3]>) -> Vec<u8> {
    let mut out = MAGIC.to_vec();
    out.extend_from_slice(&[1, mode, key_size, source]);
    out.extend_from_slice(&chunk.to_be_bytes());
    out.extend_from_slice(&[0x5a; 16]);
    if let Some([memory, passes, lanes]) = argon2 {
        out.extend_from_slice(&[0x33; 16]);
        for word in [memory, passes, lanes] {
            out.extend_from_slice(&word.to_be_bytes());
        }
    }
    out
}

/// Headers asking for absurd resources are refused by `Header::read` itself (it reads into
/// fixed-size arrays and allocates nothing for the fields), even with an authentic tag, so no
/// chunk buffer and no Argon2id memory is ever allocated for them. A chunk size of 2^40 cannot
/// be written at all (the field has 32 bits): its largest value, 4 GiB - 1, stands for it.
#[test]
fn absurd_headers_are_refused_by_the_header_reader() {
    let good = authentic(&fields(1, 16, 0, CHUNK as u32, None), 16);
    assert!(
        Header::read(&mut &good[..]).is_ok(),
        "the baseline is valid"
    );
    let ok_argon = Some([64, 1, 1]);
    let absurd: Vec<(&str, Vec<u8>)> = vec![
        ("chunk 4 GiB - 1", fields(1, 16, 0, u32::MAX, None)),
        ("chunk 2 GiB", fields(1, 16, 0, 1 << 31, None)),
        ("chunk 64 MiB + 16", fields(1, 16, 0, (64 << 20) + 16, None)),
        ("chunk 0", fields(1, 16, 0, 0, None)),
        ("chunk 4080", fields(1, 16, 0, 4080, None)),
        ("chunk 4100", fields(1, 16, 0, 4100, None)),
        ("key size 99", fields(1, 99, 0, CHUNK as u32, None)),
        ("key size 0", fields(1, 0, 0, CHUNK as u32, None)),
        ("key size 255", fields(1, 255, 0, CHUNK as u32, None)),
        ("mode 0", fields(0, 16, 0, CHUNK as u32, None)),
        ("mode 3", fields(3, 16, 0, CHUNK as u32, None)),
        ("key source 2", fields(1, 16, 2, CHUNK as u32, ok_argon)),
        (
            "Argon2 4 TiB",
            fields(1, 16, 1, CHUNK as u32, Some([u32::MAX, 1, 1])),
        ),
        (
            "Argon2 1 TiB",
            fields(1, 16, 1, CHUNK as u32, Some([1 << 30, 1, 1])),
        ),
        (
            "Argon2 1 GiB + 1 KiB",
            fields(1, 16, 1, CHUNK as u32, Some([(1 << 20) + 1, 1, 1])),
        ),
        (
            "Argon2 < 8 KiB/lane",
            fields(1, 16, 1, CHUNK as u32, Some([8 * 4 - 1, 1, 4])),
        ),
        (
            "Argon2 0 passes",
            fields(1, 16, 1, CHUNK as u32, Some([64, 0, 1])),
        ),
        (
            "Argon2 65 passes",
            fields(1, 16, 1, CHUNK as u32, Some([64, 65, 1])),
        ),
        (
            "Argon2 2^32-1 passes",
            fields(1, 16, 1, CHUNK as u32, Some([64, u32::MAX, 1])),
        ),
        (
            "Argon2 0 lanes",
            fields(1, 16, 1, CHUNK as u32, Some([64, 1, 0])),
        ),
        (
            "Argon2 65 lanes",
            fields(1, 16, 1, CHUNK as u32, Some([1 << 10, 1, 65])),
        ),
        (
            "Argon2 2^32-1 lanes",
            fields(1, 16, 1, CHUNK as u32, Some([1 << 20, 1, u32::MAX])),
        ),
    ];
    for (what, fields) in absurd {
        let bytes = authentic(&fields, 16);
        match Header::read(&mut &bytes[..]) {
            Err(ContainerError::BadHeader(message)) => {
                assert!(!message.is_empty(), "{what}: says why")
            }
            other => panic!("{what}: not refused by Header::read: {other:?}"),
        }
        assert!(decrypt_container(&bytes).is_err(), "{what}");
    }
    let mut version_4 = fields(1, 16, 0, CHUNK as u32, None);
    version_4[8] = 4;
    assert!(matches!(
        Header::read(&mut &authentic(&version_4, 16)[..]),
        Err(ContainerError::UnsupportedVersion(4))
    ));
}

/// `Argon2Params::derive_key` refuses absurd parameters itself too (before Argon2 allocates).
#[test]
fn absurd_argon2_parameters_are_refused_by_the_key_derivation() {
    let mut params = cheap_argon2_params();
    params.memory_kib = u32::MAX;
    assert!(params.derive_key(b"x", KeySize::Aes256).is_err());
    let mut params = cheap_argon2_params();
    params.iterations = u32::MAX;
    assert!(params.derive_key(b"x", KeySize::Aes256).is_err());
    let mut params = cheap_argon2_params();
    params.lanes = u32::MAX;
    assert!(params.derive_key(b"x", KeySize::Aes256).is_err());
}

/// docs/FORMAT.md documents every limit the reader enforces.
#[test]
fn format_md_documents_the_limits() {
    let format =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/FORMAT.md"))
            .expect("docs/FORMAT.md");
    let limits = format
        .split("## Limits a reader enforces")
        .nth(1)
        .expect("a limits section");
    for needle in [
        "version",
        "key size",
        "4 KiB ..= 64 MiB",
        "8 KiB per lane ..= 1 GiB",
        "passes | 1 ..= 64",
        "lanes | 1 ..= 64",
    ] {
        assert!(
            limits.contains(needle),
            "FORMAT.md's limits lack {needle:?}"
        );
    }
}
