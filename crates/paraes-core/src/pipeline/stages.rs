//! Running a stream: the reader, the engine's stage(s) and the writer on threads of their own
//! over a fixed pool of buffers ([`Stages::Threaded`]), or the same steps chunk by chunk on the
//! calling thread ([`Stages::InTurn`]).

use std::io::{self, Read, Write};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};

use super::reader::ChunkReader;
use super::{gcm, steps};
use super::{Chunk, PipelineError, Segment, Stages, StreamSpec, Tags, BUFFERS};
use crate::engine::Direction;

/// Runs the stream `spec` from `input` to `output`; returns the number of bytes written.
/// `progress` is called with the output bytes written so far.
pub fn run(
    spec: &StreamSpec<'_>,
    input: &mut (impl Read + Send),
    output: &mut (impl Write + Send),
    progress: &(dyn Fn(u64) + Sync),
) -> Result<u64, PipelineError> {
    run_segment(
        spec,
        Segment::WHOLE,
        Stages::Threaded,
        input,
        output,
        progress,
    )
}

/// Runs `segment` of the stream `spec`: `input` holds exactly the segment's input records and
/// `output` receives its output records (e.g. [`crate::positioned::ReadAt`] and
/// [`crate::positioned::WriteAt`] over the segment's ranges of shared files). Returns the bytes
/// written; `progress` is called with the output bytes written so far. Segments of a stream run
/// separately and concatenated give exactly what [`run`] gives for the whole stream, whichever
/// [`Stages`] run them.
pub fn run_segment(
    spec: &StreamSpec<'_>,
    segment: Segment,
    stages: Stages,
    input: &mut (impl Read + Send),
    output: &mut (impl Write + Send),
    progress: &(dyn Fn(u64) + Sync),
) -> Result<u64, PipelineError> {
    spec.check()?;
    if stages == Stages::InTurn {
        return run_in_turn(spec, segment, input, output, progress);
    }
    // Where the engine runs the records job, its stage keeps one of the buffers as the output
    // of its out-of-place job, so the free list holds one fewer: the run holds BUFFERS buffers
    // (the reader keeps one of its own) either way.
    let records = spec.runs_records();
    let (free_tx, free_rx) = sync_channel::<Vec<u8>>(BUFFERS);
    for _ in 0..BUFFERS - 1 - usize::from(records) {
        free_tx
            .send(spec.new_buffer())
            .expect("the free list holds all buffers");
    }
    let (read_tx, read_rx) = sync_channel::<Result<Chunk, io::Error>>(1);
    let (done_tx, done_rx) = sync_channel::<Chunk>(1);
    let read = read_rx
        .into_iter()
        .map(|chunk| chunk.map_err(PipelineError::Read));

    std::thread::scope(|scope| {
        let reader = ChunkReader::segment(spec, segment, input);
        scope.spawn(move || read_chunks(reader, &free_rx, &read_tx));
        let writer = scope.spawn(move || write_chunks(output, done_rx, free_tx, progress));
        let worked = if records {
            // One stage: the engine seals or opens whole records, tags and all.
            let mut spare = spec.new_buffer();
            run_stage(segment, read, done_tx, |chunk| {
                gcm::crypt_records(spec, chunk, &mut spare)
            })
        } else if let Tags::None = spec.tags {
            run_stage(segment, read, done_tx, |chunk| {
                steps::crypt_chunk(spec, chunk)
            })
        } else {
            // Authentication runs in its own stage, so one chunk's tag is computed while the
            // next chunk is encrypted: on a two-core machine that hides most of the MAC's cost.
            let (mid_tx, mid_rx) = sync_channel::<Chunk>(1);
            let mid = mid_rx.into_iter().map(Ok);
            let (first_step, second_step): (Step, Step) = match spec.direction {
                Direction::Encrypt => (steps::crypt_chunk, steps::tag_chunk),
                Direction::Decrypt => (steps::verify_tags, steps::crypt_chunk),
            };
            let first = scope
                .spawn(move || run_stage(segment, read, mid_tx, |chunk| first_step(spec, chunk)));
            let second = run_stage(segment, mid, done_tx, |chunk| second_step(spec, chunk));
            join(first).and(second)
        };
        // Every stage has dropped its queues, so the reader and writer stop on their own.
        let written = join(writer);
        worked?;
        written
    })
}

