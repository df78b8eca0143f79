//! What the engines' rows time, each prepared as an [`Op`] for [`crate::timing`].
//!
//! Engines are measured only through the [`Engine`] seam, so every engine that implements it can
//! be benchmarked by listing it; [`measure_gcm`] times format v3's body sealed in memory (the
//! engine's GCM chunks sealed whole, or its CTR and the pipeline's GCM tags), and [`measure_e2e`] the whole container pipeline
//! on files.

use std::cell::RefCell;
use std::fs::File;
use std::hint::black_box;
use std::io::Write;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use paraes_core::cobblestone::{CHUNK_LEN, TAG_LEN};
use paraes_core::container::{self, Opened, Recipient};
use paraes_core::pipeline::{self, Chunk, PipelineError, Sink, Source, StreamSpec, Workers};
use paraes_core::{Direction, Engine, EngineError, ExpandedKey, Job, Key, Mode};

use crate::stats::Stats;
use crate::timing::{time_op, BenchError, Op, Timing};

/// A deterministic, non-constant fill for the buffers (the contents do not change AES's speed,
/// but zero pages could be shared copy-on-write and make the first pass unrepresentative).
/// The fill is the CTR keystream of a fixed key, which the fastest AES path writes at GB/s.
pub(crate) fn fill(buf: &mut [u8]) {
    buf.fill(0);
    let key = Key::new(&[0x5e; 16]).expect("16 bytes").expand();
    let job = Job::ctr(&key, [0; 16], 0);
    paraes_core::modes::apply(paraes_core::AesImpl::detect(), &job, buf)
        .expect("CTR takes any length");
}

/// Times `engine` encrypting a `bytes`-long buffer in place with `mode` and `key` (in-memory
/// throughput: the Engine seam alone). Returns seconds per call.
pub fn measure_engine(
    engine: &dyn Engine,
    mode: Mode,
    key: &ExpandedKey,
    bytes: usize,
    timing: &Timing,
) -> Result<Stats, BenchError> {
    let buffer = EngineBuffer::new(bytes);
    let op = engine_op(engine, mode, key, &buffer)?;
    time_op(timing, op)
}

/// The buffer the engines' rows of one size encrypt in place, one engine's call at a time:
/// made once and shared by their ops, so a size's rows take one buffer, not one per engine.
pub struct EngineBuffer(RefCell<Vec<u8>>);

impl EngineBuffer {
    /// A buffer of `bytes` bytes of [`fill`]'s contents.
    pub fn new(bytes: usize) -> Self {
        let mut buf = vec![0u8; bytes];
        fill(&mut buf);
        EngineBuffer(RefCell::new(buf))
    }
}

/// [`measure_engine`]'s call, prepared: `engine` encrypting `buffer` in place.
pub fn engine_op<'a>(
    engine: &'a dyn Engine,
    mode: Mode,
    key: &'a ExpandedKey,
    buffer: &'a EngineBuffer,
) -> Result<Op<'a>, EngineError> {
    let job = Job::new(mode, Direction::Encrypt, key, [0x5a; 16], 0);
    job.check(buffer.0.borrow().len())?;
    Ok(Op::new(move || {
        let mut buf = buffer.0.borrow_mut();
        engine.process(&job, black_box(&mut buf))?;
        black_box(&buf);
        Ok(())
    }))
}

/// A stretch of `bytes` plaintext bytes of format v3's body, cut into pipeline chunks as the
/// pipeline cuts a stream: each chunk's plaintext length and the chunk (with room for its tags).
struct GcmStretch {
    chunks: Vec<(usize, Chunk)>,
    /// The pipeline chunks' plaintext bytes (the last one's at most).
    batch: usize,
    /// Whether each chunk lies in the data slots of its records, sealed in place
    /// ([`pipeline::seal_in_place`]), as `paraes enc` reads a window from a file for an engine
    /// that runs the records job in place; otherwise back to back, sealed by [`pipeline::seal`].
    in_slots: bool,
}

/// The pipeline's batch for `batch` bytes: whole 16 KiB GCM chunks, at least one (as
/// [`Opened::set_batch`] rounds it).
fn gcm_batch(batch: usize) -> usize {
    (batch / CHUNK_LEN).max(1) * CHUNK_LEN
}

