//! Where a parallel run's workers take their windows from ([`Feed`]): a file each worker reads
//! at its window's offset (`pread`, or `preadv` straight into the data slots of the records it
//! seals in place), or the reader thread of a stream, which cuts it in order
//! ([`read_in_order`], into the data slots too where they are sealed in place).

use std::fs::File;
use std::io::{self, Read};
use std::os::unix::fs::FileExt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, SyncSender};
use std::sync::Mutex;

use super::super::gcm::sealed_len;
use super::super::reader::ChunkReader;
use super::super::slots::read_slots_at;
use super::super::{Chunk, PipelineError, StreamSpec};
use super::Run;
use crate::engine::{EngineError, RecordsJob};

/// Where workers take their chunks from.
pub(super) enum Feed<'a> {
    /// Each worker takes the next index and reads its chunk at its offset.
    At {
        file: &'a File,
        at: u64,
        len: u64,
        chunks: u64,
        ends_stream: bool,
        next: AtomicU64,
        free: &'a Mutex<Receiver<Vec<u8>>>,
        /// Whether each window's plaintext is read into the data slots of the records it
        /// seals to, for the records job in place ([`super::super::gcm::crypt_records_in_place`]).
        into_slots: bool,
    },
    /// The reader thread's chunks, in order.
    Queue(Mutex<Receiver<io::Result<Chunk>>>),
}

impl Feed<'_> {
    /// The next chunk to work on, `None` when there is none (or no buffer will come back:
    /// the run is ending). An error carries the index it happened at.
    pub(super) fn next(
        &self,
        spec: &StreamSpec<'_>,
        run: &Run<'_>,
    ) -> Option<Result<Chunk, (u64, PipelineError)>> {
        match self {
            Feed::At {
                file,
                at,
                len,
                chunks,
                ends_stream,
                next,
                free,
                into_slots,
            } => {
                // The buffer first, then the index: every index taken has a buffer, so the
                // writer's next chunk always comes.
                let mut data = free.lock().unwrap_or_else(|e| e.into_inner()).recv().ok()?;
                let index = next.fetch_add(1, Ordering::SeqCst);
                if index >= *chunks {
                    return None;
                }
                let record = spec.input_record_len() as u64;
                let start = index * record;
                let chunk_len = (len - start).min(record) as usize;
                let last = *ends_stream && index + 1 == *chunks;
                let read = if *into_slots {
                    let Some(records_len) = sealed_len(chunk_len, last) else {
                        let e = EngineError::Unsupported(format!(
                            "a window of {chunk_len} bytes is not whole GCM chunks"
                        ));
                        return Some(Err((index, PipelineError::Engine(e))));
                    };
                    data.resize(records_len, 0);
                    read_slots_at(file, &mut data, at + start).map_err(eof_is_changed_size)
                } else {
                    data.resize(chunk_len, 0);
                    read_exactly_at(file, &mut data, at + start)
                };
                let read = read.and_then(|()| {
                    if last {
                        same_size(file, at + len)
                    } else {
                        Ok(())
                    }
                });
                match read {
                    Ok(()) => {
                        run.read.fetch_add(chunk_len as u64, Ordering::Relaxed);
                        Some(Ok(Chunk { index, last, data }))
                    }
                    Err(e) => Some(Err((index, PipelineError::Read(e)))),
                }
            }
            Feed::Queue(chunks) => {
                match chunks
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .recv()
                    .ok()?
                {
                    Ok(chunk) => Some(Ok(chunk)),
                    // A read error comes after every chunk read before it.
                    Err(e) => Some(Err((u64::MAX, PipelineError::Read(e)))),
                }
            }
        }
    }
}

/// Reads exactly `buf.len()` bytes of `file` at `offset`; a file that ends first shrank while
/// it was read.
fn read_exactly_at(file: &File, buf: &mut [u8], offset: u64) -> io::Result<()> {
    file.read_exact_at(buf, offset).map_err(eof_is_changed_size)
}

/// A read of a file that ended before the range it was sized for: it shrank.
fn eof_is_changed_size(e: io::Error) -> io::Error {
    if e.kind() == io::ErrorKind::UnexpectedEof {
        changed_size()
    } else {
        e
    }
}

/// Checks, once the last chunk is read and before it goes out, that the file still ends where
/// it ended when the run began: one that grew is refused, not cut short.
fn same_size(file: &File, end: u64) -> io::Result<()> {
    if file.metadata()?.len() == end {
        Ok(())
    } else {
        Err(changed_size())
    }
}

fn changed_size() -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        "the input changed size while it was being read",
    )
}

/// The reader thread of a stream input: cuts it into chunks, in order, into buffers from the
/// free list, until it ends, fails, or no buffer comes back (the run is ending).
pub(super) fn read_in_order(
    spec: &StreamSpec<'_>,
    (input, into_slots): (&mut (dyn Read + Send), bool),
    free: &Mutex<Receiver<Vec<u8>>>,
    chunks: &SyncSender<io::Result<Chunk>>,
    run: &Run<'_>,
) {
    let reader = ChunkReader::new(spec, input);
    let mut reader = if into_slots {
        reader.into_slots()
    } else {
        reader
    };
    while !run.stopped() {
        let Ok(buf) = free.lock().unwrap_or_else(|e| e.into_inner()).recv() else {
            return;
        };
        match reader.next_chunk(buf) {
            Ok(Some(chunk)) => {
                let read = match into_slots {
                    true => RecordsJob::plaintext_len(chunk.data.len()).expect("records"),
                    false => chunk.data.len(),
                };
                run.read.fetch_add(read as u64, Ordering::Relaxed);
                if chunks.send(Ok(chunk)).is_err() {
                    return;
                }
            }
            Ok(None) => return,
            Err(e) => {
                let _ = chunks.send(Err(e));
                return;
            }
        }
    }
}
