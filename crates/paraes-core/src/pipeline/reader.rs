//! Cutting an input into the records of a stream ([`ChunkReader`]), each chunk knowing whether
//! it is the last, into buffers that grow only as far as the input goes: back to back, or (for
//! sealing a GCM chunk stream in place) into the data slots of the records each chunk seals to.

use std::io::{self, IoSliceMut, Read};

use super::gcm::sealed_len;
use super::{Chunk, Segment, StreamSpec};
use crate::engine::{GCM_CHUNK_LEN, GCM_RECORD_LEN};

/// Cuts an input into the records of a stream. A full record is held back until the next read
/// shows whether more input follows, so every chunk comes out knowing whether it is the last;
/// the final chunk may be short or empty (see [`StreamSpec::last_chunk_short`]). A reader of a
/// [`Segment`] that does not end the stream numbers its chunks from the segment's first index,
/// marks none last, and refuses input that is not whole records.
pub struct ChunkReader<'a, R: ?Sized> {
    input: &'a mut R,
    record_len: usize,
    last_short: bool,
    ends_stream: bool,
    next_index: u64,
    held: Option<Vec<u8>>,
    final_record: Option<Vec<u8>>,
    finished: bool,
    /// Whether each chunk is read into the data slots of the GCM chunk records it seals to
    /// ([`ChunkReader::into_slots`]).
    slots: bool,
}

impl<'a, R: Read + ?Sized> ChunkReader<'a, R> {
    /// A reader of `input` cut into the input records of `spec`.
    pub fn new(spec: &StreamSpec<'_>, input: &'a mut R) -> Self {
        Self::segment(spec, Segment::WHOLE, input)
    }

    /// A reader of `input`, the input records of `segment` of `spec`'s stream.
    pub fn segment(spec: &StreamSpec<'_>, segment: Segment, input: &'a mut R) -> Self {
        ChunkReader {
            input,
            record_len: spec.input_record_len(),
            last_short: spec.last_chunk_short(),
            ends_stream: segment.ends_stream,
            next_index: segment.first_index,
            held: None,
            final_record: None,
            finished: false,
            slots: false,
        }
    }

    /// This reader, reading each chunk of a GCM chunk stream being sealed into the data slots of
    /// the records it seals to ([`super::sealed_len`] bytes: each 16 KiB of plaintext followed
    /// by room for its tag), for [`super::seal_in_place`]; the chunks' lengths are then their
    /// records'. Its records must be whole GCM chunks (a GCM chunk stream's are, as
    /// [`StreamSpec::check`] requires): any other size panics here, in every build, rather
    /// than cut a stream short where a buffer could not grow.
    pub(super) fn into_slots(self) -> Self {
        assert!(
            self.record_len.is_multiple_of(GCM_CHUNK_LEN),
            "records of {} bytes are not whole GCM chunks",
            self.record_len
        );
        ChunkReader {
            slots: true,
            ..self
        }
    }

    /// The next chunk, read into `buf` (whose allocation is reused); `None` after the last one.
    /// The reader keeps one buffer of its own for the record it holds back.
    pub fn next_chunk(&mut self, mut buf: Vec<u8>) -> io::Result<Option<Chunk>> {
        if let Some(last) = self.final_record.take() {
            return Ok(Some(self.emit(last, true)));
        }
        if self.finished {
            return Ok(None);
        }
        loop {
            let filled = fill(self.input, &mut buf, self.record_len, self.slots)?;
            if filled == self.record_len {
                match self.held.replace(buf) {
                    Some(previous) => return Ok(Some(self.emit(previous, false))),
                    None => {
                        buf = Vec::new();
                        continue;
                    }
                }
            }
            // End of input: `buf` is the short (possibly empty) final record.
            self.finished = true;
            if !self.ends_stream {
                if filled > 0 {
                    return Err(io::Error::new(
                        io::ErrorKind::UnexpectedEof,
                        "the input ended inside a chunk",
                    ));
                }
                let held = self.held.take();
                return Ok(held.map(|previous| self.emit(previous, false)));
            }
            let chunk = match self.held.take() {
                Some(previous) if self.last_short || filled > 0 => {
                    self.final_record = Some(buf);
                    self.emit(previous, false)
                }
                Some(previous) => self.emit(previous, true),
                None => self.emit(buf, true),
            };
            return Ok(Some(chunk));
        }
    }

    fn emit(&mut self, data: Vec<u8>, last: bool) -> Chunk {
        let index = self.next_index;
        self.next_index += 1;
        Chunk { index, last, data }
    }
}

/// The first size a fresh buffer grows to when it is filled.
const FIRST_FILL: usize = 64 << 10;

/// Reads until `buf` holds `len` bytes of input or the input ends; returns how many it holds.
/// Back to back, `buf` is then that long; in `slots` (see [`ChunkReader::into_slots`]), it is
/// the records' length, the input's byte `p` at `p + 16 * (p / 16 KiB)`. The buffer keeps its
/// length between uses, so a recycled buffer is not zeroed again: only its first use touches
/// fresh memory. A fresh buffer grows by doubling, from [`FIRST_FILL`], only while the input
/// goes on: a 4 KiB file takes 64 KiB, not a chunk (up to 64 MiB, as a hostile header may
/// declare).
fn fill<R: Read + ?Sized>(
    input: &mut R,
    buf: &mut Vec<u8>,
    len: usize,
    slots: bool,
) -> io::Result<usize> {
    // What the buffer holds, and the buffer that holds `room` bytes of input (in slots, whole
    // records: every room is whole GCM chunks).
    let room_of = |buf_len: usize| match slots {
        false => buf_len,
        true => buf_len / GCM_RECORD_LEN * GCM_CHUNK_LEN,
    };
    let buf_len_of = |room: usize| match slots {
        false => room,
        true => room / GCM_CHUNK_LEN * GCM_RECORD_LEN,
    };
    let mut room = room_of(buf.len());
    let mut filled = 0;
    while filled < len {
        if filled == room {
            room = (room * 2).clamp(FIRST_FILL.min(len), len);
            buf.resize(buf_len_of(room), 0);
        }
        let end = room.min(len);
        let read = if slots {
            let mut slices = slot_slices(buf, filled, end);
            input.read_vectored(&mut slices)
        } else {
            input.read(&mut buf[filled..end])
        };
        match read {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => {
                buf.truncate(if slots { 0 } else { filled });
                return Err(e);
            }
        }
    }
    let sealed = match slots {
        false => filled,
        true => sealed_len(filled, filled < len).expect("whole GCM chunks, or the last"),
    };
    buf.resize(sealed, 0);
    Ok(filled)
}

/// The most data slots one vectored read fills.
const MOST_SLOTS: usize = 1024;

/// The parts of the data slots of the records in `buf` that hold input bytes `from..to`.
fn slot_slices(buf: &mut [u8], from: usize, to: usize) -> Vec<IoSliceMut<'_>> {
    let first = from / GCM_CHUNK_LEN;
    buf.chunks_mut(GCM_RECORD_LEN)
        .enumerate()
        .skip(first)
        .take_while(|(k, _)| k * GCM_CHUNK_LEN < to)
        .take(MOST_SLOTS)
        .map(|(k, record)| {
            let start = k * GCM_CHUNK_LEN;
            let data = from.max(start) - start..to.min(start + GCM_CHUNK_LEN) - start;
            IoSliceMut::new(&mut record[data])
        })
        .collect()
}
