//! Many chunks in flight ([`run_parallel`]): worker threads that each take a whole window of a
//! stream's chunks at a time, seal or open it (out of place where the engine runs the records
//! job) and deliver it, so reading, AES, the tags and writing all spread over the cores. Where
//! the input is a regular file each worker reads its own windows at their offsets (`pread`);
//! where the output is a file paraes created the windows are written at their offsets
//! (`pwrite`) by one worker at a time, whichever is writing when a window is ready
//! ([`super::combined`]: the file system writes one at a time anyway). A stream is
//! read in order by one reader thread, and written in order by one writer thread that puts the
//! chunks back in order by index. Memory stays at [`Workers::buffers`] windows in flight, plus
//! one spare output buffer per worker where the engine runs the records job.

use std::fs::File;
use std::io::{Read, Write};
use std::os::unix::fs::FileExt;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::sync_channel;
use std::sync::Mutex;

use super::combined::Combined;
use super::placed::Placed;
use super::turns::Turn;
use super::{gcm, Chunk, PipelineError, Segment, StreamSpec, Tags};
use crate::engine::Direction;
use crate::engine::EngineError;

mod deliver;
mod feed;

use deliver::{write_in_order, Deliver, Shape};
use feed::{read_in_order, Feed};

/// The least a worker reads or writes at once: a window of whole pipeline chunks of at least
/// this many bytes (a v2 stream's chunks keep their format's size, each with its tag), or less
/// for an input too short to give every worker a window of it ([`Workers::for_input`]).
pub const WINDOW: usize = 4 << 20;

/// Windows of an input too short for windows of [`WINDOW`] for every worker, per worker: a
/// worker that starts late (woken late, on a busy machine) just takes fewer of them.
const WINDOWS_PER_WORKER: usize = 4;

/// The least a worker takes of an input too short for windows of [`WINDOW`] for every
/// worker: one piece of records read and crypted at once (16 GCM chunks).
const LEAST_WINDOW: usize = 256 << 10;

/// Where a parallel run's input comes from.
pub enum Source<'a> {
    /// `len` bytes of a regular file from byte `at`: each worker reads its own windows at their
    /// offsets. A file that is shorter or longer than that when read is refused.
    At {
        /// The file.
        file: &'a File,
        /// Where the stream's first chunk starts.
        at: u64,
        /// The stream's length.
        len: u64,
    },
    /// A stream, read in order by one reader thread.
    Stream(&'a mut (dyn Read + Send)),
}

/// Where a parallel run's output goes.
pub enum Sink<'a> {
    /// A file paraes created (nobody else writes it): the windows are written at their offsets
    /// from byte `at`, one at a time, by whichever worker is writing.
    At {
        /// The file.
        file: &'a File,
        /// Where the stream's first chunk goes.
        at: u64,
        /// Whether its writers take turns ([`super::turns`]): set where other processes on
        /// this machine write the same file at the same time (MPI ranks on one node).
        take_turns: bool,
    },
    /// A stream (standard output, a pipe, a device, a file opened for appending), written in
    /// order by one writer thread.
    Stream(&'a mut (dyn Write + Send)),
}

/// How many workers a parallel run has and how much each takes at once.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Workers {
    /// Worker threads (at least one).
    pub threads: usize,
    /// The least bytes of input a worker takes at once ([`WINDOW`]; tests take less).
    pub window: usize,
}

impl Workers {
    /// `threads` workers taking [`WINDOW`] bytes at once.
    pub fn new(threads: usize) -> Self {
        Workers {
            threads: threads.max(1),
            window: WINDOW,
        }
    }

    /// Windows in flight at most: one at each worker and two more (read ahead, or waiting for
    /// the writer).
    pub fn buffers(&self) -> usize {
        self.threads + 2
    }

    /// These workers for an input of `len` bytes: windows small enough that every worker has
    /// one (down to [`LEAST_WINDOW`]), so that a file shorter than a window for each worker is
    /// not sealed by fewer of them than it could be. The windows cut nothing the output shows.
    pub fn for_input(self, len: u64) -> Self {
        let windows = (self.threads * WINDOWS_PER_WORKER) as u64;
        let share = usize::try_from(len.div_ceil(windows)).unwrap_or(usize::MAX);
        let window = self.window.min(share.max(LEAST_WINDOW));
        Workers { window, ..self }
    }

