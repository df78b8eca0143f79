//! A container's body read without the pipeline: its chunk layout from its length, checking
//! every chunk tag without decrypting ([`verify`], [`verify_file`] on several cores), and a
//! seekable plaintext reader that authenticates and decrypts only the chunks a read touches
//! ([`SeekableReader`], as age's `DecryptReaderAt` and rage's `StreamReader` do), and the
//! body check that ties a candidate file key to the body before anything trusts it
//! ([`BodyAccess`]: the first and the last chunk tag verify).

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom, Write};

use crate::engine::{Direction, Engine, Mode};
use crate::pipeline::{self, Chunk, ChunkReader, PipelineError, Segment, StreamSpec, Workers};
use crate::positioned::ReadAt;

use super::{
    Authenticator, BodyParams, ContainerError, HeaderInfo, Opened, UnverifiedHeader,
    MESSAGE_PREFIX_LEN, TAG_LEN,
};
use crate::cobblestone;

mod range;

/// How a reader of a container can reach its bytes, for the body check of docs/FORMAT.md
/// ("Opening a file"): a file key is accepted only if the first and the last chunk tag of the
/// body verify under it (only the first, on a stream).
#[derive(Clone, Copy, Debug)]
pub enum BodyAccess<'a> {
    /// The whole container file, read at offsets (its own offset is not moved).
    File(&'a File),
    /// The whole container in memory.
    Bytes(&'a [u8]),
    /// A stream (a pipe): `first` holds the bytes right after the header, read ahead up to one
    /// record (fewer only where the stream ends), so the first chunk's tag is checked; the
    /// pipeline checks every other chunk before any of its plaintext goes out.
    Stream {
        /// The first record of the body, or as much of it as the stream holds.
        first: &'a [u8],
    },
}

/// What the body check found for one file key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum BodyCheck {
    /// The tags checked verify.
    Verified,
    /// Chunk `0` (its index) does not verify.
    Failed(u64),
    /// Nothing to check: a body length that no writer makes (the stream reports it as
    /// truncated or extended), or a stream that ends inside its first tag.
    NotChecked,
}

