//! The Engine seam: one trait that every engine (CPU, GPU, Sunway simulator) implements; MPI is
//! a runner whose ranks each run one of them.
//!
//! An engine transforms a buffer in place for a [`Job`]: mode, direction, expanded key, initial
//! counter block and the buffer's byte position in the stream. Because CTR is seekable (block `i`
//! of a stream uses counter block `counter + i`) and ECB is position-free, any chunk of a stream can be
//! processed by any engine, anywhere, in any order, and the bytes are always the same.
//!
//! CTR's counter blocks lie over the stream in one of two ways ([`Counters`]): one 128-bit
//! counter for the whole stream (SP 800-38A; raw streams and v2 bodies), or GCM's counters per
//! 16 KiB chunk (C2SP chunked encryption; v3 bodies), where each byte's counter is still a
//! function of its position alone, so the same splitting and seeking rules hold.
//!
//! For GCM chunks an engine may also seal and open whole chunk records itself
//! ([`Engine::gcm_records`]: CTR and tag together, as the CPU engine's stitched kernel does);
//! an engine that does not (the default) is given the CTR job, and the caller computes the tags.

use crate::cobblestone::ChunkCipher;
use crate::key::ExpandedKey;

/// Block cipher mode of operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Mode {
    /// Electronic codebook: each 16-byte block on its own (whole blocks only).
    Ecb,
    /// Counter mode (NIST SP 800-38A): 128-bit big-endian counter, any length, seekable.
    Ctr,
}

/// Encrypt or decrypt. CTR ignores it: one keystream XOR serves both.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Direction {
    /// Plaintext to ciphertext.
    Encrypt,
    /// Ciphertext to plaintext.
    Decrypt,
}

/// Bytes of a GCM chunk's data in [`Counters::GcmChunks`] (C2SP chunked encryption's chunk).
pub const GCM_CHUNK_LEN: usize = 16 << 10;

/// How CTR's counter blocks lie over the stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Counters {
    /// One 128-bit big-endian counter for the whole stream: block `i` uses
    /// [`Job::counter`]` + i` (NIST SP 800-38A, OpenSSL).
    Stream,
    /// GCM chunks (format v3's body, C2SP chunked encryption): the stream is records of
    /// `stride` bytes (at least [`GCM_CHUNK_LEN`]), record `r` from byte `r * stride`; its first
    /// [`GCM_CHUNK_LEN`] bytes are chunk `r`'s data, block `j` of them under the counter block
    /// `(base_nonce XOR be96(r)) || be32(2 + j)` (GCM's counters, which never carry out of 32
    /// bits within a chunk); its other bytes (a tag's room) are left as they are. [`Job::counter`]
    /// is not used. With `stride` = [`GCM_CHUNK_LEN`] the chunks lie back to back (plaintext);
    /// with `GCM_CHUNK_LEN + 16`, as in a message (ciphertext and tag).
    GcmChunks {
        /// The message's base nonce.
        base_nonce: [u8; 12],
        /// Bytes from one record to the next.
        stride: usize,
    },
}

/// What to do to a buffer: everything an engine needs besides the bytes themselves.
#[derive(Clone, Copy, Debug)]
pub struct Job<'a> {
    /// Mode of operation.
    pub mode: Mode,
    /// Direction (ignored by CTR).
    pub direction: Direction,
    /// The expanded key.
    pub key: &'a ExpandedKey,
    /// CTR's counter block of the stream's block 0 (block `i` uses `counter + i`, 128-bit
    /// big-endian); ignored by ECB. Elsewhere called the IV or the nonce: one value, one name.
    pub counter: [u8; 16],
    /// Byte position of the buffer's first byte in the stream.
    pub offset: u64,
    /// How CTR's counter blocks lie over the stream (ECB: [`Counters::Stream`]).
    pub counters: Counters,
}

impl<'a> Job<'a> {
    /// The same job for a buffer that starts `bytes` further into the stream.
    pub fn advanced(&self, bytes: u64) -> Job<'a> {
        Job {
            offset: self.offset + bytes,
            ..*self
        }
    }

    /// Checks that the job can be applied to a buffer of `len` bytes: ECB needs whole blocks at
    /// block-aligned positions, and GCM chunks are CTR's only, with a stride that holds one.
    pub fn check(&self, len: usize) -> Result<(), EngineError> {
        if self.mode == Mode::Ecb && (!self.offset.is_multiple_of(16) || !len.is_multiple_of(16)) {
            return Err(EngineError::PartialBlock {
                offset: self.offset,
                len,
            });
        }
        if let Counters::GcmChunks { stride, .. } = self.counters {
            if self.mode != Mode::Ctr || stride < GCM_CHUNK_LEN {
                return Err(EngineError::Unsupported(format!(
                    "GCM chunk counters need CTR and a stride of at least {GCM_CHUNK_LEN} bytes (got {} and {stride})",
                    self.mode
                )));
            }
        }
        Ok(())
    }
}

