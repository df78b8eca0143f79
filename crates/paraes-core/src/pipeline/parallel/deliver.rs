//! Where a parallel run's workers hand their sealed or opened windows ([`Deliver`]): written at
//! their offsets by whichever worker is writing, or put back in order by the writer thread of a
//! stream ([`write_in_order`]); either way from the whole buffer, or from between the tags of
//! records opened in place ([`Shape`]).

use std::fs::File;
use std::io::{self, Write};
use std::os::unix::fs::FileExt;
use std::sync::mpsc::{Receiver, SyncSender};

use super::super::combined::Combined;
use super::super::placed::{InOrder, Placed};
use super::super::slots::{write_slots, write_slots_at};
use super::super::turns::Turn;
use super::super::{Chunk, PipelineError, StreamSpec};
use super::Run;

/// Where a window's output lies in its buffer once it is sealed or opened.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Shape {
    /// The whole buffer.
    Whole,
    /// The data slots of GCM chunk records opened in place, back to back: the tags between
    /// them are not written ([`crate::RecordsJob::data_slots`]).
    BetweenTags,
}

impl Shape {
    /// The output bytes of a window whose buffer is `data`.
    fn len(self, data: &[u8]) -> usize {
        match self {
            Shape::Whole => data.len(),
            Shape::BetweenTags => crate::RecordsJob::plaintext_len(data.len())
                .expect("records opened in place are records"),
        }
    }

    /// Writes the output of `data` to `file` at `offset`.
    fn write_at(self, file: &File, data: &[u8], offset: u64) -> io::Result<()> {
        match self {
            Shape::Whole => file.write_all_at(data, offset),
            Shape::BetweenTags => write_slots_at(file, data, offset),
        }
    }

    /// Writes the output of `data` to `output`.
    fn write(self, output: &mut (dyn Write + Send), data: &[u8]) -> io::Result<()> {
        match self {
            Shape::Whole => output.write_all(data),
            Shape::BetweenTags => write_slots(output, data),
        }
    }
}

/// Where workers hand their sealed or opened chunks.
#[derive(Clone)]
pub(super) enum Deliver<'a> {
    /// Written at their offsets by one worker at a time, whichever is writing when the chunk
    /// is ready ([`Combined`]), the buffer then back to the free list.
    At {
        file: &'a File,
        at: u64,
        /// Whether the writers take turns with other processes' ([`Turn`]).
        take_turns: bool,
        writes: &'a Combined<Chunk>,
        free: SyncSender<Vec<u8>>,
        placed: &'a Placed,
        shape: Shape,
    },
    /// To the writer thread (`None`: the run stopped).
    Queue(SyncSender<Option<Chunk>>),
}

impl Deliver<'_> {
    /// Hands `chunk` (sealed or opened; its index counts from the run's first) on; false when
    /// the writer of a stream has stopped (it says why).
    pub(super) fn hand_on(&self, spec: &StreamSpec<'_>, chunk: Chunk, run: &Run<'_>) -> bool {
        match self {
            Deliver::At {
                file,
                at,
                take_turns,
                writes,
                free,
                placed,
                shape,
            } => {
                writes.leave(chunk, |chunk| {
                    // After a failure nothing more is written; every buffer still goes back, so
                    // no worker waits for one.
                    if !run.stopped() {
                        let offset = at + chunk.index * spec.output_record_len() as u64;
                        let len = shape.len(&chunk.data);
                        let turn = take_turns.then(|| Turn::take(file));
                        let written = shape.write_at(file, &chunk.data, offset);
                        drop(turn);
                        let written = written
                            .map_err(PipelineError::Write)
                            .and_then(|()| placed.record(chunk.index, chunk.last, len));
                        match written {
                            Ok(()) => run.wrote(len),
                            Err(e) => run.fail(chunk.index, e),
                        }
                    }
                    let _ = free.send(chunk.data);
                });
                true
            }
            Deliver::Queue(done) => done.send(Some(chunk)).is_ok(),
        }
    }
}

/// The writer thread of a stream output: writes the workers' chunks (their output lies in
/// their buffers as `shape` says) in order of index, each buffer then back to the free list. It
/// stops at once, writing nothing more, when the run stops (a worker failed: the chunks it holds
/// wait for one that will never come) or a write fails.
pub(super) fn write_in_order(
    output: &mut (dyn Write + Send),
    done: Receiver<Option<Chunk>>,
    free: SyncSender<Vec<u8>>,
    run: &Run<'_>,
    (count, shape): (Option<u64>, Shape),
) -> InOrder {
    let mut order = InOrder::counted(count);
    for chunk in done {
        let Some(chunk) = chunk else {
            return order;
        };
        for chunk in order.arrived(chunk) {
            if let Err(e) = shape.write(output, &chunk.data) {
                run.fail(chunk.index, PipelineError::Write(e));
                return order;
            }
            run.wrote(shape.len(&chunk.data));
            let _ = free.send(chunk.data);
        }
    }
    if let Err(e) = output.flush() {
        run.fail(u64::MAX, PipelineError::Write(e));
    }
    order
}
