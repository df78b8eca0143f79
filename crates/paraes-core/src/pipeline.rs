//! The chunk pipeline: a reader thread, the engine, the chunk tags and a writer thread, joined by
//! bounded queues over a fixed pool of buffers, so reading, encrypting, authenticating and
//! writing overlap and memory stays at [`BUFFERS`] x chunk size whatever the input size.
//!
//! The same pipeline serves raw streams, the v2 container (a chunk tag after each chunk) and GCM
//! chunk streams (C2SP chunked encryption: bare Cobblestone messages and format v3 bodies, where
//! a pipeline chunk is a batch of 16 KiB GCM chunks, each followed by its tag), whole streams
//! ([`run`]) and contiguous segments of a stream ([`run_segment`]: chunk indices from any first
//! index, the last-chunk flag only where the segment ends the stream), so an MPI rank that owns
//! a range of chunks runs the same stages over positioned I/O ([`crate::positioned`]).
//! Decryption releases a chunk to the writer only after its tags have verified.
//!
//! A GCM chunk stream goes through the engine's CTR job (one call per pipeline chunk) and the
//! tags computed here, in a stage of their own, unless the engine seals and opens whole GCM
//! records itself ([`Engine::gcm_records`]: the CPU engine's stitched kernel, CTR and GHASH in
//! one pass): then the engine stage does both, on records laid out as the message lays them
//! out, and the MAC stage passes its chunks on.

use std::io::{self, Read, Write};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};

use crate::chunk_tag::{Authenticator, TAG_LEN};
use crate::cobblestone::{ChunkCipher, MAX_CHUNKS};
use crate::engine::{
    Counters, Direction, Engine, EngineError, Job, Mode, RecordsError, GCM_CHUNK_LEN,
};
use crate::key::ExpandedKey;

/// Bytes of a GCM chunk's record in a message: its data and its tag.
const GCM_RECORD_LEN: usize = GCM_CHUNK_LEN + TAG_LEN;

/// The default chunk size (see docs/RESULTS.md for the measurement behind it).
pub const DEFAULT_CHUNK_SIZE: usize = 1 << 20;

/// Buffers in flight: two at the reader (one held back to learn whether it is the last), and
/// one queued and one at work before each of the engine, the MAC and the writer.
pub const BUFFERS: usize = 8;

/// What to do to a stream.
pub struct StreamSpec<'a> {
    /// The engine that runs AES.
    pub engine: &'a dyn Engine,
    /// Mode of operation.
    pub mode: Mode,
    /// Encrypt or decrypt.
    pub direction: Direction,
    /// The expanded AES key.
    pub key: &'a ExpandedKey,
    /// CTR's counter block of the stream's block 0 (ignored by ECB).
    pub counter: [u8; 16],
    /// Plaintext bytes per chunk, a multiple of 16.
    pub chunk_size: usize,
    /// PKCS#7 padding of the final block (ECB only).
    pub padding: bool,
    /// How the stream is authenticated.
    pub tags: Tags<'a>,
}

/// How a stream is authenticated.
#[derive(Clone, Copy, Debug)]
pub enum Tags<'a> {
    /// A raw stream: no tags.
    None,
    /// Format v2: after each chunk its tag (over the chunk's index, last flag and ciphertext).
    Chunk(&'a Authenticator),
    /// GCM chunks (C2SP chunked encryption): each pipeline chunk of `chunk_size` plaintext bytes
    /// (a multiple of [`GCM_CHUNK_LEN`]) is a batch of 16 KiB AES-GCM chunks, each followed by
    /// its tag; the stream's final GCM chunk is always shorter than 16 KiB (empty when the
    /// plaintext is a multiple of it). CTR mode only; the counters are
    /// [`Counters::GcmChunks`] under the cipher's key and base nonce.
    Gcm(&'a ChunkCipher),
}

/// Which part of a stream a run covers: the whole stream, or a contiguous run of its chunks (an
/// MPI rank's share). Chunk `i` of the stream is processed the same wherever it runs: CTR's
/// counter comes from its index, and so does its tag.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Segment {
    /// Index in the stream of the segment's first chunk.
    pub first_index: u64,
    /// Whether the segment ends the stream: its final chunk is then the stream's last (tagged as
    /// last, padded or unpadded by ECB, possibly short or empty). Otherwise the segment's input
    /// is whole records and it ends with no chunk marked last (it may be empty).
    pub ends_stream: bool,
}

impl Segment {
    /// The whole stream: chunks from 0, ending with the last.
    pub const WHOLE: Segment = Segment {
        first_index: 0,
        ends_stream: true,
    };
}

/// How a run's stages share the machine.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stages {
    /// Reader, engine, MAC and writer on threads of their own, overlapping over [`BUFFERS`]
    /// buffers: for a process with two or more cores.
    Threaded,
    /// The same steps chunk by chunk on the calling thread ([`ChunkReader`], [`seal`] or
    /// [`open`], write): for a process with one core of its own (e.g. as many MPI ranks as
    /// cores), where threads cannot overlap and only hand chunks over after they left the cache.
    InTurn,
}

/// Why a stream could not be processed.
#[derive(Debug, thiserror::Error)]
pub enum PipelineError {
    /// Reading the input failed. (The I/O error is in the message, not also a `source`, so a
    /// report of the error chain gives the reason once.)
    #[error("reading the input failed: {0}")]
    Read(io::Error),
    /// Writing the output failed (the I/O error is in the message, as for `Read`).
    #[error("writing the output failed: {0}")]
    Write(io::Error),
    /// The engine failed.
    #[error(transparent)]
    Engine(#[from] EngineError),
    /// A chunk tag did not verify.
    #[error(
        "chunk {0} failed authentication: the file is damaged, truncated, reordered or was \
         tampered with (nothing unauthenticated was written)"
    )]
    Tampered(u64),
    /// The container's body ends where it cannot.
    #[error("the container or message is truncated or has a malformed last chunk (chunk {0})")]
    Truncated(u64),
    /// ECB padding is wrong after decryption.
    #[error("bad PKCS#7 padding: wrong key, or the stream was not padded when it was encrypted")]
    BadPadding,
    /// A GCM chunk stream past 2^38 chunks (C2SP chunked encryption's limit).
    #[error("the stream is longer than a C2SP chunked message may be (2^38 chunks of 16 KiB)")]
    TooLong,
    /// ECB input that is not whole blocks.
    #[error(
        "ECB needs whole 16-byte blocks and this input has {0} bytes: to encrypt it, pad it; \
         to decrypt, check that it is an ECB ciphertext"
    )]
    NotWholeBlocks(u64),
}

