//! The Engine seam: one trait that every engine (CPU, GPU, MPI rank, Sunway simulator) implements.
//!
//! An engine transforms a buffer in place for a [`Job`]: mode, direction, expanded key, initial
//! counter block and the buffer's byte position in the stream. Because CTR is seekable (block `i`
//! of a stream uses counter block `counter + i`) and ECB is position-free, any chunk of a stream can be
//! processed by any engine, anywhere, in any order, and the bytes are always the same.

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
    /// block-aligned positions.
    pub fn check(&self, len: usize) -> Result<(), EngineError> {
        if self.mode == Mode::Ecb && (!self.offset.is_multiple_of(16) || !len.is_multiple_of(16)) {
            return Err(EngineError::PartialBlock {
                offset: self.offset,
                len,
            });
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
    /// The engine failed while working (device error, lost rank, ...).
    #[error("{0}")]
    Failed(String),
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