/// A fresh format v3 container for `key` (as `paraes enc -k` makes one per file: a random file
/// key, wrapped for `key`; a Cobblestone-128 or -256 body after `key`'s size) with pipeline
/// chunks of `batch` bytes (see [`gcm_batch`]).
fn gcm_container(key: &Key, batch: usize) -> Result<Opened, container::ContainerError> {
    let (_header, mut opened) = container::seal(key.size(), &[Recipient::Key(key.clone())])?;
    opened.set_batch(batch);
    Ok(opened)
}

impl GcmStretch {
    /// `bytes` bytes of plaintext cut into pipeline chunks of `batch` bytes (see
    /// [`gcm_batch`]): chunk `i` holds bytes `i * batch ..`, the last one what is left; each
    /// back to back, or in its records' data slots (`in_slots`).
    ///
    /// When `bytes` is a multiple of 16 KiB the stretch is from the middle of a stream: no
    /// chunk is the stream's last, so there are `bytes / 16 KiB` GCM chunks, each with its
    /// tag. Otherwise it is a stream's end, as a file of `bytes` bytes ends: its last pipeline
    /// chunk is marked last and ends in a short GCM chunk of `bytes % 16 KiB` bytes. Either way
    /// the sealed output is `bytes` plus 16 bytes per GCM chunk.
    fn new(bytes: usize, batch: usize, in_slots: bool) -> Self {
        let batch = gcm_batch(batch);
        let count = bytes.div_ceil(batch).max(1);
        let ends_stream = !bytes.is_multiple_of(CHUNK_LEN);
        let mut chunks = Vec::with_capacity(count);
        for index in 0..count {
            let len = (bytes - index * batch).min(batch);
            let last = ends_stream && index + 1 == count;
            // Every buffer as large as a whole batch sealed, as the pipeline's pool makes them
            // (a records job swaps buffers with its spare, so each must hold any chunk's output).
            let mut data = Vec::with_capacity(batch + (batch / CHUNK_LEN + 1) * TAG_LEN);
            data.resize(len, 0);
            fill(&mut data);
            if in_slots {
                let plain = std::mem::take(&mut data);
                let sealed = pipeline::sealed_len(len, last).expect("whole GCM chunks or the last");
                data = vec![0; sealed];
                paraes_core::RecordsJob::scatter_data(&plain, &mut data);
            }
            let chunk = Chunk {
                index: index as u64,
                last,
                data,
            };
            chunks.push((len, chunk));
        }
        GcmStretch {
            chunks,
            batch,
            in_slots,
        }
    }
}

/// How many chunks one thread seals at once: one, unless a worker's wait for the engine
/// starts another chunk inside the first (what the gcm rows' workers did on rayon's
/// `par_iter`). The most seen is kept for the tests.
mod sealing {
    use std::cell::Cell;
    use std::sync::atomic::{AtomicUsize, Ordering};

    thread_local! {
        static DEPTH: Cell<usize> = const { Cell::new(0) };
    }

    /// The most chunks any thread has sealed at once since [`reset_most`].
    static MOST: AtomicUsize = AtomicUsize::new(0);

    /// One chunk being sealed on this thread, from [`Guard::enter`] until dropped.
    pub(super) struct Guard;

    impl Guard {
        pub(super) fn enter() -> Self {
            let depth = DEPTH.get() + 1;
            DEPTH.set(depth);
            MOST.fetch_max(depth, Ordering::Relaxed);
            Guard
        }
    }

    impl Drop for Guard {
        fn drop(&mut self) {
            DEPTH.set(DEPTH.get() - 1);
        }
    }

    #[cfg(test)]
    pub(super) fn reset_most() {
        MOST.store(0, Ordering::Relaxed);
    }

    #[cfg(test)]
    pub(super) fn most() -> usize {
        MOST.load(Ordering::Relaxed)
    }
}

