//! Streams that read badly, sealed in place (from a hostile review of the reader into the data
//! slots): random read sizes, `Interrupted` reads, vectored reads that stop mid-slot or fill one
//! slot only, recycled buffers of any length and content, a hard error mid-stream, and every
//! length around the first chunks' and windows' edges.
use super::*;
use crate::engine::GCM_TAG_LEN;
use crate::pipeline::ChunkReader;
use proptest::prelude::*;
use std::io;

/// Non-periodic bytes (the suite's `data` repeats every 1792 bytes).
fn noise(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 24) as u8
        })
        .collect()
}

/// A reader that follows a pattern of read sizes: 0 is an `Interrupted` error, `usize::MAX`
/// a hard error (if `fail`), otherwise at most that many bytes; vectored reads either use
/// the default (first non-empty slice) or spread over many slices and stop mid-slice.
struct Nasty<'a> {
    data: &'a [u8],
    pattern: Vec<usize>,
    step: usize,
    spread: bool,
    fail_after: Option<usize>,
    given: usize,
}
impl Nasty<'_> {
    fn next(&mut self) -> io::Result<usize> {
        if let Some(f) = self.fail_after {
            if self.given >= f {
                return Err(io::Error::other("boom"));
            }
        }
        let p = self.pattern[self.step % self.pattern.len()];
        self.step += 1;
        if p == 0 {
            return Err(io::ErrorKind::Interrupted.into());
        }
        let mut n = p.min(self.data.len());
        if let Some(f) = self.fail_after {
            n = n.min(f - self.given);
        }
        Ok(n)
    }
}
impl Read for Nasty<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.next()?.min(buf.len());
        buf[..n].copy_from_slice(&self.data[..n]);
        self.data = &self.data[n..];
        self.given += n;
        Ok(n)
    }
    fn read_vectored(&mut self, bufs: &mut [io::IoSliceMut<'_>]) -> io::Result<usize> {
        if !self.spread {
            let buf = bufs.iter_mut().find(|b| !b.is_empty());
            return match buf {
                Some(b) => self.read(b),
                None => self.read(&mut []),
            };
        }
        let mut n = self.next()?;
        let mut done = 0;
        for b in bufs.iter_mut() {
            let k = n.min(b.len());
            b[..k].copy_from_slice(&self.data[..k]);
            self.data = &self.data[k..];
            n -= k;
            done += k;
            if n == 0 {
                break;
            }
        }
        self.given += done;
        Ok(done)
    }
}

fn pattern_strategy() -> impl Strategy<Value = Vec<usize>> {
    let g = GCM_CHUNK_LEN;
    prop::collection::vec(
        prop_oneof![
            Just(0usize),
            1usize..40,
            Just(g - 1),
            Just(g),
            Just(g + 1),
            Just(g + GCM_TAG_LEN),
            1usize..(5 * g),
            Just(usize::MAX / 2),
        ],
        1..12,
    )
    .prop_map(|mut v| {
        v.push(1 + v.len()); // never only Interrupted
        v
    })
}

