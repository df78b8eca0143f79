//! The records job in place in the parallel pipeline: an engine on the seam's default
//! in-place job, sealing segments in place, windows of more records than one `preadv` takes,
//! windows read and crypted a piece at a time, streams that give or take a little at a time,
//! and the reader into the data slots.
use super::*;
use crate::pipeline::{Chunk, ChunkReader};

/// A CPU engine that says it runs the records job in place but runs it through the seam's
/// default (a copy and the job apart).
struct DefaultInPlace(CpuEngine);
impl Engine for DefaultInPlace {
    fn name(&self) -> String {
        "default-in-place".into()
    }
    fn workers(&self) -> usize {
        1
    }
    fn process(&self, job: &Job<'_>, buf: &mut [u8]) -> Result<(), EngineError> {
        self.0.process(job, buf)
    }
    fn runs_records(&self, _: &RecordsJob<'_>) -> bool {
        true
    }
    fn process_records(
        &self,
        job: &RecordsJob<'_>,
        input: &[u8],
        output: &mut [u8],
    ) -> Result<(), RecordsError> {
        self.0.process_records(job, input, output)
    }
    fn runs_records_in_place(&self, _: &RecordsJob<'_>) -> bool {
        true
    }
}

/// The seam's default in-place job gives the bytes of a run in order, at every edge.
#[test]
fn the_default_in_place_job_gives_the_same_bytes() {
    let cipher = message_cipher();
    let g = GCM_CHUNK_LEN;
    let engine = leak(DefaultInPlace(CpuEngine::new(Some(1)).unwrap()));
    let spec = |direction| StreamSpec::message(engine, direction, cipher, g);
    same_as_in_order("gcm default in place", spec, 3 * g, &edges(g, 3 * g));
}

/// Segments of a sealing run, on and off window boundaries, to the stream's end or not, into a
/// file and a stream, are the stream's records: the base index reaches the in-place job.
#[test]
fn segments_seal_in_place_to_the_stream_s_records() {
    let cipher = message_cipher();
    let engine = leak(CpuEngine::new(Some(2)).unwrap());
    let g = GCM_CHUNK_LEN;
    let enc = StreamSpec::message(engine, Direction::Encrypt, cipher, g);
    let plain = data(13 * g + 5);
    let sealed = run_spec(&enc, &plain).unwrap();
    for span in [
        (0, Some(13)),
        (1, Some(2)),
        (1, Some(12)),
        (3, Some(11)),
        (5, None),
        (7, None),
        (13, None),
        (6, Some(6)),
    ] {
        for threads in 1..=3 {
            let workers = Workers {
                threads,
                window: 4 * g,
            };
            for to_file in [true, false] {
                let (out, ran) = segment_through(&enc, &plain, span, to_file, workers);
                ran.unwrap_or_else(|e| panic!("{span:?} {threads} {to_file}: {e}"));
                let from = span.0 as usize * GCM_RECORD_LEN;
                let to = span.1.map_or(sealed.len(), |e| e as usize * GCM_RECORD_LEN);
                assert!(out == sealed[from..to], "{span:?} {threads} {to_file}");
            }
        }
    }
}

/// Windows of more records than one `preadv` or `pwritev` takes (1024) go in several calls.
#[test]
fn windows_of_more_than_1024_records() {
    let cipher = message_cipher();
    let engine = leak(CpuEngine::new(Some(2)).unwrap());
    let g = GCM_CHUNK_LEN;
    let window = 1100 * g;
    let spec = |direction| StreamSpec::message(engine, direction, cipher, g);
    let plain = data(2 * window + 77);
    let sealed = run_spec(&spec(Direction::Encrypt), &plain).unwrap();
    let workers = Workers { threads: 2, window };
    for ends in [ENDS[0], ENDS[1]] {
        let (out, ran) = through(&spec(Direction::Encrypt), &plain, ends, workers);
        ran.unwrap();
        assert!(out == sealed, "{ends:?} enc");
        let (out, ran) = through(&spec(Direction::Decrypt), &sealed, ends, workers);
        ran.unwrap();
        assert!(out == plain, "{ends:?} dec");
    }
}