/// Why an engine could not process a buffer.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// ECB was asked to work on a partial block.
    #[error(
        "ECB works on whole 16-byte blocks, but got {len} bytes at stream offset {offset}: \
         pad the data to a multiple of 16 bytes or use CTR"
    )]
    PartialBlock {
        /// Stream offset of the buffer.
        offset: u64,
        /// Buffer length.
        len: usize,
    },
    /// The engine cannot run on this machine or in this build.
    #[error("{0}")]
    Unavailable(String),
    /// The engine failed while working (lost rank, ...).
    #[error("{0}")]
    Failed(String),
    /// The engine's device failed while working; the device's own error is the source, so a
    /// caller can choose what to advise by its type (a GPU out of memory, a lost device).
    #[error("the {device} failed")]
    Device {
        /// What failed, in words ("GPU").
        device: &'static str,
        /// The device's error.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync + 'static>,
    },
    /// The job is not one this engine (or any) can run.
    #[error("{0}")]
    Unsupported(String),
}

/// Why an engine could not seal or open GCM chunk records ([`Engine::gcm_records`]).
#[derive(Debug, thiserror::Error)]
pub enum RecordsError {
    /// The tag of GCM chunk `.0` does not verify (the lowest such index of the records).
    #[error("GCM chunk {0} failed authentication")]
    Tampered(u64),
    /// The engine failed, or the records are not laid out as a message's.
    #[error(transparent)]
    Engine(#[from] EngineError),
}

/// An AES engine: transforms buffers in place. Implementations must give the same bytes as
/// [`crate::modes::apply`] (and so as every other engine) for every job and buffer.
pub trait Engine: Send + Sync {
    /// A short human-readable description, e.g. `cpu (vaes512, 2 threads)`.
    fn name(&self) -> String;

    /// How many parallel workers the engine uses (threads, ranks, simulated cores), the
    /// denominator of parallel efficiency.
    fn workers(&self) -> usize;

    /// Applies `job` to `buf` in place.
    fn process(&self, job: &Job<'_>, buf: &mut [u8]) -> Result<(), EngineError>;

    /// Seals ([`Direction::Encrypt`]) or opens ([`Direction::Decrypt`]) whole GCM chunks of
    /// `cipher`'s message in place, or returns `None` (the default), touching nothing, where
    /// the engine has no such path for this cipher: the caller then runs [`Engine::process`]
    /// with [`Counters::GcmChunks`] and computes the tags itself. An engine gives the same
    /// answer for every call with the same cipher, `records` or not, so a caller may ask with
    /// an empty `records` before it lays a buffer out.
    ///
    /// `records` is laid out as in a message: record `k` (GCM chunk `first_index + k`) starts at
    /// byte `k * (GCM_CHUNK_LEN + 16)` and holds the chunk's data (every record but the last a
    /// whole [`GCM_CHUNK_LEN`] bytes) and then 16 bytes for its tag; the last record may be
    /// shorter but holds at least the tag (an empty `records` is no chunk). Sealing encrypts each
    /// record's data and writes its tag after it. Opening checks each record's tag and decrypts
    /// its data (the tags stay as they are); a record whose tag does not verify keeps its
    /// ciphertext, and the answer is [`RecordsError::Tampered`] with the lowest such index (other
    /// records may have been decrypted: the caller releases none of the buffer then).
    ///
    /// It must give the same bytes as [`Engine::process`] and [`ChunkCipher::tag`] would.
    fn gcm_records(
        &self,
        cipher: &ChunkCipher,
        direction: Direction,
        first_index: u64,
        records: &mut [u8],
    ) -> Option<Result<(), RecordsError>> {
        let _ = (cipher, direction, first_index, records);
        None
    }

    /// For engines that model another machine (the Sunway simulator): the modelled machine's
    /// time for every buffer processed so far. `None` (the default) for engines whose time is
    /// the host's own.
    fn modelled(&self) -> Option<Modelled> {
        None
    }
}

/// The work an engine that models another machine has done so far, in that machine's time.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Modelled {
    /// Bytes processed.
    pub bytes: u64,
    /// Seconds the modelled machine took for them.
    pub seconds: f64,
}

impl Modelled {
    /// The modelled throughput in Gbps (1e9 bits per second); 0 before any work.
    pub fn gbps(&self) -> f64 {
        self.throughput().gbps()
    }

    /// The modelled bytes over the modelled seconds.
    pub fn throughput(&self) -> crate::Throughput {
        crate::Throughput::new(self.bytes, self.seconds)
    }

    /// The work done between `earlier` and `self`.
    pub fn since(&self, earlier: &Modelled) -> Modelled {
        Modelled {
            bytes: self.bytes - earlier.bytes,
            seconds: self.seconds - earlier.seconds,
        }
    }
}