/// One step of a chunk's way through a stage.
type Step = fn(&StreamSpec<'_>, &mut Chunk) -> Result<(), PipelineError>;

/// [`Stages::InTurn`]: each chunk read, sealed or opened, and written before the next (two
/// buffers, and a third as the output of the engine's records job where it runs it).
fn run_in_turn(
    spec: &StreamSpec<'_>,
    segment: Segment,
    input: &mut impl Read,
    output: &mut impl Write,
    progress: &(dyn Fn(u64) + Sync),
) -> Result<u64, PipelineError> {
    let records = spec.runs_records();
    let mut reader = ChunkReader::segment(spec, segment, input);
    let mut buf = spec.new_buffer();
    let mut spare = spec.new_buffer();
    let mut written = 0u64;
    while let Some(mut chunk) = reader.next_chunk(buf).map_err(PipelineError::Read)? {
        match (records, spec.direction) {
            (true, _) => gcm::crypt_records(spec, &mut chunk, &mut spare)?,
            (false, Direction::Encrypt) => steps::seal(spec, &mut chunk)?,
            (false, Direction::Decrypt) => steps::open(spec, &mut chunk)?,
        }
        output
            .write_all(&chunk.data)
            .map_err(PipelineError::Write)?;
        written += chunk.data.len() as u64;
        progress(written);
        buf = chunk.data;
    }
    output.flush().map_err(PipelineError::Write)?;
    Ok(written)
}

/// The result of a finished pipeline thread (a panic goes on unwinding).
fn join<T>(handle: std::thread::ScopedJoinHandle<'_, T>) -> T {
    handle
        .join()
        .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
}

/// Applies `step` to each chunk of `input` and passes it on. The input of a segment that ends the
/// stream must end with the chunk marked last; a stage whose output is closed stops quietly (the
/// writer reports why).
fn run_stage(
    segment: Segment,
    input: impl Iterator<Item = Result<Chunk, PipelineError>>,
    output: SyncSender<Chunk>,
    mut step: impl FnMut(&mut Chunk) -> Result<(), PipelineError>,
) -> Result<(), PipelineError> {
    let mut next_index = segment.first_index;
    for chunk in input {
        let mut chunk = chunk?;
        step(&mut chunk)?;
        let last = chunk.last;
        next_index = chunk.index + 1;
        if output.send(chunk).is_err() || last {
            return Ok(());
        }
    }
    if segment.ends_stream {
        Err(PipelineError::Truncated(next_index))
    } else {
        Ok(())
    }
}

/// Feeds the pipeline from `reader`, with buffers from the free list.
fn read_chunks(
    mut reader: ChunkReader<'_, impl Read>,
    free: &Receiver<Vec<u8>>,
    work: &SyncSender<Result<Chunk, io::Error>>,
) {
    while let Ok(buf) = free.recv() {
        match reader.next_chunk(buf) {
            Ok(Some(chunk)) => {
                if work.send(Ok(chunk)).is_err() {
                    return;
                }
            }
            Ok(None) => return,
            Err(e) => {
                let _ = work.send(Err(e));
                return;
            }
        }
    }
}

/// Writes chunks in order and returns their buffers to the free list.
fn write_chunks(
    output: &mut impl Write,
    done: Receiver<Chunk>,
    free: SyncSender<Vec<u8>>,
    progress: &(dyn Fn(u64) + Sync),
) -> Result<u64, PipelineError> {
    let mut written = 0u64;
    for chunk in done {
        output
            .write_all(&chunk.data)
            .map_err(PipelineError::Write)?;
        written += chunk.data.len() as u64;
        progress(written);
        let _ = free.send(chunk.data);
    }
    output.flush().map_err(PipelineError::Write)?;
    Ok(written)
}