impl BodyAccess<'_> {
    /// Bytes of the whole container, if it can be read at offsets.
    pub(crate) fn len(&self) -> io::Result<Option<u64>> {
        match self {
            BodyAccess::File(file) => Ok(Some(file.metadata()?.len())),
            BodyAccess::Bytes(bytes) => Ok(Some(bytes.len() as u64)),
            BodyAccess::Stream { .. } => Ok(None),
        }
    }

    /// Fills `buf` from byte `at` of the container.
    fn read_exact_at(&self, buf: &mut [u8], at: u64) -> io::Result<()> {
        match self {
            BodyAccess::File(file) => std::os::unix::fs::FileExt::read_exact_at(*file, buf, at),
            BodyAccess::Bytes(bytes) => {
                let range = usize::try_from(at)
                    .ok()
                    .and_then(|at| Some(at..at.checked_add(buf.len())?))
                    .filter(|range| range.end <= bytes.len())
                    .ok_or_else(|| io::Error::from(io::ErrorKind::UnexpectedEof))?;
                buf.copy_from_slice(&bytes[range]);
                Ok(())
            }
            BodyAccess::Stream { .. } => Err(io::Error::new(
                io::ErrorKind::Unsupported,
                "a stream cannot be read at offsets",
            )),
        }
    }

    /// Reads the container's header from its first byte (a rekey reads back what it wrote).
    pub(crate) fn read_header(&self) -> Result<UnverifiedHeader, ContainerError> {
        match self {
            BodyAccess::File(file) => {
                let len = file.metadata()?.len();
                UnverifiedHeader::read(&mut io::BufReader::new(ReadAt::new(file, 0, len)))
            }
            BodyAccess::Bytes(bytes) => UnverifiedHeader::read(&mut &bytes[..]),
            BodyAccess::Stream { .. } => Err(ContainerError::Io(io::Error::new(
                io::ErrorKind::Unsupported,
                "a stream cannot be read again",
            ))),
        }
    }

    /// The end check of a C2SP message whose chunk records start at `chunks_start`, under
    /// `cipher` (its key commitment already matched): on a whole file, its length must be one
    /// a writer makes and its last chunk's tag must verify, so that a message cut at a chunk
    /// boundary, or a damaged last chunk, is seen before anything is written (on a stream, the
    /// pipeline sees the end). Serves v3 bodies and bare messages alike.
    pub(crate) fn check_message_end(
        &self,
        chunks_start: u64,
        cipher: &cobblestone::ChunkCipher,
    ) -> Result<BodyCheck, ContainerError> {
        let Some(file_len) = self.len()? else {
            return Ok(BodyCheck::NotChecked);
        };
        let records = file_len.saturating_sub(chunks_start);
        let Ok(layout) = BodyLayout::message(records) else {
            return Ok(BodyCheck::Failed(records / cobblestone::RECORD_LEN as u64));
        };
        let last = layout.chunks - 1;
        let mut record = vec![0u8; layout.last_chunk_len as usize + TAG_LEN];
        self.read_exact_at(&mut record, chunks_start + last * layout.record_len)?;
        let (ciphertext, tag) = record.split_at(layout.last_chunk_len as usize);
        Ok(if cipher.verify(last, ciphertext, tag) {
            BodyCheck::Verified
        } else {
            BodyCheck::Failed(last)
        })
    }

    /// The body check under `auth` for a body from `body_start`: the first and the last chunk
    /// tag (a file), or the first (a stream, whose first record may be the last: both flags
    /// are tried when it is whole, since only the next byte would tell).
    pub(crate) fn check(
        &self,
        params: BodyParams,
        body_start: u64,
        auth: &Authenticator,
    ) -> Result<BodyCheck, ContainerError> {
        let verdict = |ok: bool, index: u64| {
            if ok {
                BodyCheck::Verified
            } else {
                BodyCheck::Failed(index)
            }
        };
        if let BodyAccess::Stream { first } = self {
            let full = params.chunk_size + TAG_LEN;
            if first.len() < TAG_LEN || first.len() > full {
                return Ok(BodyCheck::NotChecked);
            }
            let (ciphertext, tag) = first.split_at(first.len() - TAG_LEN);
            let ok = auth.verify(0, true, ciphertext, tag)
                || (first.len() == full && auth.verify(0, false, ciphertext, tag));
            return Ok(verdict(ok, 0));
        }
        let Some(file_len) = self.len()? else {
            return Ok(BodyCheck::NotChecked);
        };
        let Ok(layout) = params.layout(file_len.saturating_sub(body_start)) else {
            return Ok(BodyCheck::NotChecked);
        };
        let last = layout.chunks - 1;
        let mut record = Vec::new();
        for index in [0, last] {
            let ciphertext_len = if index == last {
                layout.last_chunk_len
            } else {
                params.chunk_size as u64
            } as usize;
            record.resize(ciphertext_len + TAG_LEN, 0);
            self.read_exact_at(&mut record, body_start + index * layout.record_len)?;
            let (ciphertext, tag) = record.split_at(ciphertext_len);
            if !auth.verify(index, index == last, ciphertext, tag) {
                return Ok(BodyCheck::Failed(index));
            }
        }
        Ok(BodyCheck::Verified)
    }
}

/// Where a body's chunks lie, from its length alone (docs/FORMAT.md): `chunks` records of
/// `chunk_size` ciphertext bytes plus a tag, the last one shorter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BodyLayout {
    /// Number of chunks (at least 1).
    pub chunks: u64,
    /// Ciphertext bytes of all chunks (tags excluded).
    pub ciphertext_len: u64,
    /// Ciphertext bytes of the last chunk.
    pub last_chunk_len: u64,
    /// Bytes of one full record (chunk + tag).
    pub record_len: u64,
}

impl BodyLayout {
    /// The layout of a C2SP message's chunk records (everything after its salt and
    /// commitment), `records` bytes: 16 KiB chunks, then a shorter final one.
    pub fn message(records: u64) -> Result<Self, LayoutError> {
        let (chunks, last_chunk_len) = cobblestone::chunk_count(records)
            .ok_or_else(|| LayoutError("it has no final chunk shorter than 16 KiB".to_owned()))?;
        Ok(BodyLayout {
            chunks,
            ciphertext_len: records - chunks * cobblestone::TAG_LEN as u64,
            last_chunk_len,
            record_len: cobblestone::RECORD_LEN as u64,
        })
    }
}

/// A body length that no writer makes: the file was truncated or extended.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct LayoutError(String);

impl HeaderInfo {
    /// Whether the body is a C2SP message (format v3).
    pub fn is_message(&self) -> bool {
        self.version == super::v3::VERSION
    }

