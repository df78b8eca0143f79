//! The pipeline's tests: raw and v2 streams here, GCM chunk streams in `gcm`.

use std::io::{self, Read, Write};

use super::*;
use crate::chunk_tag::{Authenticator, TAG_LEN};
use crate::container::{self, BodyParams, Opened, Recipient};
use crate::cpu::CpuEngine;
use crate::engine::{Direction, Job, Mode};
use crate::key::{Key, KeySize};
use crate::modes;

mod gcm;
mod parallel;

const CHUNK: usize = 4096;

fn data(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i * 31 + i / 7) as u8).collect()
}

fn run_spec(spec: &StreamSpec<'_>, input: &[u8]) -> Result<Vec<u8>, PipelineError> {
    let mut out = Vec::new();
    run(spec, &mut &input[..], &mut out, &|_| {})?;
    Ok(out)
}

/// A freshly sealed container's keys (its body key is random, derived from a new file key).
fn sealed(key_size: KeySize) -> Opened {
    let params = BodyParams {
        mode: Mode::Ctr,
        key_size,
        chunk_size: CHUNK,
    };
    let key = Key::new(&[5; 16]).unwrap();
    container::seal_v2(params, &[Recipient::Key(key)])
        .unwrap()
        .1
}

fn spec<'a>(
    engine: &'a CpuEngine,
    keys: &'a Opened,
    mode: Mode,
    direction: Direction,
    auth: Option<&'a Authenticator>,
) -> StreamSpec<'a> {
    StreamSpec {
        mode,
        counter: [0xf0; 16],
        chunk_size: CHUNK,
        tags: auth.map_or(Tags::None, Tags::Chunk),
        ..keys.stream_spec(engine, direction)
    }
}

/// The body (tags removed) is the plain mode stream, and decryption gives the input back.
#[test]
fn body_is_the_raw_stream_and_round_trips() {
    let engine = CpuEngine::new(Some(2)).unwrap().with_split(0, 1024);
    let keys = sealed(KeySize::from_len(24).unwrap());
    let auth = keys.authenticator().unwrap().clone();
    for mode in [Mode::Ctr, Mode::Ecb] {
        for len in [0, 1, 15, 16, 17, CHUNK - 1, CHUNK, CHUNK + 1, 3 * CHUNK + 5] {
            let plain = data(len);
            let enc = spec(&engine, &keys, mode, Direction::Encrypt, Some(&auth));
            let sealed = run_spec(&enc, &plain).unwrap();
            let body: Vec<u8> = sealed
                .chunks(CHUNK + TAG_LEN)
                .flat_map(|c| c[..c.len() - TAG_LEN].to_vec())
                .collect();
            let mut expected = plain.clone();
            if mode == Mode::Ecb {
                let pad = 16 - len % 16;
                expected.resize(len + pad, pad as u8);
            }
            let job = Job::new(mode, Direction::Encrypt, enc.key, [0xf0; 16], 0);
            modes::apply(crate::AesImpl::Portable, &job, &mut expected).unwrap();
            assert!(
                body == expected,
                "{mode:?} len {len}: body is not the raw stream"
            );
            let dec = spec(&engine, &keys, mode, Direction::Decrypt, Some(&auth));
            assert!(
                run_spec(&dec, &sealed).unwrap() == plain,
                "{mode:?} len {len}"
            );
        }
    }
}

/// Dropping the last chunk, or appending one, fails authentication.
/// Chunk by chunk through [`ChunkReader`] and [`seal`]/[`open`] (as a distributed runner
/// does it) gives the same bytes as the threaded pipeline, whatever the chunk boundaries.
#[test]
fn chunk_at_a_time_matches_the_pipeline() {
    let engine = CpuEngine::new(Some(1)).unwrap();
    let keys = sealed(KeySize::from_len(16).unwrap());
    let auth = keys.authenticator().unwrap().clone();
    for mode in [Mode::Ctr, Mode::Ecb] {
        for auth in [None, Some(&auth)] {
            for len in [
                0,
                1,
                16,
                CHUNK - 1,
                CHUNK,
                CHUNK + 1,
                2 * CHUNK,
                2 * CHUNK + 17,
            ] {
                let plain = data(len);
                let mut expected_chunks = 0;
                let mut sealed = Vec::new();
                let enc = spec(&engine, &keys, mode, Direction::Encrypt, auth);
                let mut input = &plain[..];
                let mut reader = ChunkReader::new(&enc, &mut input);
                while let Some(mut chunk) = reader.next_chunk(enc.new_buffer()).unwrap() {
                    assert_eq!(chunk.index, expected_chunks);
                    expected_chunks += 1;
                    seal(&enc, &mut chunk).unwrap();
                    sealed.extend_from_slice(&chunk.data);
                }
                assert_eq!(sealed, run_spec(&enc, &plain).unwrap(), "{mode:?} {len}");
                let dec = spec(&engine, &keys, mode, Direction::Decrypt, auth);
                let mut opened = Vec::new();
                let mut input = &sealed[..];
                let mut reader = ChunkReader::new(&dec, &mut input);
                while let Some(mut chunk) = reader.next_chunk(dec.new_buffer()).unwrap() {
                    open(&dec, &mut chunk).unwrap();
                    opened.extend_from_slice(&chunk.data);
                }
                assert_eq!(opened, plain, "{mode:?} {len}");
            }
        }
    }
}