impl GcmStretch {
    /// Seals every chunk as the pipeline does: in its records' data slots, in place
    /// ([`pipeline::seal_in_place`]), or else by [`pipeline::seal`] (every GCM chunk sealed
    /// whole by the engine's records job, out of place, where the engine runs it, else the
    /// engine's CTR with GCM chunk counters and each GCM chunk's GHASH tag and E(J0)), each
    /// first cut back to its plaintext length. Each call seals the previous call's output
    /// again: the bytes do not change the time. With `workers`, chunks are sealed side by
    /// side on its threads, as `paraes enc`'s workers seal many chunks in flight
    /// ([`pipeline::run_parallel`]); the threads live across calls, as the workers live for
    /// a run, so each keeps its records job's spare buffer.
    fn seal(
        &mut self,
        spec: &StreamSpec<'_>,
        workers: Option<&rayon::ThreadPool>,
    ) -> Result<(), PipelineError> {
        let in_slots = self.in_slots;
        let seal_one = |(len, chunk): &mut (usize, Chunk)| {
            let _sealing = sealing::Guard::enter();
            if in_slots {
                return pipeline::seal_in_place(spec, chunk);
            }
            chunk.data.truncate(*len);
            pipeline::seal(spec, chunk)
        };
        match workers {
            Some(pool) if self.chunks.len() > 1 => {
                // Each worker takes the next chunk, one at a time, as `run_parallel`'s workers
                // take the next window (not rayon's `par_iter`: a worker of one rayon pool that
                // waits for the CPU engine's pool steals from its own pool meanwhile, so it
                // sealed a second chunk inside the first, holding the engine's pool and taking a
                // fresh spare buffer for it; `paraes enc`'s workers are plain threads, whose
                // wait blocks). A broadcast job is this thread's alone: nothing to steal.
                let chunks: Vec<Mutex<&mut (usize, Chunk)>> =
                    self.chunks.iter_mut().map(Mutex::new).collect();
                let next = AtomicUsize::new(0);
                let first_error = Mutex::new(None);
                let take = || {
                    while let Some(slot) = chunks.get(next.fetch_add(1, Ordering::Relaxed)) {
                        let mut slot = slot.lock().unwrap_or_else(|e| e.into_inner());
                        if let Err(e) = seal_one(&mut slot) {
                            first_error
                                .lock()
                                .unwrap_or_else(|e| e.into_inner())
                                .get_or_insert(e);
                            next.store(chunks.len(), Ordering::Relaxed);
                        }
                    }
                };
                pool.in_place_scope(|scope| {
                    scope.spawn_broadcast(|_, _| take());
                    take();
                });
                match first_error.into_inner().unwrap_or_else(|e| e.into_inner()) {
                    Some(e) => Err(e),
                    None => Ok(()),
                }
            }
            _ => self.chunks.iter_mut().try_for_each(seal_one),
        }
    }
}

/// Times format v3's body sealed in memory on `engine`: `bytes` plaintext bytes of a fresh
/// container for `key` (128 or 256 bits: a v3 body has no 192-bit key), cut into pipeline
/// chunks of `batch` bytes as the pipeline cuts a stream (`paraes enc`'s workers take
/// [`pipeline::WINDOW`]), sealed side by side by as many workers as the engine has threads
/// (as `paraes enc` has), each as the pipeline seals a window it read from a file: in its
/// records' data slots, in place ([`pipeline::seal_in_place`]), where the engine runs the
/// records job in place, otherwise by [`pipeline::seal`]: C2SP Cobblestone's 16 KiB AES-GCM
/// chunks, each sealed whole
/// (CTR and GHASH in one pass) by an engine that runs the records job
/// ([`Engine::runs_records`], [`Engine::process_records`]: the CPU engine over its threads, each
/// record by the stitched kernel or by CTR and GHASH, or on one thread with the kernel),
/// otherwise the CTR of all of a pipeline chunk's
/// in one engine call (counters `nonce_i || be32(2 + j)`), then each one's tag (GHASH and
/// E(J0)) on the calling thread. Reading and writing are not timed, nor is
/// the container's header (key wrapping and derivation, once per file). A size that is not
/// whole 16 KiB chunks is a stream's end, whose last GCM chunk is short (see [`GcmStretch::new`]).
/// Returns seconds per `bytes`.
pub fn measure_gcm(
    engine: &dyn Engine,
    key: &Key,
    bytes: usize,
    batch: usize,
    timing: &Timing,
) -> Result<Stats, BenchError> {
    let body = GcmBody::new(key, bytes, batch)?;
    let op = gcm_op(engine, &body)?;
    time_op(timing, op)
}

/// The body the engines' gcm rows of one size seal, one engine's call at a time: a fresh
/// container for a key and stretches of its plaintext in pipeline chunks ([`GcmStretch::new`]),
/// made once and shared by their ops: laid out back to back for the engines that seal through
/// [`pipeline::seal`], or in its records' data slots for those that seal in place
/// ([`StreamSpec::runs_records_in_place`]), and cut into the windows `paraes enc`'s workers
/// take of a file of that size ([`Workers::for_input`]: `batch` bytes, or less where that
/// would leave some of an engine's threads without one); each made when a row first needs it.
pub struct GcmBody {
    opened: Opened,
    bytes: usize,
    batch: usize,
    stretches: RefCell<Vec<GcmStretch>>,
}