fn len_strategy() -> impl Strategy<Value = usize> {
    let g = GCM_CHUNK_LEN;
    prop_oneof![
        0usize..3,
        (0usize..10, 0usize..3).prop_map(move |(k, d)| (k * g + d).saturating_sub(1)),
        (0usize..10, 0usize..3).prop_map(move |(k, d)| k * g + d),
        0usize..(12 * g),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Sealing a nasty stream in place on random workers and windows gives the bytes of the
    /// in-order run; they open back to the input.
    #[test]
    fn nasty_streams_seal_to_the_in_order_bytes(
        len in len_strategy(),
        pattern in pattern_strategy(),
        spread in any::<bool>(),
        threads in 1usize..4,
        window_k in 1usize..5,
        window_extra in 0usize..3,
        batch_k in 1usize..3,
        to_file in any::<bool>(),
        seed in any::<u64>(),
    ) {
        let g = GCM_CHUNK_LEN;
        let cipher = message_cipher();
        let engine = leak(CpuEngine::new(Some(1)).unwrap());
        let enc = StreamSpec::message(engine, Direction::Encrypt, cipher, batch_k * g);
        let dec = StreamSpec::message(engine, Direction::Decrypt, cipher, batch_k * g);
        prop_assert!(enc.runs_records_in_place());
        let plain = noise(len, seed);
        let expected = run_spec(&enc, &plain).unwrap();
        let mut input = Nasty { data: &plain, pattern, step: 0, spread, fail_after: None, given: 0 };
        let window = window_k * g + window_extra * 1000;
        let workers = Workers { threads, window };
        let out = if to_file {
            let file = file_with(OUTPUT_AT, &[]);
            let ran = run_parallel(&enc, Source::Stream(&mut input), Sink::At { file: &file, at: OUTPUT_AT as u64, take_turns: false }, workers, &|_| {}).unwrap();
            prop_assert_eq!(ran.read, len as u64);
            prop_assert_eq!(ran.written, expected.len() as u64);
            let mut all = Vec::new();
            (&file).seek(SeekFrom::Start(0)).unwrap();
            (&file).read_to_end(&mut all).unwrap();
            all[OUTPUT_AT..].to_vec()
        } else {
            let mut out = Vec::new();
            let ran = run_parallel(&enc, Source::Stream(&mut input), Sink::Stream(&mut out), workers, &|_| {}).unwrap();
            prop_assert_eq!(ran.read, len as u64);
            prop_assert_eq!(ran.written, expected.len() as u64);
            out
        };
        prop_assert!(out == expected, "len {} window {} threads {}", len, window, threads);
        prop_assert!(run_spec(&dec, &out).unwrap() == plain);
    }

    /// The slots reader, fed recycled buffers of any length and garbage content, cuts as the
    /// back-to-back reader.
    #[test]
    fn slots_reader_with_garbage_buffers(
        len in len_strategy(),
        pattern in pattern_strategy(),
        spread in any::<bool>(),
        batch_k in 1usize..4,
        buf_lens in prop::collection::vec(prop_oneof![Just(0usize), 0usize..200_000, Just(GCM_RECORD_LEN), Just(GCM_RECORD_LEN + 16), Just(3 * GCM_RECORD_LEN - 1)], 1..8),
        seed in any::<u64>(),
    ) {
        let g = GCM_CHUNK_LEN;
        let cipher = message_cipher();
        let engine = leak(CpuEngine::new(Some(1)).unwrap());
        let spec = StreamSpec::message(engine, Direction::Encrypt, cipher, batch_k * g);
        let plain = noise(len, seed);
        let mut slice = &plain[..];
        let mut expected = Vec::new();
        let mut reader = ChunkReader::new(&spec, &mut slice);
        while let Some(chunk) = reader.next_chunk(Vec::new()).unwrap() {
            expected.push(chunk);
        }
        let mut input = Nasty { data: &plain, pattern, step: 0, spread, fail_after: None, given: 0 };
        let mut reader = ChunkReader::new(&spec, &mut input).into_slots();
        for (k, want) in expected.iter().enumerate() {
            let buf = vec![0xA5u8; buf_lens[k % buf_lens.len()]];
            let chunk = reader.next_chunk(buf).unwrap().unwrap();
            prop_assert_eq!((chunk.index, chunk.last), (want.index, want.last));
            let full = want.data.len() == batch_k * g && !want.last;
            let sealed = crate::pipeline::sealed_len(want.data.len(), !full).unwrap();
            prop_assert_eq!(chunk.data.len(), sealed);
            prop_assert!(RecordsJob::gather_data(&chunk.data) == want.data);
        }
        prop_assert!(reader.next_chunk(vec![1; 7]).unwrap().is_none());
    }

    /// A hard read error mid-stream fails the run; what a stream got is a prefix of the
    /// sealed bytes that never includes the last record.
    #[test]
    fn a_read_error_mid_stream_fails_and_seals_no_end(
        len in 1usize..(10 * GCM_CHUNK_LEN),
        cut in 0.0f64..1.0,
        pattern in pattern_strategy(),
        spread in any::<bool>(),
        threads in 1usize..4,
        window_k in 1usize..4,
        seed in any::<u64>(),
    ) {
        let g = GCM_CHUNK_LEN;
        let cipher = message_cipher();
        let engine = leak(CpuEngine::new(Some(1)).unwrap());
        let enc = StreamSpec::message(engine, Direction::Encrypt, cipher, g);
        let dec = StreamSpec::message(engine, Direction::Decrypt, cipher, g);
        let plain = noise(len, seed);
        let expected = run_spec(&enc, &plain).unwrap();
        let fail = ((len as f64) * cut) as usize;
        let mut input = Nasty { data: &plain, pattern, step: 0, spread, fail_after: Some(fail), given: 0 };
        let mut out = Vec::new();
        let ran = run_parallel(&enc, Source::Stream(&mut input), Sink::Stream(&mut out), Workers { threads, window: window_k * g }, &|_| {});
        prop_assert!(ran.is_err());
        prop_assert!(out.len() < expected.len());
        prop_assert!(out[..] == expected[..out.len()]);
        prop_assert!(out.len() % GCM_RECORD_LEN == 0);
        prop_assert!(run_spec(&dec, &out).is_err());
    }
}

/// Exhaustive lengths around the first chunks and window edges with single-byte-ish reads
/// and interruptions, 1..3 workers.
#[test]
fn every_length_around_edges() {
    let g = GCM_CHUNK_LEN;
    let cipher = message_cipher();
    let engine = leak(CpuEngine::new(Some(1)).unwrap());
    let enc = StreamSpec::message(engine, Direction::Encrypt, cipher, g);
    let mut lens = vec![];
    for k in 0..=5 {
        for d in 0..=17 {
            lens.push((k * g + d).saturating_sub(8));
        }
    }
    lens.sort();
    lens.dedup();
    for &len in &lens {
        let plain = noise(len, len as u64);
        let expected = run_spec(&enc, &plain).unwrap();
        for (pattern, spread) in [
            (vec![0, 3, g - 2, 0, 5], true),
            (vec![7, 0, g + 9], false),
            (vec![usize::MAX / 2], true),
        ] {
            for threads in 1..=3 {
                for window in [g, 2 * g, 3 * g] {
                    let mut input = Nasty {
                        data: &plain,
                        pattern: pattern.clone(),
                        step: 0,
                        spread,
                        fail_after: None,
                        given: 0,
                    };
                    let mut out = Vec::new();
                    run_parallel(
                        &enc,
                        Source::Stream(&mut input),
                        Sink::Stream(&mut out),
                        Workers { threads, window },
                        &|_| {},
                    )
                    .unwrap();
                    assert!(
                        out == expected,
                        "len {len} threads {threads} window {window} {pattern:?}"
                    );
                }
            }
        }
    }
}

/// A batch that is not whole GCM chunks cannot be read into slots (a buffer of whole records
/// could not grow to hold it, and the stream would end short): refused with a panic in every
/// build. [`StreamSpec::check`] refuses such a stream before any run.
#[test]
#[should_panic(expected = "not whole GCM chunks")]
fn a_batch_not_whole_chunks_is_not_read_into_slots() {
    let cipher = message_cipher();
    let engine = leak(CpuEngine::new(Some(1)).unwrap());
    let spec = StreamSpec::message(engine, Direction::Encrypt, cipher, 66_000);
    assert!(spec.check().is_err());
    let plain = noise(200_000, 1);
    let mut slice = &plain[..];
    let _ = ChunkReader::new(&spec, &mut slice).into_slots();
}