    /// Where the first chunk record starts: after the header, and for v3 after the message's
    /// salt and commitment.
    pub fn chunks_start(&self) -> u64 {
        let prefix = if self.is_message() {
            MESSAGE_PREFIX_LEN
        } else {
            0
        };
        (self.header_len + prefix) as u64
    }

    /// The index of the chunk where a container of `file_len` bytes, whose length no writer
    /// makes, was cut or extended (for its error).
    pub(crate) fn truncated_chunk(&self, file_len: u64) -> u64 {
        let records = file_len.saturating_sub(self.chunks_start());
        let record = (self.params.chunk_size + TAG_LEN) as u64;
        if self.is_message() {
            records / record
        } else {
            records.div_ceil(record).saturating_sub(1)
        }
    }

    /// The chunk layout of the body of a container of `file_len` bytes, if the format allows
    /// that length ([`BodyParams::layout`]; v3: a message's chunks, the last always shorter
    /// than 16 KiB).
    pub fn layout(&self, file_len: u64) -> Result<BodyLayout, LayoutError> {
        let Some(records) = file_len.checked_sub(self.chunks_start()) else {
            return Err(LayoutError(format!(
                "the file has {file_len} bytes, fewer than its header and message prefix"
            )));
        };
        if !self.is_message() {
            return self.params.layout(records);
        }
        BodyLayout::message(records)
    }
}

impl BodyParams {
    /// The layout of a body of `body_len` bytes, if docs/FORMAT.md allows that length: the
    /// last chunk holds 1..=chunk bytes (CTR; 0 only when it is the only chunk), or 16..=chunk
    /// bytes in whole blocks (ECB, which always pads).
    pub fn layout(&self, body_len: u64) -> Result<BodyLayout, LayoutError> {
        let tag = TAG_LEN as u64;
        let record_len = self.chunk_size as u64 + tag;
        if body_len < tag {
            return Err(LayoutError(format!(
                "the body has {body_len} bytes, fewer than one {tag}-byte tag"
            )));
        }
        let chunks = body_len.div_ceil(record_len);
        let last = body_len - (chunks - 1) * record_len;
        if last < tag {
            return Err(LayoutError(format!(
                "the last chunk has {last} bytes, fewer than its {tag}-byte tag"
            )));
        }
        let last_chunk_len = last - tag;
        match self.mode {
            Mode::Ctr if last_chunk_len == 0 && chunks > 1 => {
                return Err(LayoutError(
                    "the body ends in an empty chunk after full ones".to_owned(),
                ))
            }
            Mode::Ecb if last_chunk_len == 0 || !last_chunk_len.is_multiple_of(16) => {
                return Err(LayoutError(format!(
                    "the last ECB chunk has {last_chunk_len} bytes of ciphertext, not a positive multiple of 16"
                )))
            }
            _ => {}
        }
        Ok(BodyLayout {
            chunks,
            ciphertext_len: body_len - chunks * tag,
            last_chunk_len,
            record_len,
        })
    }
}

/// Checks every chunk tag (and v2's last-chunk flag) of the body that `input` holds
/// (positioned where [`UnverifiedHeader::read`] left it: after the header, and for v3 after the
/// message's salt and commitment) without decrypting it, except the last chunk, whose shape and
/// ECB padding are checked too (at most one chunk of AES on `engine`). Writes nothing. Returns the plaintext
/// length; any error means the file is not authentic as a whole. [`verify_file`] does the
/// same on several cores.
pub fn verify(
    opened: &Opened,
    engine: &dyn Engine,
    input: &mut impl Read,
) -> Result<u64, PipelineError> {
    let spec = opened.chunk_spec(engine, Direction::Decrypt);
    verify_segment(&spec, Segment::WHOLE, input)
}