/// A window read from a file is read and sealed or opened a few records at a time: lengths at
/// the edges of those pieces, within a window and across windows, give the bytes of a run in
/// order, and a tampered record in a later piece of a window fails at its index, with nothing
/// of its window written.
#[test]
fn windows_are_read_and_crypted_a_few_records_at_a_time() {
    let cipher = message_cipher();
    let engine = leak(CpuEngine::new(Some(2)).unwrap());
    let g = GCM_CHUNK_LEN;
    let piece = 16 * g;
    let window = 40 * g;
    let spec = |direction| StreamSpec::message(engine, direction, cipher, g);
    let lengths = [
        piece - 1,
        piece,
        piece + 1,
        2 * piece,
        window - 1,
        window,
        window + piece + 1,
        2 * window + 2 * piece + 3,
    ];
    same_as_in_order("gcm pieces", spec, window, &lengths);

    // Long enough that no worker takes less than the window.
    let plain = data(8 * window + 5);
    let mut sealed = run_spec(&spec(Direction::Encrypt), &plain).unwrap();
    sealed[37 * GCM_RECORD_LEN + 3] ^= 1;
    sealed[58 * GCM_RECORD_LEN + 3] ^= 1;
    for threads in 1..=2 {
        for ends in [ENDS[0], ENDS[1]] {
            let workers = Workers { threads, window };
            assert_eq!(workers.for_input(sealed.len() as u64), workers);
            let (out, ran) = through(&spec(Direction::Decrypt), &sealed, ends, workers);
            assert!(
                matches!(ran, Err(PipelineError::Tampered(37))),
                "{threads} workers {ends:?}: {ran:?}"
            );
            let first_window = &out[..window.min(out.len())];
            assert!(
                first_window.iter().all(|&b| b == 0),
                "{threads} workers {ends:?}: the failed window's plaintext was written"
            );
        }
    }
}

/// A stream that takes at most 1000 bytes a call (no vectored write of its own).
struct Dribble(Vec<u8>);
impl std::io::Write for Dribble {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = buf.len().min(1000);
        self.0.extend_from_slice(&buf[..n]);
        Ok(n)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Opened windows reach a stream that takes a little at a time whole and in order.
#[test]
fn a_dribbling_stream_gets_every_opened_byte() {
    let cipher = message_cipher();
    let engine = leak(CpuEngine::new(Some(2)).unwrap());
    let g = GCM_CHUNK_LEN;
    let dec = StreamSpec::message(engine, Direction::Decrypt, cipher, g);
    let plain = data(7 * g + 3);
    let sealed = run_spec(
        &StreamSpec::message(engine, Direction::Encrypt, cipher, g),
        &plain,
    )
    .unwrap();
    let file = file_with(0, &sealed);
    let mut out = Dribble(Vec::new());
    let source = Source::At {
        file: &file,
        at: 0,
        len: sealed.len() as u64,
    };
    let ran = run_parallel(
        &dec,
        source,
        Sink::Stream(&mut out),
        Workers {
            threads: 3,
            window: 2 * g,
        },
        &|_| {},
    )
    .unwrap();
    assert_eq!(ran.written, plain.len() as u64);
    assert!(out.0 == plain);
}

/// A stream that gives at most 1000 bytes a read (no vectored read of its own: one slot part
/// at a time).
struct Trickle<'a>(&'a [u8]);
impl std::io::Read for Trickle<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = buf.len().min(1000).min(self.0.len());
        buf[..n].copy_from_slice(&self.0[..n]);
        self.0 = &self.0[n..];
        Ok(n)
    }
}

