//! The chunk pipeline: a reader thread, the engine, the chunk tags and a writer thread, joined by
//! bounded queues over a fixed pool of buffers, so reading, encrypting, authenticating and
//! writing overlap and memory stays at [`BUFFERS`] x [`StreamSpec::buffer_capacity`] whatever
//! the input size.
//!
//! The same pipeline serves raw streams, the v2 container (a chunk tag after each chunk) and GCM
//! chunk streams (C2SP chunked encryption: bare Cobblestone messages and format v3 bodies, where
//! a pipeline chunk is a batch of 16 KiB GCM chunks, each followed by its tag), whole streams
//! ([`run`]) and contiguous segments of a stream ([`run_segment`]: chunk indices from any first
//! index, the last-chunk flag only where the segment ends the stream), so an MPI rank that owns
//! a range of chunks runs the same stages over positioned I/O ([`crate::positioned`]).
//! Decryption releases a chunk to the writer only after its tags have verified.
//!
//! A GCM chunk stream whose engine runs the records job itself
//! ([`Engine::runs_records`](crate::Engine::runs_records): the CPU engine with more than one
//! thread, its threads sharing out whole records, or with its stitched kernel, CTR and GHASH in
//! one pass) has one stage between the reader and the writer: the engine seals or opens each pipeline chunk's records whole
//! ([`Engine::process_records`](crate::Engine::process_records)), out of place into a second
//! buffer. Any other stream goes through the engine's CTR or ECB job, and a tagged one through
//! the tags computed here, in a stage of their own.
//!
//! The parts: `spec` (what to do to a stream: [`StreamSpec`], [`Tags`]), `reader` (cutting
//! the input into chunks: [`ChunkReader`]), `steps` (what one chunk of a raw or v2 stream, or
//! of a GCM stream by CTR and tags, goes through), `gcm` (GCM chunk records: laid out, tagged,
//! checked, or handed to the engine's records job) and `stages` (the threads, or the same
//! steps in turn).

use std::io;

use crate::engine::EngineError;

mod combined;
mod gcm;
mod parallel;
mod placed;
mod reader;
mod slots;
mod spec;
mod stages;
mod steps;
#[cfg(test)]
mod tests;
mod turns;

pub use parallel::{run_parallel, run_parallel_segment, Ran, Sink, Source, Workers, WINDOW};
pub use reader::ChunkReader;
pub use spec::{StreamSpec, Tags};
pub use stages::{run, run_segment};
pub(crate) use steps::verify_tags;

/// The default chunk size (see docs/RESULTS.md for the measurement behind it).
pub const DEFAULT_CHUNK_SIZE: usize = 1 << 20;

/// Buffers in flight: two at the reader (one held back to learn whether it is the last), and
/// one queued and one at work before each of the engine, the MAC and the writer. A stream whose
/// engine runs the records job has no MAC stage; its engine stage keeps one of the buffers as
/// the output of its out-of-place job. Either way a run holds at most `BUFFERS` buffers of at
/// most [`StreamSpec::buffer_capacity`] bytes each.
pub const BUFFERS: usize = 8;

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
    /// Reader, engine, MAC and writer on threads of their own (no MAC stage where the engine
    /// runs a GCM stream's records job), overlapping over [`BUFFERS`] buffers: for a process
    /// with two or more cores.
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

/// Everything one chunk needs on the way out, on the calling thread: padding, encryption and tag
/// for [`Direction::Encrypt`](crate::Direction::Encrypt). The pipeline runs the same steps in
/// separate stages; distributed runners (MPI ranks) call this on the chunks they own.
///
/// Where the engine runs the records job of a GCM chunk stream, the chunk is sealed out of
/// place: `chunk.data` then comes back in another buffer. The calling thread keeps one buffer
/// for this between calls (as large as the largest chunk it sealed or opened this way, until
/// the thread ends), and the buffer `chunk.data` held becomes it.
pub fn seal(spec: &StreamSpec<'_>, chunk: &mut Chunk) -> Result<(), PipelineError> {
    if spec.runs_records() {
        return gcm::with_spare(|spare| gcm::crypt_records(spec, chunk, spare));
    }
    steps::seal(spec, chunk)
}

/// The length of the records a GCM chunk stream's pipeline chunk of `plain_len` plaintext
/// bytes seals to (the stream's last when `last`), or `None` for a chunk that is not whole GCM
/// chunks and not the last: the buffer [`seal_in_place`] takes, its plaintext in the data slots
/// ([`crate::RecordsJob::data_slots`]).
pub fn sealed_len(plain_len: usize, last: bool) -> Option<usize> {
    gcm::sealed_len(plain_len, last)
}

/// [`seal`] of a GCM chunk stream's chunk whose plaintext already lies in the data slots of its
/// records (`chunk.data` is [`sealed_len`] bytes), sealed where it lies by the engine's records
/// job in place ([`StreamSpec::runs_records_in_place`]; an engine that does not run it in
/// place runs it through a copy), a few records at a time: what `paraes enc`'s workers do with
/// a window they read from a file ([`run_parallel`]), less the reads.
pub fn seal_in_place(spec: &StreamSpec<'_>, chunk: &mut Chunk) -> Result<(), PipelineError> {
    if spec.direction != crate::Direction::Encrypt {
        return Err(PipelineError::Engine(EngineError::Unsupported(
            "sealing in place is for encryption".into(),
        )));
    }
    // As a worker seals a window it reads from a file, a piece at a time, without the reads.
    gcm::crypt_read_in_place(spec, chunk, |_, _| Ok(()))
}

/// Everything one chunk needs on the way in: tag check, decryption and padding removal for
/// [`Direction::Decrypt`](crate::Direction::Decrypt) (see [`seal`], also for the buffer
/// `chunk.data` comes back in).
pub fn open(spec: &StreamSpec<'_>, chunk: &mut Chunk) -> Result<(), PipelineError> {
    if spec.runs_records() {
        return gcm::with_spare(|spare| gcm::crypt_records(spec, chunk, spare));
    }
    steps::open(spec, chunk)
}