/// [`verify`] of the container file `file` on `threads` threads (at most
/// [`pipeline::BUFFERS`], one chunk buffer each, so memory stays bounded whatever the core
/// count): the body is cut into one contiguous run of chunks per thread, each read at its
/// position and checked apart (chunk tags are independent of each other), so reading and
/// checking spread over the cores.
pub fn verify_file(
    opened: &Opened,
    engine: &dyn Engine,
    file: &File,
    threads: usize,
) -> Result<u64, PipelineError> {
    let spec = opened.chunk_spec(engine, Direction::Decrypt);
    let info = opened.info();
    let body_start = info.chunks_start();
    let file_len = file.metadata().map_err(PipelineError::Read)?.len();
    let layout = info
        .layout(file_len)
        .map_err(|_| PipelineError::Truncated(info.truncated_chunk(file_len)))?;
    let (per_thread, segments) = runs(layout.chunks, threads, layout.record_len);
    let spec = &spec;
    std::thread::scope(|scope| {
        let runs: Vec<_> = (0..segments)
            .map(|t| {
                let first = t * per_thread;
                let end = ((t + 1) * per_thread).min(layout.chunks);
                let segment = Segment {
                    first_index: first,
                    ends_stream: end == layout.chunks,
                };
                let at = body_start + first * layout.record_len;
                let len = if segment.ends_stream {
                    file_len - at
                } else {
                    (end - first) * layout.record_len
                };
                scope.spawn(move || {
                    let mut input = ReadAt::new(file, at, len);
                    verify_segment(spec, segment, &mut input)
                })
            })
            .collect();
        let mut plaintext = 0;
        let mut first_failure = None;
        for run in runs {
            let result = run
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
            match result {
                Ok(len) => plaintext += len,
                Err(e) => {
                    first_failure.get_or_insert(e);
                }
            }
        }
        match first_failure {
            Some(e) => Err(e),
            None => Ok(plaintext),
        }
    })
}

/// How [`verify_file`] cuts `chunks` of `record` bytes each for `threads` threads: chunks per
/// run, and runs (at most [`pipeline::BUFFERS`], and fewer for records over a window, as the
/// pipeline's workers are ([`Workers::for_record`]), since each run holds one record; every
/// run holds at least one chunk: 5 chunks on 4 threads are 2, 2, 1).
fn runs(chunks: u64, threads: usize, record: u64) -> (u64, u64) {
    let record = usize::try_from(record).unwrap_or(usize::MAX);
    let threads = Workers::new(threads.clamp(1, pipeline::BUFFERS))
        .for_record(record)
        .threads as u64;
    let per_run = chunks.div_ceil(threads);
    (per_run, chunks.div_ceil(per_run))
}

/// Checks the chunks of `segment` that `input` holds; returns their plaintext length.
fn verify_segment(
    spec: &StreamSpec<'_>,
    segment: Segment,
    input: &mut impl Read,
) -> Result<u64, PipelineError> {
    let mut reader = ChunkReader::segment(spec, segment, input);
    let mut buf = spec.new_buffer();
    let mut plaintext = 0u64;
    let mut next_index = segment.first_index;
    while let Some(mut chunk) = reader.next_chunk(buf).map_err(|e| match e.kind() {
        io::ErrorKind::UnexpectedEof => PipelineError::Truncated(next_index),
        _ => PipelineError::Read(e),
    })? {
        next_index = chunk.index + 1;
        if chunk.last {
            // The last chunk's shape and padding need its plaintext: decrypt this one only.
            pipeline::open(spec, &mut chunk)?;
            return Ok(plaintext + chunk.data.len() as u64);
        }
        pipeline::verify_tags(spec, &mut chunk)?;
        plaintext += spec.chunk_size as u64;
        buf = chunk.data;
    }
    if segment.ends_stream {
        return Err(PipelineError::Truncated(next_index));
    }
    Ok(plaintext)
}

/// The plaintext of a container as a `Read + Seek` over the container's `Read + Seek`: a read
/// authenticates and decrypts only the chunks it touches (one chunk is cached). The last chunk
/// is authenticated when the reader is made, so the plaintext length it reports is authentic.
/// Read errors are `io::ErrorKind::InvalidData` errors wrapping a [`PipelineError`] for
/// damaged or tampered chunks; [`SeekableReader::copy_range`] returns them typed.
pub struct SeekableReader<'a, R> {
    spec: StreamSpec<'a>,
    input: R,
    body_start: u64,
    layout: BodyLayout,
    plaintext_len: u64,
    position: u64,
    /// The decrypted chunk in `cached` (its index), if any.
    cached_index: Option<u64>,
    cached: Vec<u8>,
    bytes_read: u64,
}

impl<'a, R: Read + Seek> SeekableReader<'a, R> {
    /// A reader of the container `input` (the whole file, header included), opened as
    /// `opened`, decrypting on `engine`. Reads and authenticates the last chunk.
    pub fn new(
        opened: &'a Opened,
        engine: &'a dyn Engine,
        mut input: R,
    ) -> Result<Self, PipelineError> {
        let info = opened.info();
        let file_len = input.seek(SeekFrom::End(0)).map_err(PipelineError::Read)?;
        let layout = info
            .layout(file_len)
            .map_err(|_| PipelineError::Truncated(info.truncated_chunk(file_len)))?;
        let spec = opened.chunk_spec(engine, Direction::Decrypt);
        Self::over(spec, info.chunks_start(), layout, input)
    }