/// A reader into the data slots cuts a stream as the reader of back-to-back chunks does: the
/// same chunks, indices and last flags, each its records' length with its bytes in their data
/// slots, from a slice (one vectored read fills many slots) and from a trickle.
#[test]
fn the_slots_reader_cuts_as_the_back_to_back_reader() {
    let cipher = message_cipher();
    let engine = leak(CpuEngine::new(Some(2)).unwrap());
    let g = GCM_CHUNK_LEN;
    let spec = StreamSpec::message(engine, Direction::Encrypt, cipher, 4 * g);
    for len in [
        0,
        1,
        g - 1,
        g,
        g + 1,
        4 * g - 1,
        4 * g,
        4 * g + 5,
        8 * g,
        9 * g + 3,
    ] {
        // Bytes that do not repeat (`data` repeats every 1792 bytes: a slot misplaced by a
        // multiple of that would not show).
        let plain = crate::seeded::SplitMix64::new(len as u64).bytes(len);
        let mut slice = &plain[..];
        let mut expected = Vec::new();
        let mut reader = ChunkReader::new(&spec, &mut slice);
        while let Some(chunk) = reader.next_chunk(Vec::new()).unwrap() {
            expected.push(chunk);
        }
        let mut slice = &plain[..];
        let mut trickle = Trickle(&plain);
        let inputs: [&mut dyn std::io::Read; 2] = [&mut slice, &mut trickle];
        for input in inputs {
            let mut reader = ChunkReader::new(&spec, input).into_slots();
            let mut spare = Vec::new();
            for want in &expected {
                let chunk = reader
                    .next_chunk(std::mem::take(&mut spare))
                    .unwrap()
                    .unwrap();
                assert_eq!((chunk.index, chunk.last), (want.index, want.last), "{len}");
                let full = want.data.len() == 4 * g;
                let sealed = crate::pipeline::sealed_len(want.data.len(), !full).unwrap();
                assert_eq!(chunk.data.len(), sealed, "{len}: chunk {}", chunk.index);
                let gathered = RecordsJob::gather_data(&chunk.data);
                assert!(gathered == want.data, "{len}: chunk {}", chunk.index);
                // Buffers go round, as the pipeline's do.
                spare = chunk.data;
            }
            assert!(reader.next_chunk(spare).unwrap().is_none(), "{len}");
        }
    }
}

/// Sealing a stream that trickles in, in place on many workers, gives the bytes of a run in
/// order.
#[test]
fn a_trickling_stream_seals_in_place_to_the_same_bytes() {
    let cipher = message_cipher();
    let engine = leak(CpuEngine::new(Some(2)).unwrap());
    let g = GCM_CHUNK_LEN;
    let spec = StreamSpec::message(engine, Direction::Encrypt, cipher, g);
    assert!(spec.runs_records_in_place());
    for len in [0, 5, 3 * g, 7 * g + 9] {
        let plain = data(len);
        let expected = run_spec(&spec, &plain).unwrap();
        let mut input = Trickle(&plain);
        let mut out = Vec::new();
        let workers = Workers {
            threads: 3,
            window: 2 * g,
        };
        let ran = run_parallel(
            &spec,
            Source::Stream(&mut input),
            Sink::Stream(&mut out),
            workers,
            &|_| {},
        )
        .unwrap();
        assert_eq!(ran.read, len as u64);
        assert!(out == expected, "{len}");
    }
}

/// Sealing in place checks the buffer's layout against the chunk's last flag: an inner chunk
/// is whole records, the last ends in a short one (possibly a tag alone). A layout that says
/// otherwise is refused, not sealed (it would seal a cut stream as whole, or an inner chunk as
/// its end).
#[test]
fn sealing_in_place_refuses_a_layout_that_contradicts_the_last_flag() {
    let cipher = message_cipher();
    let engine = leak(CpuEngine::new(Some(2)).unwrap());
    let g = GCM_CHUNK_LEN;
    let spec = StreamSpec::message(engine, Direction::Encrypt, cipher, 2 * g);
    for (len, last) in [
        (2 * GCM_RECORD_LEN, true),
        (GCM_RECORD_LEN, true),
        (GCM_RECORD_LEN + 16, false),
        (16, false),
    ] {
        let mut chunk = Chunk {
            index: 0,
            last,
            data: vec![7; len],
        };
        let err = crate::pipeline::seal_in_place(&spec, &mut chunk).unwrap_err();
        assert!(
            matches!(err, PipelineError::Engine(_)),
            "{len} {last}: {err}"
        );
        assert_eq!(chunk.data, vec![7; len], "{len} {last}: changed");
    }
    // The layouts that agree seal.
    for (len, last) in [
        (2 * GCM_RECORD_LEN, false),
        (GCM_RECORD_LEN + 16, true),
        (16, true),
    ] {
        let mut chunk = Chunk {
            index: 0,
            last,
            data: vec![7; len],
        };
        crate::pipeline::seal_in_place(&spec, &mut chunk).unwrap();
    }
}