impl GcmBody {
    /// `bytes` bytes of plaintext of a fresh container for `key` (128 or 256 bits), cut into
    /// pipeline chunks of at most `batch` bytes.
    pub fn new(key: &Key, bytes: usize, batch: usize) -> Result<Self, BenchError> {
        Ok(GcmBody {
            opened: gcm_container(key, batch)?,
            bytes,
            batch,
            stretches: Default::default(),
        })
    }

    /// The index of the stretch laid out as `in_slots` says in pipeline chunks of `batch`
    /// bytes, made now if no row has needed it yet.
    fn stretch(&self, batch: usize, in_slots: bool) -> usize {
        let mut stretches = self.stretches.borrow_mut();
        let found = stretches
            .iter()
            .position(|s| s.batch == batch && s.in_slots == in_slots);
        found.unwrap_or_else(|| {
            stretches.push(GcmStretch::new(self.bytes, batch, in_slots));
            stretches.len() - 1
        })
    }
}

/// [`measure_gcm`]'s call, prepared: `body` sealed on `engine`.
pub fn gcm_op<'a>(engine: &'a dyn Engine, body: &'a GcmBody) -> Result<Op<'a>, BenchError> {
    let spec = body.opened.stream_spec(engine, Direction::Encrypt);
    spec.check()?;
    if spec.chunk_size != gcm_batch(body.batch) {
        return Err(format!(
            "the container took a batch of {} bytes for {}",
            spec.chunk_size, body.batch
        )
        .into());
    }
    // The windows `paraes enc`'s workers (as many as the engine's threads) take of a file of
    // this size.
    let window = Workers {
        threads: engine.workers().max(1),
        window: body.batch,
    }
    .for_input(body.bytes as u64)
    .window;
    let spec = StreamSpec {
        // Whole GCM chunks, rounded up as the pipeline rounds a window.
        chunk_size: gcm_batch(window.next_multiple_of(CHUNK_LEN)),
        ..spec
    };
    // The calling thread is one of the workers.
    let workers = match engine.workers() {
        0 | 1 => None,
        threads => Some(
            rayon::ThreadPoolBuilder::new()
                .num_threads(threads - 1)
                .build()?,
        ),
    };
    let at = body.stretch(spec.chunk_size, spec.runs_records_in_place());
    Ok(Op::new(move || {
        let mut stretches = body.stretches.borrow_mut();
        let stretch = &mut stretches[at];
        stretch.seal(&spec, workers.as_ref())?;
        black_box(&stretch.chunks);
        Ok(())
    }))
}

/// Times the whole `paraes enc` path: a format v3 container header, then the body's chunks
/// many in flight ([`pipeline::run_parallel`]: as many workers as the engine has threads, at
/// least two, each reading its window of the input at its offset, sealing it on `engine`, and
/// writing it at its offset) from a temporary file of `bytes` bytes to a temporary output file
/// (in the temporary directory, `$TMPDIR` or /tmp), in pipeline chunks of `chunk_size` bytes
/// (windows of at least [`pipeline::WINDOW`]; the output's room is not reserved first). The body's key size is `key`'s
/// (128 or 256 bits: a container has no 192-bit body). One sample is one whole file; there is
/// no batching. Returns seconds per file.
pub fn measure_e2e(
    engine: &dyn Engine,
    key: &Key,
    bytes: usize,
    chunk_size: usize,
    timing: &Timing,
) -> Result<Stats, BenchError> {
    time_op(timing, e2e_op(engine, key, bytes, chunk_size)?)
}