    /// A reader of the bare C2SP message `input` (the whole file, salt and commitment
    /// included) whose chunk cipher is `cipher` (its commitment already checked), decrypting
    /// on `engine`. Reads and authenticates the last chunk.
    pub fn message(
        cipher: &'a cobblestone::ChunkCipher,
        engine: &'a dyn Engine,
        mut input: R,
    ) -> Result<Self, PipelineError> {
        let file_len = input.seek(SeekFrom::End(0)).map_err(PipelineError::Read)?;
        let records = file_len.saturating_sub(MESSAGE_PREFIX_LEN as u64);
        let layout = BodyLayout::message(records)
            .map_err(|_| PipelineError::Truncated(records / cobblestone::RECORD_LEN as u64))?;
        let spec = StreamSpec::message(engine, Direction::Decrypt, cipher, cobblestone::CHUNK_LEN);
        Self::over(spec, MESSAGE_PREFIX_LEN as u64, layout, input)
    }

    /// A reader of the chunk records of `input` that start at byte `body_start` and lie as
    /// `layout` says, one chunk of `spec` each; authenticates the last chunk.
    fn over(
        spec: StreamSpec<'a>,
        body_start: u64,
        layout: BodyLayout,
        input: R,
    ) -> Result<Self, PipelineError> {
        let mut reader = SeekableReader {
            spec,
            body_start,
            input,
            layout,
            plaintext_len: 0,
            position: 0,
            cached_index: None,
            cached: Vec::new(),
            bytes_read: 0,
        };
        let last = layout.chunks - 1;
        reader.load(last)?;
        reader.plaintext_len = last * reader.spec.chunk_size as u64 + reader.cached.len() as u64;
        Ok(reader)
    }

    /// The authentic plaintext length.
    pub fn plaintext_len(&self) -> u64 {
        self.plaintext_len
    }

    /// Bytes of the container read so far (tags and the last chunk included).
    pub fn bytes_read(&self) -> u64 {
        self.bytes_read
    }

    /// Writes plaintext bytes `start..end` to `output`, authenticating every chunk they touch
    /// before any of its bytes go out. `end` past the plaintext is an error (nothing written).
    pub fn copy_range(
        &mut self,
        start: u64,
        end: u64,
        output: &mut (impl Write + ?Sized),
    ) -> Result<u64, RangeError> {
        self.check_range(start, end)?;
        let chunk = self.spec.chunk_size as u64;
        let mut at = start;
        while at < end {
            let index = at / chunk;
            self.load(index)?;
            let from = (at - index * chunk) as usize;
            let to = (end.min((index + 1) * chunk) - index * chunk) as usize;
            output
                .write_all(&self.cached[from..to])
                .map_err(PipelineError::Write)?;
            at += (to - from) as u64;
        }
        Ok(end - start)
    }

    /// Checks that `start..end` is a range of the plaintext.
    fn check_range(&self, start: u64, end: u64) -> Result<(), RangeError> {
        if start > end || end > self.plaintext_len {
            return Err(RangeError::OutOfBounds {
                start,
                end,
                len: self.plaintext_len,
            });
        }
        Ok(())
    }

    /// Makes chunk `index` the cached, authenticated plaintext.
    fn load(&mut self, index: u64) -> Result<(), PipelineError> {
        if self.cached_index == Some(index) {
            return Ok(());
        }
        self.cached_index = None;
        let last = index + 1 == self.layout.chunks;
        let len = if last {
            self.layout.last_chunk_len
        } else {
            self.spec.chunk_size as u64
        } + TAG_LEN as u64;
        let mut data = std::mem::take(&mut self.cached);
        data.resize(len as usize, 0);
        self.input
            .seek(SeekFrom::Start(
                self.body_start + index * self.layout.record_len,
            ))
            .and_then(|_| self.input.read_exact(&mut data))
            .map_err(|e| match e.kind() {
                io::ErrorKind::UnexpectedEof => PipelineError::Truncated(index),
                _ => PipelineError::Read(e),
            })?;
        self.bytes_read += len;
        let mut chunk = Chunk { index, last, data };
        let opened = pipeline::open(&self.spec, &mut chunk);
        self.cached = chunk.data;
        opened?;
        self.cached_index = Some(index);
        Ok(())
    }
}