/// A stream output that counts the writes it is given (each window is one `write_all`).
struct CountWrites {
    bytes: Vec<u8>,
    writes: usize,
}
impl std::io::Write for CountWrites {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.writes += 1;
        self.bytes.extend_from_slice(buf);
        Ok(buf.len())
    }
    fn write_vectored(&mut self, bufs: &[std::io::IoSlice<'_>]) -> std::io::Result<usize> {
        self.writes += 1;
        let mut n = 0;
        for buf in bufs {
            self.bytes.extend_from_slice(buf);
            n += buf.len();
        }
        Ok(n)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Segments on the workers' real window ([`crate::pipeline::WINDOW`]) of a stream of 16 KiB
/// pipeline chunks (`verify`, `dec --range`, MPI ranks with `--chunk-size 16K`), short enough
/// that [`Workers::for_input`] shrinks their windows: the bytes are the stream's, and the rest
/// of a segment after its first window boundary still runs on windows of many chunks (the
/// shrunk window's chunk count must keep dividing the boundary's index, or the gcd in
/// `windowed` cuts the windows to a single 16 KiB chunk: one `pread`, one write, one turn per
/// GCM chunk).
#[test]
fn short_segments_off_the_start_keep_windows_of_many_chunks() {
    let cipher = message_cipher();
    let engine = leak(CpuEngine::new(Some(1)).unwrap());
    let g = GCM_CHUNK_LEN;
    let enc = StreamSpec::message(engine, Direction::Encrypt, cipher, g);
    let dec = StreamSpec::message(engine, Direction::Decrypt, cipher, g);
    // Two workers: eight windows of the input; 136 chunks give windows of 17 chunks, a count
    // prime to the window boundary 256.
    let workers = Workers::new(2);
    let plain = data((256 + 136) * g);
    let sealed = run_spec(&enc, &plain).unwrap();
    for (spec, whole, out_record) in [(&enc, &plain, GCM_RECORD_LEN), (&dec, &sealed, g)] {
        let record = spec.input_record_len();
        let input_file = file_with(INPUT_AT, whole);
        for first in [256u64, 1] {
            let from = first as usize * record;
            let mut output = CountWrites {
                bytes: Vec::new(),
                writes: 0,
            };
            let ran = run_parallel_segment(
                spec,
                Segment {
                    first_index: first,
                    ends_stream: false,
                },
                Source::At {
                    file: &input_file,
                    at: (INPUT_AT + from) as u64,
                    len: (392 * record - from) as u64,
                },
                Sink::Stream(&mut output),
                workers,
                &|_| {},
            );
            let at = format!("{:?} from {first}", spec.direction);
            ran.unwrap_or_else(|e| panic!("{at}: {e}"));
            let expect = if spec.direction == Direction::Encrypt {
                &sealed[first as usize * out_record..392 * out_record]
            } else {
                &plain[first as usize * out_record..392 * out_record]
            };
            assert!(output.bytes == expect, "{at}: other bytes");
            // After the boundary at 256, windows of many chunks: 136 chunks in at most 16 of
            // them. A head from chunk 1 to the boundary goes a chunk a window (chunk 1 is no
            // window's boundary otherwise; as before the change).
            let head = (256 - first) as usize;
            assert!(output.writes <= head + 16, "{at}: {} writes", output.writes);
        }
    }
}

/// What `paraes enc` runs for a 1 MiB file on two workers (a v3 body in pipeline chunks of the
/// default `--chunk-size`, 1 MiB; the workers' real window): [`Workers::for_input`] means to
/// give every worker windows of it (commit ea8373d: "a 1 MiB file on 2 cores: one worker"),
/// and the bench's gcm rows measure windows of 256 KiB for it; but a window is whole pipeline
/// chunks, so the file still goes as one window to one worker.
#[test]
fn a_short_file_in_default_batches_is_cut_into_windows_for_every_worker() {
    let cipher = message_cipher();
    let engine = leak(CpuEngine::new(Some(1)).unwrap());
    let batch = crate::pipeline::DEFAULT_CHUNK_SIZE;
    let enc = StreamSpec::message(engine, Direction::Encrypt, cipher, batch);
    // Just under 1 MiB: one pipeline chunk (1 MiB exactly is two, the second empty).
    let plain = data((1 << 20) - 5);
    let sealed = run_spec(&enc, &plain).unwrap();
    let input_file = file_with(INPUT_AT, &plain);
    let mut output = CountWrites {
        bytes: Vec::new(),
        writes: 0,
    };
    let source = Source::At {
        file: &input_file,
        at: INPUT_AT as u64,
        len: plain.len() as u64,
    };
    run_parallel(
        &enc,
        source,
        Sink::Stream(&mut output),
        Workers::new(2),
        &|_| {},
    )
    .unwrap();
    assert!(output.bytes == sealed);
    assert!(
        output.writes >= 2,
        "{} window(s) for two workers",
        output.writes
    );
}

/// Short inputs in batches of 1 MiB, cut into windows of GCM chunks finer than a batch: whole
/// streams and segments from any batch, each way, are the stream's bytes, and a damaged
/// record fails at its index with nothing of its window let out.
#[test]
fn short_inputs_in_large_batches_are_the_same_bytes_on_finer_windows() {
    let cipher = message_cipher();
    let engine = leak(CpuEngine::new(Some(1)).unwrap());
    let batch = 1 << 20;
    let spec = |direction| StreamSpec::message(engine, direction, cipher, batch);
    let plain = data(3 * batch + 5);
    let sealed = run_spec(&spec(Direction::Encrypt), &plain).unwrap();
    for threads in [2, 3] {
        let workers = Workers::new(threads);
        for ends in ENDS {
            let (out, ran) = through(&spec(Direction::Encrypt), &plain, ends, workers);
            ran.unwrap();
            assert!(out == sealed, "{threads} {ends:?} enc");
            let (out, ran) = through(&spec(Direction::Decrypt), &sealed, ends, workers);
            ran.unwrap();
            assert!(out == plain, "{threads} {ends:?} dec");
        }
        for span in [
            (0, Some(3)),
            (1, Some(2)),
            (1, None),
            (2, None),
            (3, None),
            (1, Some(3)),
        ] {
            for to_file in [true, false] {
                let at = format!("{span:?} {threads} {to_file}");
                let enc = spec(Direction::Encrypt);
                let (out, ran) = segment_through(&enc, &plain, span, to_file, workers);
                ran.unwrap_or_else(|e| panic!("{at}: {e}"));
                let per = batch / GCM_CHUNK_LEN;
                let from = span.0 as usize * per * GCM_RECORD_LEN;
                let to = span
                    .1
                    .map_or(sealed.len(), |e| e as usize * per * GCM_RECORD_LEN);
                assert!(out == sealed[from..to], "{at} enc");
                let dec = spec(Direction::Decrypt);
                let (out, ran) = segment_through(&dec, &sealed, span, to_file, workers);
                ran.unwrap_or_else(|e| panic!("{at}: {e}"));
                let from = span.0 as usize * batch;
                let to = span.1.map_or(plain.len(), |e| e as usize * batch);
                assert!(out == plain[from..to], "{at} dec");
            }
        }
        let mut damaged = sealed.clone();
        damaged[70 * GCM_RECORD_LEN + 9] ^= 1;
        damaged[150 * GCM_RECORD_LEN + 9] ^= 1;
        for ends in [ENDS[0], ENDS[1]] {
            let (out, ran) = through(&spec(Direction::Decrypt), &damaged, ends, workers);
            assert!(
                matches!(ran, Err(PipelineError::Tampered(70))),
                "{threads} {ends:?}: {ran:?}"
            );
            // Nothing of the damaged record's window: a stream holds only windows before it;
            // a file (the caller's to discard) may hold later authentic windows, not it.
            let g = GCM_CHUNK_LEN;
            if ends.to_file {
                let damaged_chunk = &out[(70 * g).min(out.len())..(71 * g).min(out.len())];
                assert!(damaged_chunk.iter().all(|&b| b == 0), "{threads} {ends:?}");
            } else {
                assert!(
                    out.len() <= 70 * g,
                    "{threads} {ends:?}: {} bytes",
                    out.len()
                );
                assert!(out == plain[..out.len()], "{threads} {ends:?}");
            }
        }
    }
}