/// One unit of work: `data` holds the record read (plaintext chunk, or ciphertext chunk + tag)
/// and, after [`seal`] or [`open`], what goes out.
#[derive(Debug)]
pub struct Chunk {
    /// Position of the chunk in the stream (0, 1, 2, ...).
    pub index: u64,
    /// Whether this is the stream's final chunk.
    pub last: bool,
    /// The chunk's bytes.
    pub data: Vec<u8>,
}

impl<'a> StreamSpec<'a> {
    /// The stream of a C2SP message's chunks under `cipher` (a bare message, or a v3
    /// container's body) on `engine`, `batch` plaintext bytes (a multiple of 16 KiB) per
    /// pipeline chunk.
    pub fn message(
        engine: &'a dyn Engine,
        direction: Direction,
        cipher: &'a ChunkCipher,
        batch: usize,
    ) -> Self {
        StreamSpec {
            engine,
            mode: Mode::Ctr,
            direction,
            key: cipher.key(),
            counter: [0; 16],
            chunk_size: batch,
            padding: false,
            tags: Tags::Gcm(cipher),
        }
    }
}

impl StreamSpec<'_> {
    /// Bytes of one record of the input: a chunk, plus its tags when decrypting.
    pub fn input_record_len(&self) -> usize {
        match self.direction {
            Direction::Encrypt => self.chunk_size,
            Direction::Decrypt => self.chunk_size + self.tag_len(),
        }
    }

    /// Bytes of one record of the output: a chunk, plus its tags when encrypting.
    pub fn output_record_len(&self) -> usize {
        match self.direction {
            Direction::Encrypt => self.chunk_size + self.tag_len(),
            Direction::Decrypt => self.chunk_size,
        }
    }

    /// The most bytes a buffer of the stream holds: any record with its padding or tags.
    pub fn buffer_capacity(&self) -> usize {
        self.chunk_size + self.tag_len().max(TAG_LEN)
    }

    /// GCM chunks per pipeline chunk (0 unless [`Tags::Gcm`]).
    fn gcm_per_chunk(&self) -> usize {
        match self.tags {
            Tags::Gcm(_) => self.chunk_size / GCM_CHUNK_LEN,
            _ => 0,
        }
    }

    /// An empty buffer for the stream's records. It allocates nothing yet: reading grows it as
    /// far as the input goes (see [`ChunkReader`]), so a small file never costs a whole chunk
    /// of memory, whatever chunk size a container's header declares.
    pub fn new_buffer(&self) -> Vec<u8> {
        Vec::new()
    }

    /// Bytes of the tags of one full chunk (0 for a raw stream).
    pub fn tag_len(&self) -> usize {
        match self.tags {
            Tags::None => 0,
            Tags::Chunk(_) => TAG_LEN,
            Tags::Gcm(_) => self.gcm_per_chunk() * TAG_LEN,
        }
    }

    /// Whether the stream's final chunk must be shorter than a full chunk: ECB encryption with
    /// padding always adds a padding block, and GCM chunks always end in a short (possibly
    /// empty) one, so input that ends on a chunk boundary gets a final chunk of its own.
    pub fn last_chunk_short(&self) -> bool {
        self.direction == Direction::Encrypt
            && ((self.mode == Mode::Ecb && self.padding) || matches!(self.tags, Tags::Gcm(_)))
    }

    /// Checks that the stream can run: GCM chunks need CTR and a chunk size that is a whole
    /// number of them.
    pub fn check(&self) -> Result<(), PipelineError> {
        if let Tags::Gcm(_) = self.tags {
            if self.mode != Mode::Ctr
                || self.chunk_size == 0
                || !self.chunk_size.is_multiple_of(GCM_CHUNK_LEN)
            {
                return Err(PipelineError::Engine(EngineError::Unsupported(format!(
                    "GCM chunks need CTR and a chunk size that is a multiple of {GCM_CHUNK_LEN} bytes (got {} and {})",
                    self.mode, self.chunk_size
                ))));
            }
        }
        Ok(())
    }

    /// The cipher of a GCM chunk stream whose engine seals and opens whole records itself
    /// ([`Engine::gcm_records`], asked with no records); `None` for any other stream, whose
    /// chunks go through the engine's CTR job and the tags computed here.
    fn engine_gcm(&self) -> Option<&ChunkCipher> {
        match self.tags {
            Tags::Gcm(cipher) => self
                .engine
                .gcm_records(cipher, self.direction, 0, &mut [])
                .is_some()
                .then_some(cipher),
            _ => None,
        }
    }

    /// The engine job of chunk `index`.
    fn job(&self, index: u64) -> Job<'_> {
        let (offset, counters) = match self.tags {
            Tags::Gcm(cipher) => {
                // Plaintext lies back to back; ciphertext comes as records with their tags.
                let stride = match self.direction {
                    Direction::Encrypt => GCM_CHUNK_LEN,
                    Direction::Decrypt => GCM_RECORD_LEN,
                };
                let first = index * self.gcm_per_chunk() as u64;
                let counters = Counters::GcmChunks {
                    base_nonce: cipher.base_nonce(),
                    stride,
                };
                (first * stride as u64, counters)
            }
            _ => (index * self.chunk_size as u64, Counters::Stream),
        };
        Job {
            mode: self.mode,
            direction: self.direction,
            key: self.key,
            counter: self.counter,
            offset,
            counters,
        }
    }
}

/// Everything one chunk needs on the way out, on the calling thread: padding, encryption and tag
/// for [`Direction::Encrypt`]. The pipeline runs the same steps in separate stages; distributed
/// runners (MPI ranks) call this on the chunks they own.
pub fn seal(spec: &StreamSpec<'_>, chunk: &mut Chunk) -> Result<(), PipelineError> {
    if let Some(cipher) = spec.engine_gcm() {
        return seal_records(spec, cipher, chunk);
    }
    crypt_chunk(spec, chunk)?;
    tag_chunk(spec, chunk)
}

