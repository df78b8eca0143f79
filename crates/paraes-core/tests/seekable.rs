//! The body readers of issue 14 against whole-file decryption: `SeekableReader` ranges and
//! seeks equal slices of the plaintext for every mode, key size and length around chunk
//! boundaries; `verify` accepts exactly the containers whole-file decryption accepts (every
//! flipped bit, truncation and extension refused); a range reads only the chunks it needs.

use std::io::{Cursor, Read, Seek, SeekFrom};

use paraes_core::container::{self, RangeError, SeekableReader, UnverifiedHeader, TAG_LEN};
use paraes_core::fuzzing::{decrypt_container, seal_container, unlock, SeedRecipient};
use paraes_core::pipeline::PipelineError;
use paraes_core::seeded::SplitMix64;
use paraes_core::{CpuEngine, KeySize, Mode};
use proptest::prelude::*;

const CHUNK: usize = 4096;

struct Sealed {
    plain: Vec<u8>,
    bytes: Vec<u8>,
}

impl std::fmt::Debug for Sealed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "container of {} plaintext bytes", self.plain.len())
    }
}

fn seal(mode: Mode, size: KeySize, len: usize, seed: u64) -> Sealed {
    let plain = SplitMix64::new(seed).bytes(len);
    let bytes = seal_container(mode, size, CHUNK, &[SeedRecipient::Key], &plain);
    Sealed { plain, bytes }
}

/// The container's keys, opened without the body check (these tests damage the body on purpose
/// to see what the body readers make of it; opening a file checks its first and last chunk).
fn opened(bytes: &[u8]) -> container::Opened {
    UnverifiedHeader::read(&mut &bytes[..])
        .unwrap()
        .open(&unlock(), container::BodyAccess::Stream { first: &[] })
        .unwrap()
}