    /// These workers for windows of `record` bytes: fewer where a window is larger than
    /// [`WINDOW`] (a large `--chunk-size`, or a v2 file whose header declares large chunks), so
    /// that their windows take no more memory than `threads` windows of [`WINDOW`] would (and
    /// one worker at least).
    pub fn for_record(self, record: usize) -> Self {
        let threads = match record.div_ceil(WINDOW) {
            0 | 1 => self.threads,
            windows => (self.threads / windows).max(1),
        };
        Workers { threads, ..self }
    }
}

/// What a parallel run read and wrote.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Ran {
    /// Bytes of input.
    pub read: u64,
    /// Bytes of output.
    pub written: u64,
}

/// Runs the whole stream `spec` from `source` to `sink` on `workers`; `progress` is called
/// with the output bytes written so far. The output is byte for byte what [`super::run`]
/// writes, whatever the number of workers and however each end is reached; decryption hands
/// a chunk on only after its tags verified, and a stream output is written in order, so on an
/// error it holds only chunks before the first that failed. On a [`Sink::At`] every window's
/// range is checked to have been written exactly once before this returns.
pub fn run_parallel(
    spec: &StreamSpec<'_>,
    source: Source<'_>,
    sink: Sink<'_>,
    workers: Workers,
    progress: &(dyn Fn(u64) + Sync),
) -> Result<Ran, PipelineError> {
    run_parallel_segment(spec, Segment::WHOLE, source, sink, workers, progress)
}

/// [`run_parallel`] of the chunks of `segment` (indices of `spec`'s chunks), which a
/// [`Source::At`] holds (`len` bytes: whole records where the segment does not end the
/// stream): the output is those chunks' output, in order, from the sink's start; no chunk is
/// marked last unless the segment ends the stream. A segment whose first chunk is not on a
/// window's boundary runs its chunks up to the next boundary first, on smaller windows, so the
/// rest runs on whole windows.
pub fn run_parallel_segment(
    spec: &StreamSpec<'_>,
    segment: Segment,
    source: Source<'_>,
    mut sink: Sink<'_>,
    workers: Workers,
    progress: &(dyn Fn(u64) + Sync),
) -> Result<Ran, PipelineError> {
    spec.check()?;
    let first = segment.first_index;
    let aligned = first.next_multiple_of(chunks_per_window(spec, workers.window));
    let head_len = (aligned - first) * spec.input_record_len() as u64;
    match source {
        Source::At { file, at, len } if aligned != first && head_len < len => {
            let head = Segment {
                first_index: first,
                ends_stream: false,
            };
            let rest = Segment {
                first_index: aligned,
                ..segment
            };
            let head_source = Source::At {
                file,
                at,
                len: head_len,
            };
            let head = run_windows(spec, head, head_source, sink.reborrow(0), workers, progress)?;
            let rest_source = Source::At {
                file,
                at: at + head_len,
                len: len - head_len,
            };
            let rest_progress = |n| progress(head.written + n);
            let rest = run_windows(
                spec,
                rest,
                rest_source,
                sink.reborrow(head.written),
                workers,
                &rest_progress,
            )?;
            Ok(Ran {
                read: head.read + rest.read,
                written: head.written + rest.written,
            })
        }
        source => run_windows(spec, segment, source, sink, workers, progress),
    }
}

impl Sink<'_> {
    /// Writes `bytes` at `skip` bytes past the sink's start (a stream: where it stands).
    pub(crate) fn write_at(&mut self, skip: u64, bytes: &[u8]) -> Result<(), PipelineError> {
        match self {
            Sink::At {
                file,
                at,
                take_turns,
            } => {
                let _turn = take_turns.then(|| Turn::take(file));
                file.write_all_at(bytes, *at + skip)
            }
            Sink::Stream(output) => output.write_all(bytes),
        }
        .map_err(PipelineError::Write)
    }

    /// This sink again, from `skip` bytes past its start (a stream: where it stands).
    pub(crate) fn reborrow(&mut self, skip: u64) -> Sink<'_> {
        match self {
            Sink::At {
                file,
                at,
                take_turns,
            } => Sink::At {
                file,
                at: *at + skip,
                take_turns: *take_turns,
            },
            Sink::Stream(output) => Sink::Stream(&mut **output),
        }
    }
}