/// [`measure_e2e`]'s call, prepared: one whole file through the pipeline (its input written
/// now, in a temporary directory that lives as long as the op).
pub fn e2e_op<'a>(
    engine: &'a dyn Engine,
    key: &'a Key,
    bytes: usize,
    chunk_size: usize,
) -> Result<Op<'a>, BenchError> {
    let dir = tempfile::tempdir()?;
    let input_path = dir.path().join("input");
    let output_path = dir.path().join("output.paraes");
    {
        let mut input = File::create(&input_path)?;
        let mut block = vec![0u8; (1 << 20).min(bytes.max(1))];
        fill(&mut block);
        let mut left = bytes;
        while left > 0 {
            let n = left.min(block.len());
            input.write_all(&block[..n])?;
            left -= n;
        }
    }
    Ok(Op::whole(move || -> Result<(), BenchError> {
        // The directory is removed when the op is dropped.
        let _dir = &dir;
        // As `paraes enc -k`: a fresh file key per file, wrapped for the key.
        let (header_bytes, mut sealed) =
            container::seal(key.size(), &[Recipient::Key(key.clone())])?;
        sealed.set_batch(chunk_size);
        let input = File::open(&input_path)?;
        let mut output = File::create(&output_path)?;
        output.write_all(&header_bytes)?;
        let spec = sealed.stream_spec(engine, Direction::Encrypt);
        let source = Source::At {
            file: &input,
            at: 0,
            len: input.metadata()?.len(),
        };
        let sink = Sink::At {
            file: &output,
            at: header_bytes.len() as u64,
            take_turns: false,
        };
        let workers = Workers::new(engine.workers().max(2));
        pipeline::run_parallel(&spec, source, sink, workers, &|_| {})?;
        Ok(())
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use paraes_core::CpuEngine;

    const TINY: Timing = Timing::TINY;

    /// [`gcm_container`] and [`GcmStretch::new`] of it.
    fn gcm_stretch(key: &Key, bytes: usize, batch: usize, in_slots: bool) -> (Opened, GcmStretch) {
        let opened = gcm_container(key, batch).unwrap();
        (opened, GcmStretch::new(bytes, batch, in_slots))
    }

    /// The bytes of a stretch's chunks: their data slots where they lie in them.
    fn stretch_bytes(stretch: &GcmStretch, plain: bool) -> Vec<u8> {
        let mut out = Vec::new();
        for (_, chunk) in &stretch.chunks {
            if plain && stretch.in_slots {
                out.extend(paraes_core::RecordsJob::gather_data(&chunk.data));
            } else {
                out.extend_from_slice(&chunk.data);
            }
        }
        out
    }

    #[test]
    fn engine_times_are_positive_and_ordered() {
        let engine = CpuEngine::new(Some(1)).unwrap();
        let key = Key::new(&[7u8; 16]).unwrap().expand();
        for mode in [Mode::Ctr, Mode::Ecb] {
            let s = measure_engine(&engine, mode, &key, 4096, &TINY).unwrap();
            assert!(
                s.min > 0.0 && s.min <= s.median && s.median <= s.max,
                "{s:?}"
            );
        }
    }

    #[test]
    fn ecb_partial_block_is_an_error() {
        let engine = CpuEngine::new(Some(1)).unwrap();
        let key = Key::new(&[7u8; 16]).unwrap().expand();
        assert!(measure_engine(&engine, Mode::Ecb, &key, 100, &TINY).is_err());
    }

    /// A gcm stretch is sealed to exactly what the pipeline writes for the same plaintext
    /// under the same container (less the empty final GCM chunk's tag when the size is whole
    /// 16 KiB chunks: the stretch is then from the middle of a stream), in one pipeline chunk
    /// and in several, on one thread and on two.
    #[test]
    fn gcm_stretch_is_what_the_pipeline_seals() {
        let g = CHUNK_LEN;
        for (bits, threads) in [(16, 1), (32, 2)] {
            let engine = CpuEngine::new(Some(threads)).unwrap();
            // As measure_gcm: chunks side by side on as many workers as the engine's threads.
            let workers = (threads > 1).then(|| {
                rayon::ThreadPoolBuilder::new()
                    .num_threads(threads)
                    .build()
                    .unwrap()
            });
            let key = Key::new(&[9u8; 32][..bits]).unwrap();
            for batch in [g, 2 * g + 100, 1 << 20] {
                for (bytes, in_slots) in [1, 1000, g - 1, g, 3 * g, 3 * g + 5, 5 * g + 1]
                    .into_iter()
                    .flat_map(|bytes| [(bytes, false), (bytes, true)])
                {
                    let (opened, mut stretch) = gcm_stretch(&key, bytes, batch, in_slots);
                    let what =
                        format!("{bits} B key, batch {batch}, {bytes} B, in slots {in_slots}");
                    let full = gcm_batch(batch);
                    assert_eq!(stretch.chunks.len(), bytes.div_ceil(full), "{what}");
                    let plain = stretch_bytes(&stretch, true);
                    assert_eq!(plain.len(), bytes);
                    let mut buffers = buffer_addresses(&stretch);
                    let spec = opened.stream_spec(&engine, Direction::Encrypt);
                    assert_eq!(spec.chunk_size, full);
                    let mut whole = Vec::new();
                    pipeline::run(&spec, &mut &plain[..], &mut whole, &|_| {}).unwrap();
                    stretch.seal(&spec, workers.as_ref()).unwrap();
                    let sealed = stretch_bytes(&stretch, false);
                    assert_eq!(sealed.len(), bytes + bytes.div_ceil(g) * TAG_LEN, "{what}");
                    if bytes % g == 0 {
                        assert!(stretch.chunks.iter().all(|(_, c)| !c.last), "{what}");
                        assert_eq!(whole.len(), sealed.len() + TAG_LEN, "{what}");
                        assert!(whole.starts_with(&sealed), "{what}");
                    } else {
                        assert!(stretch.chunks.last().unwrap().1.last, "{what}");
                        assert!(whole == sealed, "{what}");
                    }
                    // Sealing again reuses the buffers: it times no allocation. An engine
                    // that runs the records job seals out of place into each worker thread's
                    // one spare buffer and swaps, so the buffers go round: at most one more
                    // per worker, and each worker's spare may be replaced once, the first time
                    // that thread seals a chunk this large (it kept a smaller one from an
                    // earlier stretch; which thread takes which chunk is up to timing).
                    for _ in 0..3 {
                        buffers.extend(buffer_addresses(&stretch));
                        stretch.seal(&spec, workers.as_ref()).unwrap();
                    }
                    buffers.extend(buffer_addresses(&stretch));
                    assert!(
                        buffers.len() <= stretch.chunks.len() + 2 * threads,
                        "{what}: reallocated ({} buffers for {} chunks)",
                        buffers.len(),
                        stretch.chunks.len()
                    );
                }
            }
        }
    }

    /// The gcm rows' workers seal one chunk at a time each, as `paraes enc`'s workers do: none
    /// starts a chunk while it waits for the engine's pool on another (which also held the
    /// pool and took a fresh spare buffer for the inner chunk), and both workers seal.
    #[test]
    fn gcm_workers_seal_one_chunk_at_a_time() {
        let engine = CpuEngine::new(Some(2)).unwrap();
        let workers = rayon::ThreadPoolBuilder::new()
            .num_threads(2)
            .build()
            .unwrap();
        let key = Key::new(&[5u8; 32]).unwrap();
        let (opened, mut stretch) = gcm_stretch(&key, 64 << 20, 1 << 20, false);
        let spec = opened.stream_spec(&engine, Direction::Encrypt);
        sealing::reset_most();
        for _ in 0..5 {
            stretch.seal(&spec, Some(&workers)).unwrap();
        }
        assert_eq!(
            sealing::most(),
            1,
            "a worker sealed chunks inside each other"
        );
    }

    /// Where the stretch's chunks' buffers are.
    fn buffer_addresses(stretch: &GcmStretch) -> std::collections::BTreeSet<usize> {
        stretch
            .chunks
            .iter()
            .map(|(_, c)| c.data.as_ptr() as usize)
            .collect()
    }

    #[test]
    fn gcm_times_are_positive_and_refuse_192_bits() {
        let engine = CpuEngine::new(Some(1)).unwrap();
        let key = Key::new(&[7u8; 32]).unwrap();
        for (bytes, batch) in [
            (CHUNK_LEN, 1 << 20),
            (4096, 1 << 20),
            (4 * CHUNK_LEN, CHUNK_LEN),
        ] {
            let s = measure_gcm(&engine, &key, bytes, batch, &TINY).unwrap();
            assert!(
                s.min > 0.0 && s.min <= s.median && s.median <= s.max,
                "{s:?}"
            );
        }
        let key = Key::new(&[7u8; 24]).unwrap();
        let err = measure_gcm(&engine, &key, CHUNK_LEN, 1 << 20, &TINY)
            .unwrap_err()
            .to_string();
        assert!(err.contains("192"), "{err}");
    }

    #[test]
    fn e2e_runs_the_pipeline() {
        let engine = CpuEngine::new(Some(1)).unwrap();
        let key = Key::new(&[7u8; 32]).unwrap();
        let s = measure_e2e(&engine, &key, 100_000, 1 << 16, &TINY).unwrap();
        assert!(
            s.min > 0.0 && s.min <= s.median && s.median <= s.max,
            "{s:?}"
        );
    }
}
