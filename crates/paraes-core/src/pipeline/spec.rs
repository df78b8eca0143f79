//! What to do to a stream: [`StreamSpec`] and how it is authenticated ([`Tags`]), with the
//! lengths of its records and the engine job of each chunk.

use crate::chunk_tag::{Authenticator, TAG_LEN};
use crate::cobblestone::ChunkCipher;
use crate::engine::{
    Counters, Direction, Engine, EngineError, Job, Mode, GCM_CHUNK_LEN, GCM_RECORD_LEN, GCM_TAG_LEN,
};
use crate::key::ExpandedKey;

use super::PipelineError;

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
    pub(super) fn gcm_per_chunk(&self) -> usize {
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
            Tags::Gcm(_) => self.gcm_per_chunk() * GCM_TAG_LEN,
        }
    }

    /// Whether the stream's final chunk must be shorter than a full chunk: ECB encryption with
    /// padding always adds a padding block, and GCM chunks always end in a short (possibly
    /// empty) one, so input that ends on a chunk boundary gets a final chunk of its own.
    pub fn last_chunk_short(&self) -> bool {
        self.direction == Direction::Encrypt
            && ((self.mode == Mode::Ecb && self.padding) || matches!(self.tags, Tags::Gcm(_)))
    }

    /// How many chunks an input of `len` bytes is cut into (as [`super::ChunkReader`] cuts
    /// it): the last may be short, or empty where the stream must end in a short chunk.
    pub fn chunk_count(&self, len: u64) -> u64 {
        let record = self.input_record_len() as u64;
        if self.last_chunk_short() {
            len / record + 1
        } else {
            len.div_ceil(record).max(1)
        }
    }

    /// The length of the output of an input of `len` bytes, when the input alone says it
    /// (not for a padded ECB decryption, whose padding is seen only once decrypted; not for
    /// an input that cannot be a whole stream).
    pub fn output_len(&self, len: u64) -> Option<u64> {
        let chunks = self.chunk_count(len);
        let before_last = (chunks - 1) * self.input_record_len() as u64;
        let last = usize::try_from(len - before_last).ok()?;
        let last_out = match (self.direction, self.tags) {
            (Direction::Encrypt, Tags::None) if self.mode == Mode::Ecb && self.padding => {
                last + 16 - last % 16
            }
            (Direction::Encrypt, Tags::None) => last,
            (Direction::Encrypt, Tags::Chunk(_)) => last + TAG_LEN,
            (Direction::Encrypt, Tags::Gcm(_)) => last + (last / GCM_CHUNK_LEN + 1) * GCM_TAG_LEN,
            (Direction::Decrypt, Tags::None) if self.mode == Mode::Ecb && self.padding => {
                return None
            }
            (Direction::Decrypt, Tags::None) => last,
            (Direction::Decrypt, Tags::Chunk(_)) => last.checked_sub(TAG_LEN)?,
            (Direction::Decrypt, Tags::Gcm(_)) => crate::engine::RecordsJob::plaintext_len(last)?,
        };
        Some((chunks - 1) * self.output_record_len() as u64 + last_out as u64)
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

    /// The engine job of chunk `index`.
    pub(super) fn job(&self, index: u64) -> Job<'_> {
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
        Job::new(self.mode, self.direction, self.key, self.counter, offset).with_counters(counters)
    }
}