/// A stream cut into contiguous segments (from the first chunk, mid-stream, and the one that
/// ends the stream) run separately, as MPI ranks run their shares, and concatenated is
/// exactly the whole stream: for CTR and ECB (padded or not), raw or with chunk tags, both
/// ways, whatever the cuts.
#[test]
fn segments_concatenated_are_the_whole_stream() {
    let engine = CpuEngine::new(Some(1)).unwrap();
    let keys = sealed(KeySize::from_len(32).unwrap());
    let auth = keys.authenticator().unwrap().clone();
    let cases = [(Mode::Ctr, false), (Mode::Ecb, true), (Mode::Ecb, false)];
    for (mode, padding) in cases {
        for auth in [None, Some(&auth)] {
            let lens = [
                0,
                1,
                16,
                CHUNK - 1,
                CHUNK,
                CHUNK + 1,
                3 * CHUNK,
                4 * CHUNK + 32,
            ];
            for len in lens {
                if mode == Mode::Ecb && !padding && len % 16 != 0 {
                    continue;
                }
                let mut enc = spec(&engine, &keys, mode, Direction::Encrypt, auth);
                let mut dec = spec(&engine, &keys, mode, Direction::Decrypt, auth);
                (enc.padding, dec.padding) = (padding, padding);
                let plain = data(len);
                let sealed = run_spec(&enc, &plain).unwrap();
                assert_eq!(run_spec(&dec, &sealed).unwrap(), plain);
                for (spec, input, whole) in [(&enc, &plain, &sealed), (&dec, &sealed, &plain)] {
                    let chunks = ChunkReader::new(spec, &mut &input[..]).count_chunks();
                    for cuts in segment_cuts(chunks) {
                        for stages in [Stages::Threaded, Stages::InTurn] {
                            let what = format!("{mode:?} pad {padding} {len} B {cuts:?}");
                            let joined = run_in_segments(spec, stages, input, &cuts).expect(&what);
                            assert!(joined == *whole, "{what} {stages:?} {:?}", spec.direction);
                        }
                    }
                }
            }
        }
    }
}

impl<R: Read> ChunkReader<'_, R> {
    fn count_chunks(mut self) -> u64 {
        let mut n = 0;
        while self.next_chunk(Vec::new()).unwrap().is_some() {
            n += 1;
        }
        n
    }
}

/// Cut points `0 = c0 <= c1 <= ... < chunks` (segments may be empty, except the last).
fn segment_cuts(chunks: u64) -> Vec<Vec<u64>> {
    let mut all = vec![vec![0]];
    for a in 0..chunks {
        all.push(vec![0, a]);
        for b in a..chunks {
            all.push(vec![0, a, b]);
        }
    }
    all
}

/// Runs the segments starting at chunks `cuts` separately and concatenates their outputs.
fn run_in_segments(
    spec: &StreamSpec<'_>,
    stages: Stages,
    input: &[u8],
    cuts: &[u64],
) -> Result<Vec<u8>, PipelineError> {
    let record = spec.input_record_len() as u64;
    let at = |chunk: u64| (chunk * record).min(input.len() as u64) as usize;
    let mut out = Vec::new();
    for (i, &first_index) in cuts.iter().enumerate() {
        let segment = Segment {
            first_index,
            ends_stream: i + 1 == cuts.len(),
        };
        let end = cuts.get(i + 1).map_or(input.len(), |&next| at(next));
        let mut part = Vec::new();
        let n = run_segment(
            spec,
            segment,
            stages,
            &mut &input[at(first_index)..end],
            &mut part,
            &|_| {},
        )?;
        assert_eq!(n, part.len() as u64);
        out.extend_from_slice(&part);
    }
    Ok(out)
}