/// The body of [`run_parallel_segment`]: the chunks of `segment` on windows as large as its
/// first index allows.
fn run_windows(
    spec: &StreamSpec<'_>,
    segment: Segment,
    source: Source<'_>,
    sink: Sink<'_>,
    workers: Workers,
    progress: &(dyn Fn(u64) + Sync),
) -> Result<Ran, PipelineError> {
    let (spec, first_index, workers) = match &source {
        Source::At { len, .. } => {
            let shrunk = workers.for_input(*len);
            let (spec, first_index) = finer_for(spec, segment.first_index, shrunk, workers);
            (spec, first_index, shrunk)
        }
        Source::Stream(_) => (StreamSpec { ..*spec }, segment.first_index, workers),
    };
    let (windowed, base) = windowed(&spec, workers.window, first_index);
    let spec = &windowed;
    let workers = workers_for(spec, workers);
    // A segment that does not end the stream is whole records: its chunk count is known.
    let count = match (&source, segment.ends_stream) {
        (_, true) => None,
        (Source::At { len, .. }, false) => Some(len.div_ceil(spec.input_record_len() as u64)),
        (Source::Stream(_), false) => {
            return Err(PipelineError::Engine(EngineError::Unsupported(
                "a part of a stream runs in parallel only from a file read at offsets".into(),
            )))
        }
    };
    // Where the engine runs the records job in place, a window to seal is read (from a file
    // or a stream) into its records' data slots and sealed there, and every opened window is
    // written from between its tags: no pass copies a window from one buffer to another. A
    // file's window is read and crypted a few records at a time, on its worker's core, while
    // the bytes just read are in its cache ([`Feed::crypts`]).
    let in_place = spec.runs_records_in_place();
    let into_slots = in_place && spec.direction == Direction::Encrypt;
    let shape = match spec.direction {
        Direction::Decrypt if in_place => Shape::BetweenTags,
        _ => Shape::Whole,
    };
    let buffers = workers.buffers();
    let (free_tx, free_rx) = sync_channel::<Vec<u8>>(buffers);
    for _ in 0..buffers {
        free_tx.send(Vec::new()).expect("room for every buffer");
    }
    let free_rx = Mutex::new(free_rx);
    let run = Run {
        stop: AtomicBool::new(false),
        failure: Mutex::new(None),
        written: AtomicU64::new(0),
        read: AtomicU64::new(0),
        progress,
        showing: Mutex::new(()),
    };
    let placed = match &sink {
        Sink::At { .. } => Some(match count {
            Some(count) => Placed::counted(spec.output_record_len(), count),
            None => Placed::new(spec.output_record_len()),
        }),
        Sink::Stream(_) => None,
    };
    let (feed, reading) = match source {
        Source::At { file, at, len } => {
            let feed = Feed::At {
                file,
                at,
                len,
                chunks: count.unwrap_or_else(|| spec.chunk_count(len)),
                ends_stream: segment.ends_stream,
                next: AtomicU64::new(0),
                free: &free_rx,
                in_place,
                base,
            };
            (feed, None)
        }
        Source::Stream(input) => {
            let (chunks_tx, chunks_rx) = sync_channel(buffers + 2);
            (Feed::Queue(Mutex::new(chunks_rx)), Some((input, chunks_tx)))
        }
    };
    let writes = Combined::new();
    let written_in_order = std::thread::scope(|scope| {
        if let Some((input, chunks_tx)) = reading {
            let (run, free_rx) = (&run, &free_rx);
            scope.spawn(move || read_in_order(spec, (input, into_slots), free_rx, &chunks_tx, run));
        }
        let (deliver, writer) = match sink {
            Sink::At {
                file,
                at,
                take_turns,
            } => (
                Deliver::At {
                    file,
                    at,
                    take_turns,
                    writes: &writes,
                    free: free_tx,
                    placed: placed.as_ref().expect("a placed output is tracked"),
                    shape,
                },
                None,
            ),
            Sink::Stream(output) => {
                // Room for every buffer's chunk and each worker's word that the run stopped, so
                // no send ever waits.
                let (done_tx, done_rx) = sync_channel::<Option<Chunk>>(buffers + workers.threads);
                let run = &run;
                let writer = scope
                    .spawn(move || write_in_order(output, done_rx, free_tx, run, (count, shape)));
                (Deliver::Queue(done_tx), Some(writer))
            }
        };
        let (feed, run) = (&feed, &run);
        for _ in 0..workers.threads {
            let deliver = deliver.clone();
            scope.spawn(move || {
                // However the worker ends early (an error, a panic), the run stops, and the
                // writer hears it and lets go of the windows it holds for an index that will
                // never come, so every thread ends.
                let mut stopper = Stopper {
                    run,
                    deliver: &deliver,
                    finished: false,
                };
                stopper.finished = work(spec, (base, in_place), feed, &deliver, run);
            });
        }
        drop(deliver);
        writer.map(|writer| {
            writer
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
        })
    });
    if let Some((_, e)) = run.failure.into_inner().unwrap_or_else(|e| e.into_inner()) {
        return Err(e);
    }
    if let Some(order) = written_in_order {
        order.check()?;
    }
    if let Some(placed) = placed {
        placed.check()?;
    }
    Ok(Ran {
        read: run.read.into_inner(),
        written: run.written.into_inner(),
    })
}