/// Why a range could not be copied.
#[derive(Debug, thiserror::Error)]
pub enum RangeError {
    /// The range is not within the plaintext.
    #[error("the range {start}..{end} is not within the plaintext, which has {len} bytes")]
    OutOfBounds {
        /// First byte asked for.
        start: u64,
        /// One past the last byte asked for.
        end: u64,
        /// The plaintext's length.
        len: u64,
    },
    /// Reading, authenticating or writing a chunk failed.
    #[error(transparent)]
    Stream(#[from] PipelineError),
}

impl<R: Read + Seek> Read for SeekableReader<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.position >= self.plaintext_len || buf.is_empty() {
            return Ok(0);
        }
        let chunk = self.spec.chunk_size as u64;
        let index = self.position / chunk;
        self.load(index).map_err(|e| match e {
            PipelineError::Read(io) => io,
            other => io::Error::new(io::ErrorKind::InvalidData, other),
        })?;
        let from = (self.position - index * chunk) as usize;
        let n = (self.cached.len() - from).min(buf.len());
        buf[..n].copy_from_slice(&self.cached[from..from + n]);
        self.position += n as u64;
        Ok(n)
    }
}

impl<R: Read + Seek> Seek for SeekableReader<'_, R> {
    fn seek(&mut self, to: SeekFrom) -> io::Result<u64> {
        let target = match to {
            SeekFrom::Start(at) => Some(at),
            SeekFrom::End(delta) => self.plaintext_len.checked_add_signed(delta),
            SeekFrom::Current(delta) => self.position.checked_add_signed(delta),
        };
        let target = target.ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                "seek to a negative or overflowing position",
            )
        })?;
        self.position = target;
        Ok(target)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key::KeySize;

    fn layout(body: u64, mode: Mode) -> Result<(u64, u64), LayoutError> {
        let params = BodyParams {
            mode,
            key_size: KeySize::Aes128,
            chunk_size: 4096,
        };
        params.layout(body).map(|l| (l.chunks, l.ciphertext_len))
    }

    #[test]
    fn layouts_that_a_writer_makes_are_valid() {
        let c = 4096;
        assert_eq!(layout(16, Mode::Ctr), Ok((1, 0)));
        assert_eq!(layout(17, Mode::Ctr), Ok((1, 1)));
        assert_eq!(layout(c + 16, Mode::Ctr), Ok((1, c)));
        assert_eq!(layout(c + 16 + 17, Mode::Ctr), Ok((2, c + 1)));
        assert_eq!(layout(32, Mode::Ecb), Ok((1, 16)));
        assert_eq!(layout(c + 16 + 32, Mode::Ecb), Ok((2, c + 16)));
    }

    #[test]
    fn verify_runs_at_most_one_buffer_per_pipeline_buffer_whatever_the_core_count() {
        let record = (1 << 20) + 16;
        assert_eq!(runs(5, 4, record), (2, 3));
        assert_eq!(runs(1, 64, record), (1, 1));
        // Records over a window (a v2 file of 64 MiB chunks) run on fewer threads, as the
        // pipeline's workers do: 8 runs held 8 chunks of 64 MiB.
        assert_eq!(runs(1000, 64, (64 << 20) + 16), (1000, 1));
        assert_eq!(runs(1000, 8, (8 << 20) + 16), (500, 2));
        for threads in [1, 2, 8, 9, 64, 1024] {
            for chunks in [1, 7, 8, 9, 1000, 1 << 30] {
                let (per_run, count) = runs(chunks, threads, record);
                assert!(
                    count <= pipeline::BUFFERS as u64,
                    "{chunks} chunks on {threads}"
                );
                assert!(per_run * count >= chunks && per_run * (count - 1) < chunks);
            }
        }
    }

    #[test]
    fn cut_or_extended_layouts_are_not() {
        let c = 4096;
        assert!(layout(15, Mode::Ctr).is_err());
        assert!(layout(c + 16 + 5, Mode::Ctr).is_err());
        assert!(layout(c + 16 + 16, Mode::Ctr).is_err());
        assert!(layout(16, Mode::Ecb).is_err());
        assert!(layout(16 + 20, Mode::Ecb).is_err());
    }
}
