//! Where a parallel run's workers take their windows from ([`Feed`]): a file each worker reads
//! at its window's offset (`pread`; where the records job runs in place, a few records at a
//! time, each piece sealed or opened as soon as it is read, `preadv` straight into the data
//! slots of the records it seals to), or the reader thread of a stream, which cuts it in order
//! ([`read_in_order`], into the data slots too where they are sealed in place).

use std::fs::File;
use std::io::{self, Read};
use std::os::unix::fs::FileExt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, SyncSender};
use std::sync::Mutex;

use super::super::gcm::{crypt_read_in_place, sealed_len};
use super::super::reader::ChunkReader;
use super::super::slots::read_slots_at;
use super::super::{Chunk, PipelineError, StreamSpec};
use super::Run;
use crate::engine::{Direction, EngineError, RecordsJob};

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
        /// Whether each window is read into its records side (sealing: plaintext into the
        /// data slots of the records it seals to) and sealed or opened there as it is read,
        /// a few records at a time ([`crypt_read_in_place`]): then every chunk comes sealed or
        /// opened ([`Feed::crypts`]).
        in_place: bool,
        /// The stream's index of chunk 0 of the feed, which sealing needs.
        base: u64,
    },
    /// The reader thread's chunks, in order.
    Queue(Mutex<Receiver<io::Result<Chunk>>>),
}

impl Feed<'_> {
    /// Whether the chunks come sealed or opened already (read into their records side and
    /// crypted there a few records at a time, while the bytes are in the core's cache).
    pub(super) fn crypts(&self) -> bool {
        matches!(self, Feed::At { in_place: true, .. })
    }

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
                in_place,
                base,
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
                let read = if *in_place {
                    let records_len = match spec.direction {
                        Direction::Encrypt => sealed_len(chunk_len, last),
                        Direction::Decrypt => Some(chunk_len),
                    };
                    let Some(records_len) = records_len else {
                        let e = EngineError::Unsupported(format!(
                            "a window of {chunk_len} bytes is not whole GCM chunks"
                        ));
                        return Some(Err((index, PipelineError::Engine(e))));
                    };
                    data.resize(records_len, 0);
                    let mut chunk = Chunk {
                        index: base + index,
                        last,
                        data,
                    };
                    let crypted = crypt_read_in_place(spec, &mut chunk, |records, offset| {
                        let offset = at + start + offset;
                        match spec.direction {
                            Direction::Encrypt => {
                                read_slots_at(file, records, offset).map_err(eof_is_changed_size)
                            }
                            Direction::Decrypt => read_exactly_at(file, records, offset),
                        }
                    });
                    data = chunk.data;
                    crypted
                        .and_then(|()| size_kept(file, last, at + len).map_err(PipelineError::Read))
                } else {
                    data.resize(chunk_len, 0);
                    read_exactly_at(file, &mut data, at + start)
                        .and_then(|()| size_kept(file, last, at + len))
                        .map_err(PipelineError::Read)
                };
                match read {
                    Ok(()) => {
                        run.read.fetch_add(chunk_len as u64, Ordering::Relaxed);
                        Some(Ok(Chunk { index, last, data }))
                    }
                    Err(e) => Some(Err((index, e))),
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

/// Checks, once the `last` chunk is read and before it goes out, that the file still ends
/// where it ended when the run began: one that grew is refused, not cut short.
fn size_kept(file: &File, last: bool, end: u64) -> io::Result<()> {
    if !last || file.metadata()?.len() == end {
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