/// The workers of a run of `spec` (its pipeline chunks a window each): fewer where a window is
/// larger than [`WINDOW`] ([`Workers::for_record`]), judged by its chunks' bytes, not its tags:
/// a decrypting window's input is the encrypting one's and its tags, a little over [`WINDOW`]
/// (judged by that, decryption ran on half the workers).
pub(super) fn workers_for(spec: &StreamSpec<'_>, workers: Workers) -> Workers {
    workers.for_record(spec.chunk_size)
}

/// How many of `spec`'s chunks make a pipeline chunk of at least `window` bytes where the
/// chunk size is not the format's (a v2 stream's chunk carries its tag): a GCM stream's batch
/// or a raw stream's chunk changes where the pipeline cuts, never the bytes it writes.
fn chunks_per_window(spec: &StreamSpec<'_>, window: usize) -> u64 {
    match spec.tags {
        Tags::Chunk(_) => 1,
        Tags::None | Tags::Gcm(_) => window.div_ceil(spec.chunk_size).max(1) as u64,
    }
}

/// `spec`, and a segment's `first_index` in its chunks, for `shrunk`, the windows of `workers`
/// for a short input ([`Workers::for_input`]). A GCM stream's batch changes where the pipeline
/// cuts, never the bytes it writes: where the window shrank below it (a short file in batches
/// of the default `--chunk-size`, 1 MiB), the stream is cut from single GCM chunks, or the file
/// would still go to one worker as one batch.
fn finer_for<'a>(
    spec: &StreamSpec<'a>,
    first_index: u64,
    shrunk: Workers,
    workers: Workers,
) -> (StreamSpec<'a>, u64) {
    match spec.tags {
        Tags::Gcm(_) if shrunk.window < workers.window.min(spec.chunk_size) => {
            let finer = StreamSpec {
                chunk_size: crate::engine::GCM_CHUNK_LEN,
                ..*spec
            };
            let per_batch = spec.gcm_per_chunk() as u64;
            (finer, first_index.saturating_mul(per_batch))
        }
        _ => (StreamSpec { ..*spec }, first_index),
    }
}