/// A segment that does not end the stream must be whole records; one that does must end with
/// the last chunk (a tagged segment cut short fails authentication).
#[test]
fn segments_refuse_partial_records_and_check_the_last_chunk() {
    let engine = CpuEngine::new(Some(1)).unwrap();
    let keys = sealed(KeySize::from_len(16).unwrap());
    let auth = keys.authenticator().unwrap().clone();
    let enc = spec(&engine, &keys, Mode::Ctr, Direction::Encrypt, Some(&auth));
    let middle = Segment {
        first_index: 2,
        ends_stream: false,
    };
    let input = data(CHUNK + 5);
    for stages in [Stages::Threaded, Stages::InTurn] {
        let err = run_segment(
            &enc,
            middle,
            stages,
            &mut &input[..],
            &mut Vec::new(),
            &|_| {},
        );
        assert!(matches!(err, Err(PipelineError::Read(_))), "{err:?}");
        let dec = spec(&engine, &keys, Mode::Ctr, Direction::Decrypt, Some(&auth));
        let sealed = run_spec(&enc, &data(3 * CHUNK)).unwrap();
        let record = CHUNK + TAG_LEN;
        // Chunks 1.. as the stream's end: fine; chunk 1 alone as the end: chunk 1 is not last.
        let tail = Segment {
            first_index: 1,
            ends_stream: true,
        };
        let ok = run_segment(
            &dec,
            tail,
            stages,
            &mut &sealed[record..],
            &mut Vec::new(),
            &|_| {},
        );
        assert_eq!(ok.unwrap(), 2 * CHUNK as u64);
        let cut = &sealed[record..2 * record];
        let err = run_segment(&dec, tail, stages, &mut &cut[..], &mut Vec::new(), &|_| {});
        assert!(matches!(err, Err(PipelineError::Tampered(1))), "{err:?}");
    }
}

#[test]
fn chunk_level_truncation_and_extension_fail() {
    let engine = CpuEngine::new(Some(1)).unwrap();
    let keys = sealed(KeySize::from_len(16).unwrap());
    let auth = keys.authenticator().unwrap().clone();
    let enc = spec(&engine, &keys, Mode::Ctr, Direction::Encrypt, Some(&auth));
    let dec = spec(&engine, &keys, Mode::Ctr, Direction::Decrypt, Some(&auth));
    let sealed = run_spec(&enc, &data(3 * CHUNK)).unwrap();
    let record = CHUNK + TAG_LEN;
    assert!(matches!(
        run_spec(&dec, &sealed[..2 * record]),
        Err(PipelineError::Tampered(1))
    ));
    let mut extended = sealed.clone();
    extended.extend_from_slice(&sealed[..record]);
    assert!(run_spec(&dec, &extended).is_err());
    assert!(matches!(
        run_spec(&dec, &[]),
        Err(PipelineError::Truncated(0))
    ));
}

struct FailingReader(usize);

impl Read for FailingReader {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.0 == 0 {
            return Err(io::Error::other("disk on fire"));
        }
        let n = buf.len().min(self.0);
        buf[..n].fill(1);
        self.0 -= n;
        Ok(n)
    }
}

struct FailingWriter(usize);

impl Write for FailingWriter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if self.0 < buf.len() {
            return Err(io::Error::new(io::ErrorKind::StorageFull, "no space"));
        }
        self.0 -= buf.len();
        Ok(buf.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Reader and writer failures end the stream with their error, without hanging.
#[test]
fn io_errors_stop_the_pipeline() {
    let engine = CpuEngine::new(Some(2)).unwrap();
    let keys = sealed(KeySize::from_len(32).unwrap());
    let enc = spec(&engine, &keys, Mode::Ctr, Direction::Encrypt, None);
    let read_err = run(
        &enc,
        &mut FailingReader(10 * CHUNK + 3),
        &mut Vec::new(),
        &|_| {},
    );
    assert!(
        matches!(read_err, Err(PipelineError::Read(_))),
        "{read_err:?}"
    );
    let input = data(20 * CHUNK);
    let write_err = run(
        &enc,
        &mut &input[..],
        &mut FailingWriter(5 * CHUNK),
        &|_| {},
    );
    assert!(
        matches!(write_err, Err(PipelineError::Write(_))),
        "{write_err:?}"
    );
}

/// Raw ECB: bad padding and partial blocks are clean errors.
#[test]
fn raw_ecb_errors_are_clean() {
    let engine = CpuEngine::new(Some(1)).unwrap();
    let keys = sealed(KeySize::from_len(16).unwrap());
    let mut no_pad = spec(&engine, &keys, Mode::Ecb, Direction::Encrypt, None);
    no_pad.padding = false;
    assert!(matches!(
        run_spec(&no_pad, &data(33)),
        Err(PipelineError::NotWholeBlocks(33))
    ));
    let dec = spec(&engine, &keys, Mode::Ecb, Direction::Decrypt, None);
    let garbage = data(64);
    assert!(matches!(
        run_spec(&dec, &garbage),
        Err(PipelineError::BadPadding)
    ));
}