/// Everything one chunk needs on the way in: tag check, decryption and padding removal for
/// [`Direction::Decrypt`] (see [`seal`]).
pub fn open(spec: &StreamSpec<'_>, chunk: &mut Chunk) -> Result<(), PipelineError> {
    if let Some(cipher) = spec.engine_gcm() {
        return open_records(spec, cipher, chunk);
    }
    verify_tags(spec, chunk)?;
    crypt_chunk(spec, chunk)
}

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
    let (free_tx, free_rx) = sync_channel::<Vec<u8>>(BUFFERS);
    for _ in 0..BUFFERS - 1 {
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
        // Authentication runs in its own stage, so one chunk's tag is computed while the next
        // chunk is encrypted: on a two-core machine that hides most of the MAC's cost. An
        // engine that seals or opens whole GCM records (CTR and tags in one pass) does all of
        // it in the engine stage, and the MAC stage passes its chunks on.
        let fused = spec.engine_gcm();
        let worked = match spec.tags {
            Tags::None => run_stage(segment, read, done_tx, |chunk| crypt_chunk(spec, chunk)),
            Tags::Chunk(_) | Tags::Gcm(_) => {
                let (mid_tx, mid_rx) = sync_channel::<Chunk>(1);
                let mid = mid_rx.into_iter().map(Ok);
                match spec.direction {
                    Direction::Encrypt => {
                        let first = scope.spawn(move || {
                            run_stage(segment, read, mid_tx, |c| match fused {
                                Some(cipher) => seal_records(spec, cipher, c),
                                None => crypt_chunk(spec, c),
                            })
                        });
                        let second = run_stage(segment, mid, done_tx, |c| match fused {
                            Some(_) => Ok(()),
                            None => tag_chunk(spec, c),
                        });
                        join(first).and(second)
                    }
                    Direction::Decrypt => {
                        let first = scope.spawn(move || {
                            run_stage(segment, read, mid_tx, |c| match fused {
                                Some(_) => Ok(()),
                                None => verify_tags(spec, c),
                            })
                        });
                        let second = run_stage(segment, mid, done_tx, |c| match fused {
                            Some(cipher) => open_records(spec, cipher, c),
                            None => crypt_chunk(spec, c),
                        });
                        join(first).and(second)
                    }
                }
            }
        };
        // Every stage has dropped its queues, so the reader and writer stop on their own.
        let written = join(writer);
        worked?;
        written
    })
}

