//! Cutting an input into the records of a stream ([`ChunkReader`]), each chunk knowing whether
//! it is the last, into buffers that grow only as far as the input goes.

use std::io::{self, Read};

use super::{Chunk, Segment, StreamSpec};

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
            fill(self.input, &mut buf, self.record_len)?;
            if buf.len() == self.record_len {
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
                if !buf.is_empty() {
                    return Err(io::Error::new(
                        io::ErrorKind::UnexpectedEof,
                        "the input ended inside a chunk",
                    ));
                }
                let held = self.held.take();
                return Ok(held.map(|previous| self.emit(previous, false)));
            }
            let chunk = match self.held.take() {
                Some(previous) if self.last_short || !buf.is_empty() => {
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

/// Reads until `buf` holds `len` bytes or the input ends. The buffer keeps its length between
/// uses, so a recycled buffer is not zeroed again: only its first use touches fresh memory. A
/// fresh buffer grows by doubling, from [`FIRST_FILL`], only while the input goes on: a 4 KiB
/// file takes 64 KiB, not a chunk (up to 64 MiB, as a hostile header may declare).
fn fill<R: Read + ?Sized>(input: &mut R, buf: &mut Vec<u8>, len: usize) -> io::Result<()> {
    let mut filled = 0;
    while filled < len {
        if filled == buf.len() {
            let grown = (buf.len() * 2).clamp(FIRST_FILL.min(len), len);
            buf.resize(grown, 0);
        }
        let end = buf.len().min(len);
        match input.read(&mut buf[filled..end]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => {
                buf.truncate(filled);
                return Err(e);
            }
        }
    }
    buf.truncate(filled);
    Ok(())
}