/// `spec` with pipeline chunks of [`chunks_per_window`] of its chunks, or of fewer where
/// `first_index` (of `spec`'s chunks) is not a multiple of that (the largest count up to it
/// that divides `first_index`), and the index of the first pipeline chunk of a segment from
/// `first_index`. Not the greatest common divisor of the two: a window that
/// [`Workers::for_input`] shrank to a count prime to a segment's first index (a window
/// boundary of the full window) would cut that segment into windows of one chunk each.
fn windowed<'a>(spec: &StreamSpec<'a>, window: usize, first_index: u64) -> (StreamSpec<'a>, u64) {
    let most = chunks_per_window(spec, window);
    let per_window = match first_index {
        0 => most,
        _ => (1..=most)
            .rev()
            .find(|count| first_index.is_multiple_of(*count))
            .unwrap_or(1),
    };
    let spec = StreamSpec {
        chunk_size: spec.chunk_size * per_window as usize,
        ..*spec
    };
    (spec, first_index / per_window)
}

/// What the threads of one run share.
struct Run<'p> {
    /// Set on the first failure: no worker takes another chunk.
    stop: AtomicBool,
    /// The failure at the lowest chunk index (workers take chunks in order, so every chunk
    /// before it was processed: it is the one a run in order reports).
    failure: Mutex<Option<(u64, PipelineError)>>,
    written: AtomicU64,
    read: AtomicU64,
    progress: &'p (dyn Fn(u64) + Sync),
    /// Held while the written count moves and is shown, so the display never goes back.
    showing: Mutex<()>,
}

impl Run<'_> {
    fn fail(&self, index: u64, e: PipelineError) {
        self.stop.store(true, Ordering::SeqCst);
        let mut failure = self.failure.lock().unwrap_or_else(|e| e.into_inner());
        if failure.as_ref().is_none_or(|(first, _)| index < *first) {
            *failure = Some((index, e));
        }
    }

    fn stopped(&self) -> bool {
        self.stop.load(Ordering::SeqCst)
    }

    fn wrote(&self, bytes: usize) {
        let _turn = self.showing.lock().unwrap_or_else(|e| e.into_inner());
        let total = self.written.fetch_add(bytes as u64, Ordering::Relaxed) + bytes as u64;
        (self.progress)(total);
    }
}

/// Stops the run when its worker ends other than at the end of the input (a failure, or a
/// panic unwinding through it), telling the writer of a stream.
struct Stopper<'r, 'a, 'p> {
    run: &'r Run<'p>,
    deliver: &'r Deliver<'a>,
    finished: bool,
}

impl Drop for Stopper<'_, '_, '_> {
    fn drop(&mut self) {
        if self.finished {
            return;
        }
        self.run.stop.store(true, Ordering::SeqCst);
        if let Deliver::Queue(done) = self.deliver {
            let _ = done.send(None);
        }
    }
}

/// A worker: takes chunks, seals or opens them, delivers them, until the input ends (returns
/// true) or the run fails or stops (false).
/// Chunk indices from `feed` count from the run's first chunk; the stream's index of each is
/// `base` more. Where the engine runs the records job `in_place`, every window is sealed
/// (read into its records' data slots) or opened in place.
fn work(
    spec: &StreamSpec<'_>,
    (base, in_place): (u64, bool),
    feed: &Feed<'_>,
    deliver: &Deliver<'_>,
    run: &Run<'_>,
) -> bool {
    while !run.stopped() {
        let mut chunk = match feed.next(spec, run) {
            None => return !run.stopped(),
            Some(Ok(chunk)) => chunk,
            Some(Err((index, e))) => {
                run.fail(index, e);
                return false;
            }
        };
        chunk.index += base;
        let crypted = match spec.direction {
            _ if feed.crypts() => Ok(()),
            _ if in_place => gcm::crypt_records_in_place(spec, &mut chunk),
            Direction::Encrypt => super::seal(spec, &mut chunk),
            Direction::Decrypt => super::open(spec, &mut chunk),
        };
        chunk.index -= base;
        if let Err(e) = crypted {
            run.fail(chunk.index, e);
            return false;
        }
        if !deliver.hand_on(spec, chunk, run) {
            // The writer stopped; it says why.
            return false;
        }
    }
    false
}