/// [`Stages::InTurn`]: each chunk read, sealed or opened, and written before the next.
fn run_in_turn(
    spec: &StreamSpec<'_>,
    segment: Segment,
    input: &mut impl Read,
    output: &mut impl Write,
    progress: &(dyn Fn(u64) + Sync),
) -> Result<u64, PipelineError> {
    let mut reader = ChunkReader::segment(spec, segment, input);
    let mut buf = spec.new_buffer();
    let mut written = 0u64;
    while let Some(mut chunk) = reader.next_chunk(buf).map_err(PipelineError::Read)? {
        match spec.direction {
            Direction::Encrypt => seal(spec, &mut chunk)?,
            Direction::Decrypt => open(spec, &mut chunk)?,
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

/// Cuts an input into the records of a stream. A full record is held back until the next read
/// shows whether more input follows, so every chunk comes out knowing whether it is the last;
/// the final chunk may be short or empty (see [`StreamSpec::last_chunk_short`]). A reader of a
/// [`Segment`] that does not end the stream numbers its chunks from the segment's first index,
/// marks none last, and refuses input that is not whole records.
pub struct ChunkReader<'a, R> {
    input: &'a mut R,
    record_len: usize,
    last_short: bool,
    ends_stream: bool,
    next_index: u64,
    held: Option<Vec<u8>>,
    final_record: Option<Vec<u8>>,
    finished: bool,
}

impl<'a, R: Read> ChunkReader<'a, R> {
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
fn fill(input: &mut impl Read, buf: &mut Vec<u8>, len: usize) -> io::Result<()> {
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

/// Encrypts or decrypts one chunk in place (padding the last one before encryption, removing the
/// padding after decryption).
fn crypt_chunk(spec: &StreamSpec<'_>, chunk: &mut Chunk) -> Result<(), PipelineError> {
    if chunk.last && spec.mode == Mode::Ecb && spec.padding && spec.direction == Direction::Encrypt
    {
        let pad = 16 - chunk.data.len() % 16;
        chunk.data.resize(chunk.data.len() + pad, pad as u8);
    }
    check_whole_blocks(spec, chunk)?;
    spec.engine
        .process(&spec.job(chunk.index), &mut chunk.data)?;
    if spec.direction == Direction::Decrypt && chunk.last && spec.mode == Mode::Ecb && spec.padding
    {
        strip_padding(&mut chunk.data)?;
    }
    if let (Tags::Gcm(_), Direction::Decrypt) = (spec.tags, spec.direction) {
        // The tags were checked before decryption: close the gaps they leave.
        join_records(chunk);
    }
    Ok(())
}

/// Removes the tags from a chunk of GCM records (checked and decrypted), closing the gaps.
fn join_records(chunk: &mut Chunk) {
    let records = chunk.data.len().div_ceil(GCM_RECORD_LEN);
    let mut plaintext = 0;
    for k in 0..records {
        let start = k * GCM_RECORD_LEN;
        let data_len = (chunk.data.len() - start).min(GCM_RECORD_LEN) - TAG_LEN;
        chunk.data.copy_within(start..start + data_len, plaintext);
        plaintext += data_len;
    }
    chunk.data.truncate(plaintext);
}

/// Moves a plaintext chunk's 16 KiB pieces apart to their places as GCM records, each with room
/// for its tag after it (from the back, so nothing is overwritten before it moves), and calls
/// `each` with each record's GCM chunk index and bytes right after it moved, while they are in
/// the cache; the stream's last chunk ends in a short, possibly empty, piece. Returns the index
/// of the chunk's first GCM chunk.
fn spread_records(
    spec: &StreamSpec<'_>,
    chunk: &mut Chunk,
    mut each: impl FnMut(u64, &mut [u8]) -> Result<(), PipelineError>,
) -> Result<u64, PipelineError> {
    let len = chunk.data.len();
    let pieces = if chunk.last {
        len / GCM_CHUNK_LEN + 1
    } else {
        len / GCM_CHUNK_LEN
    };
    let first = chunk.index * spec.gcm_per_chunk() as u64;
    if first + pieces as u64 > MAX_CHUNKS {
        return Err(PipelineError::TooLong);
    }
    chunk.data.resize(len + pieces * TAG_LEN, 0);
    for k in (0..pieces).rev() {
        let start = k * GCM_CHUNK_LEN;
        let data_len = (len - start).min(GCM_CHUNK_LEN);
        let at = k * GCM_RECORD_LEN;
        chunk.data.copy_within(start..start + data_len, at);
        each(
            first + k as u64,
            &mut chunk.data[at..at + data_len + TAG_LEN],
        )?;
    }
    Ok(first)
}

/// [`seal`] of a GCM chunk by an engine that seals whole records: the pieces moved apart to
/// their records, then all of them sealed, tags and all, by the engine in one call (to share
/// out among its workers). Handing a one-thread engine each record right after it moved, while
/// in the cache, measured no faster (Zen 4, `paraes bench --mode gcm`: 0.63x CTR instead of
/// 0.66x at 1 MiB, the same at 16 MiB), nor did prefetching the next piece meanwhile.
fn seal_records(
    spec: &StreamSpec<'_>,
    cipher: &ChunkCipher,
    chunk: &mut Chunk,
) -> Result<(), PipelineError> {
    let first = spread_records(spec, chunk, |_, _| Ok(()))?;
    engine_records(spec, cipher, first, &mut chunk.data)
}

/// [`open`] of a GCM chunk by an engine that opens whole records: the chunk's shape checked,
/// every record checked and decrypted by the engine (the chunk is released only when all of
/// them verified), then the tags removed.
fn open_records(
    spec: &StreamSpec<'_>,
    cipher: &ChunkCipher,
    chunk: &mut Chunk,
) -> Result<(), PipelineError> {
    let first = check_gcm_records(spec, chunk)?;
    engine_records(spec, cipher, first, &mut chunk.data)?;
    join_records(chunk);
    Ok(())
}

/// The engine's [`Engine::gcm_records`] for `spec`'s direction, its errors as the pipeline's.
fn engine_records(
    spec: &StreamSpec<'_>,
    cipher: &ChunkCipher,
    first: u64,
    records: &mut [u8],
) -> Result<(), PipelineError> {
    let done = spec
        .engine
        .gcm_records(cipher, spec.direction, first, records)
        .ok_or_else(|| {
            EngineError::Unsupported(format!(
                "the {} engine stopped sealing GCM records itself",
                spec.engine.name()
            ))
        })?;
    done.map_err(|e| match e {
        RecordsError::Tampered(index) => PipelineError::Tampered(index),
        RecordsError::Engine(e) => PipelineError::Engine(e),
    })
}

/// Adds the tags of an encrypted chunk (none for a raw stream).
fn tag_chunk(spec: &StreamSpec<'_>, chunk: &mut Chunk) -> Result<(), PipelineError> {
    match spec.tags {
        Tags::None => {}
        Tags::Chunk(auth) => {
            let tag = auth.tag(chunk.index, chunk.last, &chunk.data);
            chunk.data.extend_from_slice(&tag);
        }
        Tags::Gcm(cipher) => {
            // The plaintext's 16 KiB pieces, each encrypted in place, move apart to make room
            // for their tags, each computed right after its piece moved.
            spread_records(spec, chunk, |index, record| {
                let (data, tag) = record.split_at_mut(record.len() - TAG_LEN);
                tag.copy_from_slice(&cipher.tag(index, data));
                Ok(())
            })?;
        }
    }
    Ok(())
}

/// Checks (and for v2 removes) the tags of a chunk read from a tagged stream, and its shape.
pub(crate) fn verify_tags(spec: &StreamSpec<'_>, chunk: &mut Chunk) -> Result<(), PipelineError> {
    let auth = match spec.tags {
        Tags::None => return Ok(()),
        Tags::Chunk(auth) => auth,
        Tags::Gcm(cipher) => return verify_gcm_chunk(spec, cipher, chunk),
    };
    let body_len = chunk
        .data
        .len()
        .checked_sub(TAG_LEN)
        .ok_or(PipelineError::Truncated(chunk.index))?;
    let (body, tag) = chunk.data.split_at(body_len);
    if !auth.verify(chunk.index, chunk.last, body, tag) {
        return Err(PipelineError::Tampered(chunk.index));
    }
    chunk.data.truncate(body_len);
    let empty_tail = chunk.data.is_empty() && chunk.index > 0;
    let bad_ecb = spec.mode == Mode::Ecb
        && (!chunk.data.len().is_multiple_of(16) || (spec.padding && chunk.data.is_empty()));
    if empty_tail || bad_ecb {
        return Err(PipelineError::Truncated(chunk.index));
    }
    Ok(())
}

/// Checks every GCM tag of a chunk of records (a full chunk's records are all full; the
/// stream's last chunk ends in a record shorter than a full one), leaving the tags in place
/// for [`crypt_chunk`].
fn verify_gcm_chunk(
    spec: &StreamSpec<'_>,
    cipher: &ChunkCipher,
    chunk: &Chunk,
) -> Result<(), PipelineError> {
    let first = check_gcm_records(spec, chunk)?;
    for (k, record) in chunk.data.chunks(GCM_RECORD_LEN).enumerate() {
        let (data, tag) = record.split_at(record.len() - TAG_LEN);
        if !cipher.verify(first + k as u64, data, tag) {
            return Err(PipelineError::Tampered(first + k as u64));
        }
    }
    Ok(())
}

/// Checks the shape of a chunk of GCM records read from a stream: the stream's last chunk ends
/// in a record shorter than a full one, every record holds its tag, and no index passes the
/// limit. Returns the index of its first GCM chunk.
fn check_gcm_records(spec: &StreamSpec<'_>, chunk: &Chunk) -> Result<u64, PipelineError> {
    let first = chunk.index * spec.gcm_per_chunk() as u64;
    let len = chunk.data.len();
    let records = len.div_ceil(GCM_RECORD_LEN) as u64;
    if chunk.last && len.is_multiple_of(GCM_RECORD_LEN) {
        // No final short chunk: the message was cut at a chunk boundary.
        return Err(PipelineError::Truncated(first + records));
    }
    if first + records > MAX_CHUNKS {
        return Err(PipelineError::TooLong);
    }
    // Only the last record can be short; it must still hold its tag.
    if !len.is_multiple_of(GCM_RECORD_LEN) && len % GCM_RECORD_LEN < TAG_LEN {
        return Err(PipelineError::Truncated(first + records - 1));
    }
    Ok(first)
}

/// ECB needs whole blocks; say so in terms of the user's options.
fn check_whole_blocks(spec: &StreamSpec<'_>, chunk: &Chunk) -> Result<(), PipelineError> {
    if spec.mode == Mode::Ecb && !chunk.data.len().is_multiple_of(16) {
        let total = chunk.index * spec.chunk_size as u64 + chunk.data.len() as u64;
        return Err(PipelineError::NotWholeBlocks(total));
    }
    Ok(())
}

/// Removes and checks PKCS#7 padding from the last decrypted chunk.
fn strip_padding(data: &mut Vec<u8>) -> Result<(), PipelineError> {
    let pad = usize::from(*data.last().ok_or(PipelineError::BadPadding)?);
    let valid = (1..=16).contains(&pad)
        && pad <= data.len()
        && data[data.len() - pad..]
            .iter()
            .all(|&b| usize::from(b) == pad);
    if !valid {
        return Err(PipelineError::BadPadding);
    }
    data.truncate(data.len() - pad);
    Ok(())
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::container::{self, BodyParams, Opened, Recipient};
    use crate::cpu::CpuEngine;
    use crate::key::{Key, KeySize};
    use crate::modes;

    const CHUNK: usize = 4096;

    fn data(len: usize) -> Vec<u8> {
        (0..len).map(|i| (i * 31 + i / 7) as u8).collect()
    }

    fn run_spec(spec: &StreamSpec<'_>, input: &[u8]) -> Result<Vec<u8>, PipelineError> {
        let mut out = Vec::new();
        run(spec, &mut &input[..], &mut out, &|_| {})?;
        Ok(out)
    }

    /// A freshly sealed container's keys (its body key is random, derived from a new file key).
    fn sealed(key_size: KeySize) -> Opened {
        let params = BodyParams {
            mode: Mode::Ctr,
            key_size,
            chunk_size: CHUNK,
        };
        let key = Key::new(&[5; 16]).unwrap();
        container::seal_v2(params, &[Recipient::Key(key)])
            .unwrap()
            .1
    }

    fn spec<'a>(
        engine: &'a CpuEngine,
        keys: &'a Opened,
        mode: Mode,
        direction: Direction,
        auth: Option<&'a Authenticator>,
    ) -> StreamSpec<'a> {
        StreamSpec {
            mode,
            counter: [0xf0; 16],
            chunk_size: CHUNK,
            tags: auth.map_or(Tags::None, Tags::Chunk),
            ..keys.stream_spec(engine, direction)
        }
    }

    /// The body (tags removed) is the plain mode stream, and decryption gives the input back.
    #[test]
    fn body_is_the_raw_stream_and_round_trips() {
        let engine = CpuEngine::new(Some(2)).unwrap().with_split(0, 1024);
        let keys = sealed(KeySize::from_len(24).unwrap());
        let auth = keys.authenticator().unwrap().clone();
        for mode in [Mode::Ctr, Mode::Ecb] {
            for len in [0, 1, 15, 16, 17, CHUNK - 1, CHUNK, CHUNK + 1, 3 * CHUNK + 5] {
                let plain = data(len);
                let enc = spec(&engine, &keys, mode, Direction::Encrypt, Some(&auth));
                let sealed = run_spec(&enc, &plain).unwrap();
                let body: Vec<u8> = sealed
                    .chunks(CHUNK + TAG_LEN)
                    .flat_map(|c| c[..c.len() - TAG_LEN].to_vec())
                    .collect();
                let mut expected = plain.clone();
                if mode == Mode::Ecb {
                    let pad = 16 - len % 16;
                    expected.resize(len + pad, pad as u8);
                }
                let job = Job {
                    mode,
                    direction: Direction::Encrypt,
                    key: enc.key,
                    counter: [0xf0; 16],
                    offset: 0,
                    counters: Counters::Stream,
                };
                modes::apply(crate::AesImpl::Portable, &job, &mut expected).unwrap();
                assert!(
                    body == expected,
                    "{mode:?} len {len}: body is not the raw stream"
                );
                let dec = spec(&engine, &keys, mode, Direction::Decrypt, Some(&auth));
                assert!(
                    run_spec(&dec, &sealed).unwrap() == plain,
                    "{mode:?} len {len}"
                );
            }
        }
    }

    /// Dropping the last chunk, or appending one, fails authentication.
    /// Chunk by chunk through [`ChunkReader`] and [`seal`]/[`open`] (as a distributed runner
    /// does it) gives the same bytes as the threaded pipeline, whatever the chunk boundaries.
    #[test]
    fn chunk_at_a_time_matches_the_pipeline() {
        let engine = CpuEngine::new(Some(1)).unwrap();
        let keys = sealed(KeySize::from_len(16).unwrap());
        let auth = keys.authenticator().unwrap().clone();
        for mode in [Mode::Ctr, Mode::Ecb] {
            for auth in [None, Some(&auth)] {
                for len in [
                    0,
                    1,
                    16,
                    CHUNK - 1,
                    CHUNK,
                    CHUNK + 1,
                    2 * CHUNK,
                    2 * CHUNK + 17,
                ] {
                    let plain = data(len);
                    let mut expected_chunks = 0;
                    let mut sealed = Vec::new();
                    let enc = spec(&engine, &keys, mode, Direction::Encrypt, auth);
                    let mut input = &plain[..];
                    let mut reader = ChunkReader::new(&enc, &mut input);
                    while let Some(mut chunk) = reader.next_chunk(enc.new_buffer()).unwrap() {
                        assert_eq!(chunk.index, expected_chunks);
                        expected_chunks += 1;
                        seal(&enc, &mut chunk).unwrap();
                        sealed.extend_from_slice(&chunk.data);
                    }
                    assert_eq!(sealed, run_spec(&enc, &plain).unwrap(), "{mode:?} {len}");
                    let dec = spec(&engine, &keys, mode, Direction::Decrypt, auth);
                    let mut opened = Vec::new();
                    let mut input = &sealed[..];
                    let mut reader = ChunkReader::new(&dec, &mut input);
                    while let Some(mut chunk) = reader.next_chunk(dec.new_buffer()).unwrap() {
                        open(&dec, &mut chunk).unwrap();
                        opened.extend_from_slice(&chunk.data);
                    }
                    assert_eq!(opened, plain, "{mode:?} {len}");
                }
            }
        }
    }

    /// A stream cut into contiguous segments (from the first chunk, mid-stream, and the one that
    /// ends the stream) run separately, as MPI ranks run their shares, and concatenated is
    /// exactly the whole stream: for CTR and ECB (padded or not), raw or with chunk tags, both
    /// ways, whatever the cuts.
    #[test]
    fn segments_concatenated_are_the_whole_stream() {
        let engine = CpuEngine::new(Some(1)).unwrap();
        let keys = sealed(KeySize::from_len(32).unwrap());
        let auth = keys.authenticator().unwrap().clone();
        let cases = [(Mode::Ctr, false), (Mode::Ecb, true), (Mode::Ecb, false)];
        for (mode, padding) in cases {
            for auth in [None, Some(&auth)] {
                let lens = [
                    0,
                    1,
                    16,
                    CHUNK - 1,
                    CHUNK,
                    CHUNK + 1,
                    3 * CHUNK,
                    4 * CHUNK + 32,
                ];
                for len in lens {
                    if mode == Mode::Ecb && !padding && len % 16 != 0 {
                        continue;
                    }
                    let mut enc = spec(&engine, &keys, mode, Direction::Encrypt, auth);
                    let mut dec = spec(&engine, &keys, mode, Direction::Decrypt, auth);
                    (enc.padding, dec.padding) = (padding, padding);
                    let plain = data(len);
                    let sealed = run_spec(&enc, &plain).unwrap();
                    assert_eq!(run_spec(&dec, &sealed).unwrap(), plain);
                    for (spec, input, whole) in [(&enc, &plain, &sealed), (&dec, &sealed, &plain)] {
                        let chunks = ChunkReader::new(spec, &mut &input[..]).count_chunks();
                        for cuts in segment_cuts(chunks) {
                            for stages in [Stages::Threaded, Stages::InTurn] {
                                let what = format!("{mode:?} pad {padding} {len} B {cuts:?}");
                                let joined =
                                    run_in_segments(spec, stages, input, &cuts).expect(&what);
                                assert!(joined == *whole, "{what} {stages:?} {:?}", spec.direction);
                            }
                        }
                    }
                }
            }
        }
    }

    impl<R: Read> ChunkReader<'_, R> {
        fn count_chunks(mut self) -> u64 {
            let mut n = 0;
            while self.next_chunk(Vec::new()).unwrap().is_some() {
                n += 1;
            }
            n
        }
    }

    /// Cut points `0 = c0 <= c1 <= ... < chunks` (segments may be empty, except the last).
    fn segment_cuts(chunks: u64) -> Vec<Vec<u64>> {
        let mut all = vec![vec![0]];
        for a in 0..chunks {
            all.push(vec![0, a]);
            for b in a..chunks {
                all.push(vec![0, a, b]);
            }
        }
        all
    }

    /// Runs the segments starting at chunks `cuts` separately and concatenates their outputs.
    fn run_in_segments(
        spec: &StreamSpec<'_>,
        stages: Stages,
        input: &[u8],
        cuts: &[u64],
    ) -> Result<Vec<u8>, PipelineError> {
        let record = spec.input_record_len() as u64;
        let at = |chunk: u64| (chunk * record).min(input.len() as u64) as usize;
        let mut out = Vec::new();
        for (i, &first_index) in cuts.iter().enumerate() {
            let segment = Segment {
                first_index,
                ends_stream: i + 1 == cuts.len(),
            };
            let end = cuts.get(i + 1).map_or(input.len(), |&next| at(next));
            let mut part = Vec::new();
            let n = run_segment(
                spec,
                segment,
                stages,
                &mut &input[at(first_index)..end],
                &mut part,
                &|_| {},
            )?;
            assert_eq!(n, part.len() as u64);
            out.extend_from_slice(&part);
        }
        Ok(out)
    }

    /// A segment that does not end the stream must be whole records; one that does must end with
    /// the last chunk (a tagged segment cut short fails authentication).
    #[test]
    fn segments_refuse_partial_records_and_check_the_last_chunk() {
        let engine = CpuEngine::new(Some(1)).unwrap();
        let keys = sealed(KeySize::from_len(16).unwrap());
        let auth = keys.authenticator().unwrap().clone();
        let enc = spec(&engine, &keys, Mode::Ctr, Direction::Encrypt, Some(&auth));
        let middle = Segment {
            first_index: 2,
            ends_stream: false,
        };
        let input = data(CHUNK + 5);
        for stages in [Stages::Threaded, Stages::InTurn] {
            let err = run_segment(
                &enc,
                middle,
                stages,
                &mut &input[..],
                &mut Vec::new(),
                &|_| {},
            );
            assert!(matches!(err, Err(PipelineError::Read(_))), "{err:?}");
            let dec = spec(&engine, &keys, Mode::Ctr, Direction::Decrypt, Some(&auth));
            let sealed = run_spec(&enc, &data(3 * CHUNK)).unwrap();
            let record = CHUNK + TAG_LEN;
            // Chunks 1.. as the stream's end: fine; chunk 1 alone as the end: chunk 1 is not last.
            let tail = Segment {
                first_index: 1,
                ends_stream: true,
            };
            let ok = run_segment(
                &dec,
                tail,
                stages,
                &mut &sealed[record..],
                &mut Vec::new(),
                &|_| {},
            );
            assert_eq!(ok.unwrap(), 2 * CHUNK as u64);
            let cut = &sealed[record..2 * record];
            let err = run_segment(&dec, tail, stages, &mut &cut[..], &mut Vec::new(), &|_| {});
            assert!(matches!(err, Err(PipelineError::Tampered(1))), "{err:?}");
        }
    }

    #[test]
    fn chunk_level_truncation_and_extension_fail() {
        let engine = CpuEngine::new(Some(1)).unwrap();
        let keys = sealed(KeySize::from_len(16).unwrap());
        let auth = keys.authenticator().unwrap().clone();
        let enc = spec(&engine, &keys, Mode::Ctr, Direction::Encrypt, Some(&auth));
        let dec = spec(&engine, &keys, Mode::Ctr, Direction::Decrypt, Some(&auth));
        let sealed = run_spec(&enc, &data(3 * CHUNK)).unwrap();
        let record = CHUNK + TAG_LEN;
        assert!(matches!(
            run_spec(&dec, &sealed[..2 * record]),
            Err(PipelineError::Tampered(1))
        ));
        let mut extended = sealed.clone();
        extended.extend_from_slice(&sealed[..record]);
        assert!(run_spec(&dec, &extended).is_err());
        assert!(matches!(
            run_spec(&dec, &[]),
            Err(PipelineError::Truncated(0))
        ));
    }

    struct FailingReader(usize);

    impl Read for FailingReader {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            if self.0 == 0 {
                return Err(io::Error::other("disk on fire"));
            }
            let n = buf.len().min(self.0);
            buf[..n].fill(1);
            self.0 -= n;
            Ok(n)
        }
    }

    struct FailingWriter(usize);

    impl Write for FailingWriter {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            if self.0 < buf.len() {
                return Err(io::Error::new(io::ErrorKind::StorageFull, "no space"));
            }
            self.0 -= buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    /// Reader and writer failures end the stream with their error, without hanging.
    #[test]
    fn io_errors_stop_the_pipeline() {
        let engine = CpuEngine::new(Some(2)).unwrap();
        let keys = sealed(KeySize::from_len(32).unwrap());
        let enc = spec(&engine, &keys, Mode::Ctr, Direction::Encrypt, None);
        let read_err = run(
            &enc,
            &mut FailingReader(10 * CHUNK + 3),
            &mut Vec::new(),
            &|_| {},
        );
        assert!(
            matches!(read_err, Err(PipelineError::Read(_))),
            "{read_err:?}"
        );
        let input = data(20 * CHUNK);
        let write_err = run(
            &enc,
            &mut &input[..],
            &mut FailingWriter(5 * CHUNK),
            &|_| {},
        );
        assert!(
            matches!(write_err, Err(PipelineError::Write(_))),
            "{write_err:?}"
        );
    }

    /// Raw ECB: bad padding and partial blocks are clean errors.
    #[test]
    fn raw_ecb_errors_are_clean() {
        let engine = CpuEngine::new(Some(1)).unwrap();
        let keys = sealed(KeySize::from_len(16).unwrap());
        let mut no_pad = spec(&engine, &keys, Mode::Ecb, Direction::Encrypt, None);
        no_pad.padding = false;
        assert!(matches!(
            run_spec(&no_pad, &data(33)),
            Err(PipelineError::NotWholeBlocks(33))
        ));
        let dec = spec(&engine, &keys, Mode::Ecb, Direction::Decrypt, None);
        let garbage = data(64);
        assert!(matches!(
            run_spec(&dec, &garbage),
            Err(PipelineError::BadPadding)
        ));
    }

    /// GCM chunk streams through the pipeline are Cobblestone message bodies byte for byte
    /// (whatever the batch, stages and engine split), decrypt back, and refuse truncation at
    /// and between chunks, an extra chunk, a swap and a changed byte, releasing nothing
    /// unauthenticated.
    #[test]
    fn gcm_chunk_streams_are_cobblestone_bodies() {
        use crate::cobblestone::{self, MessageKeys, Variant, PREFIX_LEN};
        let engine = CpuEngine::new(Some(2)).unwrap().with_split(0, 4096);
        let input_key = [0x11u8; 32];
        let salt = [0x22u8; cobblestone::SALT_LEN];
        let keys = MessageKeys::derive(Variant::Cobblestone256, &input_key, &salt, b"c").unwrap();
        let cipher = keys.chunks();
        let g = GCM_CHUNK_LEN;
        for batch in [g, 4 * g] {
            for len in [0, 1, g - 1, g, g + 1, 4 * g, 4 * g + 5, 9 * g + 77] {
                let plain = data(len);
                let expected =
                    cobblestone::seal(Variant::Cobblestone256, &input_key, &salt, b"c", &plain)
                        .unwrap();
                let body = &expected[PREFIX_LEN..];
                let spec = |direction| StreamSpec::message(&engine, direction, &cipher, batch);
                let enc = spec(Direction::Encrypt);
                let dec = spec(Direction::Decrypt);
                for stages in [Stages::Threaded, Stages::InTurn] {
                    let mut out = Vec::new();
                    run_segment(
                        &enc,
                        Segment::WHOLE,
                        stages,
                        &mut &plain[..],
                        &mut out,
                        &|_| {},
                    )
                    .unwrap();
                    assert!(out == body, "batch {batch} len {len} {stages:?}");
                    let mut back = Vec::new();
                    run_segment(
                        &dec,
                        Segment::WHOLE,
                        stages,
                        &mut &body[..],
                        &mut back,
                        &|_| {},
                    )
                    .unwrap();
                    assert!(back == plain, "batch {batch} len {len} {stages:?} decrypt");
                }
                // Cut at every GCM chunk boundary and one byte into each record: refused, and
                // only whole authenticated pipeline chunks came out before the refusal.
                let records = body.len().div_ceil(GCM_RECORD_LEN);
                for k in 0..records {
                    for cut in [k * GCM_RECORD_LEN, k * GCM_RECORD_LEN + 1] {
                        let mut out = Vec::new();
                        let refused = run(&dec, &mut &body[..cut], &mut out, &|_| {});
                        assert!(refused.is_err(), "batch {batch} len {len} cut {cut}");
                        assert!(out.len() % batch == 0 && plain.starts_with(&out));
                    }
                }
                let mut extended = body.to_vec();
                extended.extend_from_slice(&cipher.tag(records as u64, &[]));
                assert!(run_spec(&dec, &extended).is_err(), "an extra empty chunk");
                let mut flipped = body.to_vec();
                flipped[body.len() / 2] ^= 4;
                assert!(run_spec(&dec, &flipped).is_err());
                if records > 2 {
                    let mut swapped = body.to_vec();
                    swapped[..GCM_RECORD_LEN]
                        .copy_from_slice(&body[GCM_RECORD_LEN..2 * GCM_RECORD_LEN]);
                    swapped[GCM_RECORD_LEN..2 * GCM_RECORD_LEN]
                        .copy_from_slice(&body[..GCM_RECORD_LEN]);
                    assert!(matches!(
                        run_spec(&dec, &swapped),
                        Err(PipelineError::Tampered(0))
                    ));
                }
            }
        }
        // A batch that is not whole GCM chunks, or ECB, is refused before anything runs.
        let bad = StreamSpec::message(&engine, Direction::Encrypt, &cipher, g + 16);
        assert!(run_spec(&bad, &data(10)).is_err());
    }

    /// A CPU engine that computes GCM chunks as a CTR job and tags (not the stitched kernel):
    /// the fastest implementation other than VAES-512, which answers `None` to
    /// [`Engine::gcm_records`].
    fn ctr_and_tags_engine(cipher: &ChunkCipher) -> CpuEngine {
        let imp = crate::AesImpl::available()
            .into_iter()
            .rfind(|&imp| imp != crate::AesImpl::Vaes512)
            .expect("the portable path");
        let engine = CpuEngine::with_aes_impl(imp, Some(1)).unwrap();
        assert!(engine
            .gcm_records(cipher, Direction::Encrypt, 0, &mut [])
            .is_none());
        engine
    }

    /// CPU engines on the detected implementation (the stitched kernel where the CPU has it):
    /// on the calling thread, and over a pool with every record a piece of its own.
    fn stitched_engines(cipher: &ChunkCipher) -> Vec<CpuEngine> {
        let engines = vec![
            CpuEngine::new(Some(1)).unwrap(),
            CpuEngine::new(Some(3)).unwrap().with_split(0, 4096),
        ];
        for engine in &engines {
            let answer = engine.gcm_records(cipher, Direction::Decrypt, 0, &mut []);
            assert_eq!(answer.is_some(), cipher.runs_stitched());
        }
        if !cipher.runs_stitched() {
            eprintln!("no stitched GCM kernel on this CPU: both paths are CTR and tags here");
        }
        engines
    }

    /// GCM chunk streams sealed and opened by an engine that does whole records (the stitched
    /// kernel) are byte for byte those of the CTR job and tags path, and Cobblestone bodies: at
    /// GCM chunk and batch edges, both key sizes, both directions, threaded and in turn, whole
    /// and in segments.
    #[test]
    fn engine_sealed_records_are_the_ctr_and_tags_stream() {
        use crate::cobblestone::{self, MessageKeys, Variant, PREFIX_LEN};
        let g = GCM_CHUNK_LEN;
        let salt = [0x5au8; cobblestone::SALT_LEN];
        for variant in [Variant::Cobblestone128, Variant::Cobblestone256] {
            let input_key = vec![0x21u8; variant.key_size().bytes()];
            let keys = MessageKeys::derive(variant, &input_key, &salt, b"p").unwrap();
            let cipher = keys.chunks();
            let reference = ctr_and_tags_engine(&cipher);
            let engines = stitched_engines(&cipher);
            for batch in [g, 4 * g] {
                let lens = [
                    0,
                    1,
                    g - 1,
                    g,
                    g + 1,
                    batch - 1,
                    batch,
                    batch + 1,
                    3 * batch,
                    3 * batch + g + 5,
                ];
                for len in lens {
                    let plain = data(len);
                    let message =
                        cobblestone::seal(variant, &input_key, &salt, b"p", &plain).unwrap();
                    let body = &message[PREFIX_LEN..];
                    let spec =
                        |engine, direction| StreamSpec::message(engine, direction, &cipher, batch);
                    let ref_enc = spec(&reference, Direction::Encrypt);
                    let ref_dec = spec(&reference, Direction::Decrypt);
                    assert!(run_spec(&ref_enc, &plain).unwrap() == body);
                    assert!(run_spec(&ref_dec, body).unwrap() == plain);
                    for engine in &engines {
                        for (direction, input, output) in [
                            (Direction::Encrypt, &plain[..], body),
                            (Direction::Decrypt, body, &plain[..]),
                        ] {
                            let spec = spec(engine, direction);
                            let chunks = ChunkReader::new(&spec, &mut &input[..]).count_chunks();
                            for stages in [Stages::Threaded, Stages::InTurn] {
                                let what = format!(
                                    "{variant:?} {} batch {batch} len {len} {direction:?} {stages:?}",
                                    engine.name()
                                );
                                for cuts in [
                                    vec![0],
                                    vec![0, chunks / 2],
                                    vec![0, 1.min(chunks - 1), chunks - 1],
                                ] {
                                    let out =
                                        run_in_segments(&spec, stages, input, &cuts).expect(&what);
                                    assert!(out == output, "{what} {cuts:?}");
                                }
                            }
                        }
                    }
                }
            }
        }
    }

    /// A changed record in the middle of a batch (its data or its tag, alone or with a later
    /// one in the same batch) is refused with its index, and no byte of its batch is written:
    /// the writer gets the batches before it, whole, and nothing else.
    #[test]
    fn a_tampered_record_in_a_batch_releases_nothing_of_it() {
        use crate::cobblestone::{MessageKeys, Variant, SALT_LEN};
        let g = GCM_CHUNK_LEN;
        let batch = 4 * g;
        let keys =
            MessageKeys::derive(Variant::Cobblestone256, &[9; 32], &[1; SALT_LEN], b"t").unwrap();
        let cipher = keys.chunks();
        let plain = data(3 * batch + 100);
        let reference = ctr_and_tags_engine(&cipher);
        let body = run_spec(
            &StreamSpec::message(&reference, Direction::Encrypt, &cipher, batch),
            &plain,
        )
        .unwrap();
        let mut engines = stitched_engines(&cipher);
        engines.push(reference);
        // Records 5 and 6 are the second batch's second and third; 12 is the last (short) one.
        let cases: [(&[usize], usize, u64); 5] = [
            (&[6], 100, 6),
            (&[6], g + 2, 6),
            (&[5, 6], 7, 5),
            (&[6, 7], g, 6),
            (&[12], 50, 12),
        ];
        for engine in &engines {
            let dec = StreamSpec::message(engine, Direction::Decrypt, &cipher, batch);
            for &(records, at, expected) in &cases {
                let mut tampered = body.clone();
                for &k in records {
                    tampered[k * GCM_RECORD_LEN + at] ^= 1;
                }
                for stages in [Stages::Threaded, Stages::InTurn] {
                    let what = format!("{} {records:?} +{at} {stages:?}", engine.name());
                    let mut out = Vec::new();
                    let err = run_segment(
                        &dec,
                        Segment::WHOLE,
                        stages,
                        &mut &tampered[..],
                        &mut out,
                        &|_| {},
                    );
                    assert!(
                        matches!(err, Err(PipelineError::Tampered(i)) if i == expected),
                        "{what}: {err:?}"
                    );
                    let released = expected as usize / 4 * batch;
                    assert!(out == plain[..released], "{what}: {} bytes out", out.len());
                }
                // One chunk at a time, as an MPI rank opens them: the same refusal.
                let mut input = &tampered[..];
                let mut reader = ChunkReader::new(&dec, &mut input);
                let mut refused = None;
                while let Some(mut chunk) = reader.next_chunk(Vec::new()).unwrap() {
                    if let Err(e) = open(&dec, &mut chunk) {
                        refused = Some((chunk.index, e));
                        break;
                    }
                }
                let (index, err) = refused.expect("refused");
                assert_eq!(index, expected / 4);
                assert!(matches!(err, PipelineError::Tampered(i) if i == expected));
            }
        }
    }
}