/// `verify` of the bytes as a stream, which must agree with `verify_file` of them on 1 to 4
/// threads (whose segments of the body are checked apart).
fn verify(bytes: &[u8]) -> Result<u64, PipelineError> {
    let opened = opened(bytes);
    let mut body = &bytes[opened.info().header_len..];
    let engine = CpuEngine::new(Some(1)).unwrap();
    let streamed = container::verify(&opened, &engine, &mut body);
    let dir = std::env::temp_dir().join(format!("paraes-verify-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("{:?}", std::thread::current().id()));
    std::fs::write(&path, bytes).unwrap();
    let file = std::fs::File::open(&path).unwrap();
    for threads in 1..=4 {
        let parallel = container::verify_file(&opened, &engine, &file, threads);
        assert_eq!(
            parallel.as_ref().ok(),
            streamed.as_ref().ok(),
            "{threads} threads: {parallel:?} vs {streamed:?}"
        );
    }
    std::fs::remove_file(&path).unwrap();
    streamed
}

fn sealed_strategy() -> impl Strategy<Value = Sealed> {
    let lens = prop_oneof![
        0..5 * CHUNK + 100,
        (1..5usize, 0..3usize).prop_map(|(n, d)| (n * CHUNK + d).saturating_sub(1)),
    ];
    (
        prop_oneof![Just(Mode::Ctr), Just(Mode::Ecb)],
        prop_oneof![
            Just(KeySize::Aes128),
            Just(KeySize::Aes192),
            Just(KeySize::Aes256)
        ],
        lens,
        any::<u64>(),
    )
        .prop_map(|(mode, size, len, seed)| seal(mode, size, len, seed))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn ranges_equal_slices_of_the_plaintext(sealed in sealed_strategy(), a in any::<prop::sample::Index>(), b in any::<prop::sample::Index>()) {
        let opened = opened(&sealed.bytes);
        let engine = CpuEngine::new(Some(1)).unwrap();
        let mut reader = SeekableReader::new(&opened, &engine, Cursor::new(&sealed.bytes)).unwrap();
        let len = sealed.plain.len();
        prop_assert_eq!(reader.plaintext_len(), len as u64);
        let (a, b) = (a.index(len + 1), b.index(len + 1));
        let (start, end) = (a.min(b), a.max(b));
        let mut out = Vec::new();
        prop_assert_eq!(reader.copy_range(start as u64, end as u64, &mut out).unwrap(), (end - start) as u64);
        prop_assert_eq!(&out[..], &sealed.plain[start..end]);
        // The same through Read + Seek, in small reads.
        reader.seek(SeekFrom::Start(start as u64)).unwrap();
        let mut out = Vec::new();
        let mut piece = [0u8; 1000];
        loop {
            let n = reader.read(&mut piece).unwrap();
            if n == 0 { break; }
            out.extend_from_slice(&piece[..n]);
        }
        prop_assert_eq!(&out[..], &sealed.plain[start..]);
        prop_assert_eq!(reader.seek(SeekFrom::End(0)).unwrap(), len as u64);
    }

    #[test]
    fn verify_agrees_with_whole_file_decryption(sealed in sealed_strategy(), at in any::<prop::sample::Index>(), bit in 0..8u8) {
        prop_assert_eq!(verify(&sealed.bytes).unwrap(), sealed.plain.len() as u64);
        let header_len = opened(&sealed.bytes).info().header_len;
        let at = header_len + at.index(sealed.bytes.len() - header_len);
        let mut flipped = sealed.bytes.clone();
        flipped[at] ^= 1 << bit;
        prop_assert!(decrypt_container(&flipped).is_err());
        prop_assert!(verify(&flipped).is_err(), "a flip at {} was accepted", at);
        for cut in [1, TAG_LEN, CHUNK + TAG_LEN] {
            if let Some(len) = sealed.bytes.len().checked_sub(cut).filter(|&l| l >= header_len) {
                prop_assert!(verify(&sealed.bytes[..len]).is_err(), "cut by {}", cut);
            }
        }
        let mut extended = sealed.bytes.clone();
        extended.extend_from_slice(&[0; 17]);
        prop_assert!(verify(&extended).is_err());
    }
}

#[test]
fn a_range_reads_only_the_chunks_it_needs() {
    let sealed = seal(Mode::Ctr, KeySize::Aes256, 64 * CHUNK + 5, 7);
    let opened = opened(&sealed.bytes);
    let engine = CpuEngine::new(Some(1)).unwrap();
    let mut reader = SeekableReader::new(&opened, &engine, Cursor::new(&sealed.bytes)).unwrap();
    let record = (CHUNK + TAG_LEN) as u64;
    // The last chunk, read to authenticate the length.
    assert_eq!(reader.bytes_read(), 5 + TAG_LEN as u64);
    let mut out = Vec::new();
    let start = 10 * CHUNK as u64 + 100;
    reader
        .copy_range(start, start + CHUNK as u64, &mut out)
        .unwrap();
    assert_eq!(out, &sealed.plain[start as usize..start as usize + CHUNK]);
    assert_eq!(reader.bytes_read(), 5 + TAG_LEN as u64 + 2 * record);
}

#[test]
fn ranges_past_the_end_and_reversed_ranges_are_refused() {
    let sealed = seal(Mode::Ecb, KeySize::Aes128, 3 * CHUNK, 9);
    let opened = opened(&sealed.bytes);
    let engine = CpuEngine::new(Some(1)).unwrap();
    let mut reader = SeekableReader::new(&opened, &engine, Cursor::new(&sealed.bytes)).unwrap();
    let len = 3 * CHUNK as u64;
    let mut out = Vec::new();
    for (start, end) in [(0, len + 1), (len + 1, len + 2), (5, 4)] {
        assert!(matches!(
            reader.copy_range(start, end, &mut out),
            Err(RangeError::OutOfBounds { .. })
        ));
    }
    assert!(out.is_empty());
    assert_eq!(reader.copy_range(len, len, &mut out).unwrap(), 0);
}

#[test]
fn a_tampered_chunk_fails_only_the_ranges_that_touch_it() {
    let sealed = seal(Mode::Ctr, KeySize::Aes128, 4 * CHUNK, 11);
    let header_len = opened(&sealed.bytes).info().header_len;
    let mut bytes = sealed.bytes.clone();
    bytes[header_len + 2 * (CHUNK + TAG_LEN) + 7] ^= 0x40;
    let opened = opened(&bytes);
    let engine = CpuEngine::new(Some(1)).unwrap();
    let mut reader = SeekableReader::new(&opened, &engine, Cursor::new(&bytes)).unwrap();
    let mut out = Vec::new();
    reader.copy_range(0, 2 * CHUNK as u64, &mut out).unwrap();
    assert_eq!(out, &sealed.plain[..2 * CHUNK]);
    let mut out = Vec::new();
    let err = reader
        .copy_range(2 * CHUNK as u64 - 1, 2 * CHUNK as u64 + 1, &mut out)
        .unwrap_err();
    assert!(matches!(
        err,
        RangeError::Stream(PipelineError::Tampered(2))
    ));
    // Only whole authenticated chunks went out before the damage.
    assert_eq!(out, &sealed.plain[2 * CHUNK - 1..2 * CHUNK]);
    // A damaged last chunk fails the reader at once: the length is not authentic.
    let mut bytes = sealed.bytes.clone();
    let last = bytes.len() - 3;
    bytes[last] ^= 1;
    let opened2 = self::opened(&bytes);
    assert!(SeekableReader::new(&opened2, &engine, Cursor::new(&bytes)).is_err());
}
