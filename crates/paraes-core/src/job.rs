//! What an engine is asked to do, as data: the [`Job`] of a buffer transformed in place (mode,
//! direction, key, counter, position, counter layout), the [`RecordsJob`] of whole GCM chunk
//! records sealed or opened out of place, and their errors.
//!
//! This module is a leaf: it knows AES keys ([`crate::key`]) and nothing of the engines, the
//! pipeline or any message format, so every one of them can depend on it. [`crate::engine`]
//! re-exports all of it beside the [`crate::Engine`] trait.

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
/// Bytes of a GCM tag.
pub const GCM_TAG_LEN: usize = 16;
/// Bytes of a whole GCM chunk record: a full chunk's data and its tag.
pub const GCM_RECORD_LEN: usize = GCM_CHUNK_LEN + GCM_TAG_LEN;

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
    /// with [`GCM_RECORD_LEN`], as in a message (ciphertext and tag).
    GcmChunks {
        /// The message's base nonce.
        base_nonce: [u8; 12],
        /// Bytes from one record to the next.
        stride: usize,
    },
}

/// GCM chunk `index`'s 96-bit nonce: `base_nonce XOR be96(index)` (C2SP chunked encryption).
pub fn gcm_chunk_nonce(base_nonce: &[u8; 12], index: u64) -> [u8; 12] {
    let mut nonce = *base_nonce;
    for (n, i) in nonce[4..].iter_mut().zip(index.to_be_bytes()) {
        *n ^= i;
    }
    nonce
}

/// What to do to a buffer: everything an engine needs besides the bytes themselves.
///
/// Made with [`Job::new`], [`Job::ctr`], [`Job::ecb`] or [`Job::gcm_chunks`], and changed with
/// [`Job::at`], [`Job::advanced`] and the `with_` methods.
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
    /// `mode` in `direction` under `key` with the stream counter `counter` (ignored by ECB),
    /// for a buffer at byte `offset` of the stream.
    pub const fn new(
        mode: Mode,
        direction: Direction,
        key: &'a ExpandedKey,
        counter: [u8; 16],
        offset: u64,
    ) -> Self {
        Job {
            mode,
            direction,
            key,
            counter,
            offset,
            counters: Counters::Stream,
        }
    }

    /// CTR under `key` with the stream counter `counter`, for a buffer at byte `offset` of the
    /// stream (its direction is [`Direction::Encrypt`], which CTR ignores).
    pub const fn ctr(key: &'a ExpandedKey, counter: [u8; 16], offset: u64) -> Self {
        Job::new(Mode::Ctr, Direction::Encrypt, key, counter, offset)
    }

    /// ECB in `direction` under `key`, for a buffer at the start of the stream (see
    /// [`Job::at`]).
    pub const fn ecb(key: &'a ExpandedKey, direction: Direction) -> Self {
        Job::new(Mode::Ecb, direction, key, [0; 16], 0)
    }

    /// CTR with GCM chunk counters ([`Counters::GcmChunks`]: `base_nonce`, records of `stride`
    /// bytes) under `key`, for a buffer at byte `offset` of the stream.
    pub const fn gcm_chunks(
        key: &'a ExpandedKey,
        base_nonce: [u8; 12],
        stride: usize,
        offset: u64,
    ) -> Self {
        Job {
            counters: Counters::GcmChunks { base_nonce, stride },
            ..Job::ctr(key, [0; 16], offset)
        }
    }

    /// The same job for a buffer at byte `offset` of the stream.
    pub const fn at(self, offset: u64) -> Self {
        Job { offset, ..self }
    }

    /// The same job for a buffer that starts `bytes` further into the stream. A stream counter
    /// is 128 bits wide while the byte offset is 64: past byte 2^64 the whole blocks move into
    /// the counter (block `p / 16` of the stream is `counter + p / 16` either way), so a slice
    /// beyond it never wraps back to the keystream of the stream's start.
    pub fn advanced(&self, bytes: u64) -> Job<'a> {
        if let Some(offset) = self.offset.checked_add(bytes) {
            return self.at(offset);
        }
        match self.counters {
            Counters::Stream => {
                let counter =
                    u128::from_be_bytes(self.counter).wrapping_add(u128::from(self.offset / 16));
                let rebased = self
                    .with_counter(counter.to_be_bytes())
                    .at(self.offset % 16);
                rebased.at(rebased.offset + bytes)
            }
            // A GCM chunk's counter restarts with each chunk's nonce, and no chunked stream
            // reaches 2^64 bytes (2^32 chunks of 16 KiB at most).
            Counters::GcmChunks { .. } => panic!("a GCM chunk stream past byte 2^64"),
        }
    }

    /// The same job in `direction`.
    pub const fn with_direction(self, direction: Direction) -> Self {
        Job { direction, ..self }
    }

    /// The same job in `mode`.
    pub const fn with_mode(self, mode: Mode) -> Self {
        Job { mode, ..self }
    }

    /// The same job with the stream counter `counter`.
    pub const fn with_counter(self, counter: [u8; 16]) -> Self {
        Job { counter, ..self }
    }

    /// The same job with its counter blocks laid out as `counters`.
    pub const fn with_counters(self, counters: Counters) -> Self {
        Job { counters, ..self }
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

/// Seal or open whole GCM chunk records, out of place: AES-GCM (NIST SP 800-38D) with no
/// associated data over each chunk, as C2SP chunked encryption lays chunks out. Everything an
/// engine needs besides the bytes: the direction, the round keys, GHASH's hash key H, the base
/// nonce and the index of the first chunk; no message format type.
///
/// # Layout
///
/// The *records* side (the output when sealing, the input when opening) is chunk records back
/// to back: record `k` (GCM chunk `first_index + k`) starts at byte `k * GCM_RECORD_LEN` and
/// holds the chunk's data and then its 16-byte tag. Every record but the last holds a whole
/// [`GCM_CHUNK_LEN`] bytes of data; the last holds `0..=GCM_CHUNK_LEN` bytes of data and its
/// tag, so a records side of `n` bytes has `n.div_ceil(GCM_RECORD_LEN)` records and is refused
/// when its last record has fewer than 16 bytes ([`RecordsJob::records`]). An empty records side
/// is no record.
///
/// The *plaintext* side (the input when sealing, the output when opening) is the same chunks'
/// data back to back, without the tags: exactly `records_len - 16 * records` bytes
/// ([`RecordsJob::plaintext_len`]); chunk `k`'s data is at byte `k * GCM_CHUNK_LEN`.
///
/// Chunk `i`'s nonce is `base_nonce XOR be96(i)` ([`gcm_chunk_nonce`]); its data is CTR from
/// the counter block `nonce || be32(2)` and its tag is `GHASH_H(ciphertext zero-padded ||
/// be64(0) || be64(8 * len)) XOR E(nonce || be32(1))`, `H = E(0^128)` under the same key.
///
/// Sealing encrypts each chunk's data into its record and writes its tag after it. Opening
/// checks every record's tag and writes its decrypted data; when a tag does not verify the
/// answer is [`RecordsError::Tampered`] with the lowest failing index, and the output holds
/// nothing the caller may use (it releases none of it).
#[derive(Clone, Copy)]
pub struct RecordsJob<'a> {
    /// [`Direction::Encrypt`]: seal plaintext into records; [`Direction::Decrypt`]: open
    /// records into plaintext.
    pub direction: Direction,
    /// The expanded AES key (128 or 256 bits in C2SP chunked encryption; any AES key here).
    pub key: &'a ExpandedKey,
    /// GHASH's hash key H = E(0^128) under `key` (secret, as the key is).
    pub hash_key: &'a [u8; 16],
    /// The message's base nonce: chunk `i`'s nonce is `base_nonce XOR be96(i)`.
    pub base_nonce: [u8; 12],
    /// The GCM chunk index of record 0.
    pub first_index: u64,
}

impl std::fmt::Debug for RecordsJob<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RecordsJob")
            .field("direction", &self.direction)
            .field("keys", &"<redacted>")
            .field("base_nonce", &self.base_nonce)
            .field("first_index", &self.first_index)
            .finish()
    }
}

impl<'a> RecordsJob<'a> {
    /// Sealing or opening (`direction`) chunk records from GCM chunk `first_index` on, under
    /// `key` and its hash key `hash_key` with the base nonce `base_nonce`.
    pub const fn new(
        direction: Direction,
        key: &'a ExpandedKey,
        hash_key: &'a [u8; 16],
        base_nonce: [u8; 12],
        first_index: u64,
    ) -> Self {
        RecordsJob {
            direction,
            key,
            hash_key,
            base_nonce,
            first_index,
        }
    }

    /// The same job for records that start `records` chunks further on (a piece of the
    /// buffers from record `records`, for an engine that shares records out among workers).
    pub fn advanced(&self, records: u64) -> RecordsJob<'a> {
        RecordsJob {
            first_index: self.first_index + records,
            ..*self
        }
    }

    /// The nonce of record `k` (GCM chunk `first_index + k`).
    pub fn nonce(&self, k: u64) -> [u8; 12] {
        gcm_chunk_nonce(&self.base_nonce, self.first_index + k)
    }

    /// How many records a records side of `records_len` bytes holds (see the layout above), or
    /// `None` when its last record has no room for its tag.
    pub fn records(records_len: usize) -> Option<usize> {
        let tail = records_len % GCM_RECORD_LEN;
        (tail == 0 || tail >= GCM_TAG_LEN).then(|| records_len.div_ceil(GCM_RECORD_LEN))
    }

    /// The plaintext bytes of a records side of `records_len` bytes, or `None` as for
    /// [`RecordsJob::records`].
    pub fn plaintext_len(records_len: usize) -> Option<usize> {
        Some(records_len - GCM_TAG_LEN * Self::records(records_len)?)
    }

    /// The records side of `chunks` GCM chunks whose data, back to back, is `plaintext_len`
    /// bytes, or `None` when no such records exist (every chunk but the last is whole, the last
    /// is at most whole, and no chunks have no data).
    pub fn records_len(plaintext_len: usize, chunks: usize) -> Option<usize> {
        let Some(whole) = chunks.checked_sub(1) else {
            return (plaintext_len == 0).then_some(0);
        };
        let whole = whole.checked_mul(GCM_CHUNK_LEN)?;
        let fits = (whole..=whole.checked_add(GCM_CHUNK_LEN)?).contains(&plaintext_len);
        fits.then(|| plaintext_len + chunks * GCM_TAG_LEN)
    }

    /// Checks that `input` and `output` lengths are laid out as above for this job's direction
    /// and that the chunk indices do not overflow; returns the number of records.
    pub fn check(&self, input_len: usize, output_len: usize) -> Result<usize, EngineError> {
        let (records_len, plaintext_len) = match self.direction {
            Direction::Encrypt => (output_len, input_len),
            Direction::Decrypt => (input_len, output_len),
        };
        let records = Self::records(records_len).ok_or_else(|| {
            EngineError::Unsupported(format!(
                "{records_len} bytes are not GCM chunk records: the last one has no room for its tag"
            ))
        })?;
        if Self::plaintext_len(records_len) != Some(plaintext_len) {
            return Err(EngineError::Unsupported(format!(
                "{records_len} bytes of GCM chunk records hold {} bytes of data, not {plaintext_len}",
                records_len - GCM_TAG_LEN * records
            )));
        }
        let last = (records as u64).saturating_sub(1);
        if self.first_index.checked_add(last).is_none() {
            return Err(EngineError::Unsupported(
                "GCM chunk indices past 2^64".into(),
            ));
        }
        Ok(records)
    }

    /// [`RecordsJob::check`] for a job run in place on one records side of `records_len`
    /// bytes ([`crate::Engine::process_records_in_place`]); returns the number of records.
    pub fn check_in_place(&self, records_len: usize) -> Result<usize, EngineError> {
        let plaintext_len = Self::plaintext_len(records_len).unwrap_or(usize::MAX);
        match self.direction {
            Direction::Encrypt => self.check(plaintext_len, records_len),
            Direction::Decrypt => self.check(records_len, plaintext_len),
        }
    }

    /// Where each record's data lies on a records side of `records_len` bytes (laid out as
    /// above; a side whose last record has no room for its tag gives the data of its whole
    /// records only): the ranges a reader fills before sealing in place, or a writer sends on
    /// after opening in place, skipping the tags.
    pub fn data_slots(records_len: usize) -> impl Iterator<Item = std::ops::Range<usize>> {
        (0..records_len / GCM_RECORD_LEN + usize::from(records_len % GCM_RECORD_LEN >= GCM_TAG_LEN))
            .map(move |k| {
                let start = k * GCM_RECORD_LEN;
                start..(start + GCM_RECORD_LEN).min(records_len) - GCM_TAG_LEN
            })
    }

    /// The data slots of the records side `records`, back to back (the plaintext side of
    /// records opened in place).
    pub fn gather_data(records: &[u8]) -> Vec<u8> {
        let mut data = Vec::with_capacity(records.len());
        for slot in Self::data_slots(records.len()) {
            data.extend_from_slice(&records[slot]);
        }
        data
    }

    /// Puts `data` into the data slots of the records side `records`, in order, as far as
    /// either goes (the plaintext side of records to seal in place).
    pub fn scatter_data(data: &[u8], records: &mut [u8]) {
        let mut rest = data;
        for slot in Self::data_slots(records.len()) {
            let (here, next) = rest.split_at(slot.len().min(rest.len()));
            records[slot.start..slot.start + here.len()].copy_from_slice(here);
            rest = next;
        }
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

/// Why an engine could not seal or open GCM chunk records (a [`RecordsJob`]).
#[derive(Debug, thiserror::Error)]
pub enum RecordsError {
    /// The tag of GCM chunk `.0` does not verify (the lowest such index of the records).
    #[error("GCM chunk {0} failed authentication")]
    Tampered(u64),
    /// The engine failed, does not run records jobs, or the buffers are not laid out as
    /// [`RecordsJob`] says.
    #[error(transparent)]
    Engine(#[from] EngineError),
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The records side and the plaintext side agree: lengths a writer makes round-trip, and
    /// a last record without its tag is refused.
    #[test]
    fn records_lengths() {
        let (g, r, t) = (GCM_CHUNK_LEN, GCM_RECORD_LEN, GCM_TAG_LEN);
        for (chunks, plain) in [
            (0, 0),
            (1, 0),
            (1, 1),
            (1, g),
            (2, g),
            (2, g + 1),
            (3, 3 * g),
        ] {
            let len = RecordsJob::records_len(plain, chunks).unwrap();
            assert_eq!(RecordsJob::records(len), Some(chunks), "{chunks} {plain}");
            assert_eq!(RecordsJob::plaintext_len(len), Some(plain));
        }
        for (chunks, plain) in [(0, 1), (1, g + 1), (2, g - 1), (3, 0)] {
            assert_eq!(
                RecordsJob::records_len(plain, chunks),
                None,
                "{chunks} {plain}"
            );
        }
        assert_eq!(RecordsJob::records(r + t - 1), None);
        assert_eq!(RecordsJob::records(t - 1), None);
        assert_eq!(RecordsJob::records(2 * r), Some(2));
        let key = crate::Key::new(&[0; 16]).unwrap().expand();
        let job = RecordsJob::new(Direction::Encrypt, &key, &[0; 16], [0; 12], u64::MAX - 1);
        assert_eq!(job.check(g + 1, r + t + 1).unwrap(), 2);
        assert!(job.check(g, r + t + 1).is_err());
        assert!(job.check(3 * g, 3 * r).is_err());
        let open = RecordsJob {
            direction: Direction::Decrypt,
            first_index: 0,
            ..job
        };
        assert_eq!(open.check(r + t + 1, g + 1).unwrap(), 2);
        assert!(open.check(r + t - 1, g - 1).is_err());
        assert_eq!(job.advanced(1).nonce(0), open.nonce(u64::MAX));
        assert_eq!(job.check_in_place(r + t + 1).unwrap(), 2);
        assert_eq!(open.check_in_place(r + t + 1).unwrap(), 2);
        assert!(job.check_in_place(r + t - 1).is_err());
        assert!(open.check_in_place(t - 1).is_err());
    }

    /// The data slots of a records side are its records less their tags, and hold exactly the
    /// plaintext side's bytes.
    /// A CTR job advanced past byte 2^64 of its stream keeps the 128-bit counter: block
    /// `p / 16` is `counter + p / 16`, not the wrapped offset's block (which would reuse the
    /// keystream of the stream's start); and the engine, whose threads each take a slice by
    /// `advanced`, gives the bytes the single-threaded reference gives.
    #[test]
    fn advancing_past_byte_2_64_moves_the_whole_blocks_into_the_counter() {
        let key = ExpandedKey::new(&crate::Key::new(&[7; 16]).unwrap());
        let counter = [0xff; 16];
        let job = Job::ctr(&key, counter, u64::MAX - 15);
        let later = job.advanced(48);
        let block = |job: &Job<'_>| {
            u128::from_be_bytes(job.counter).wrapping_add(u128::from(job.offset / 16))
        };
        let expected = u128::from_be_bytes(counter).wrapping_add((1u128 << 60) + 2);
        assert_eq!(block(&later), expected);
        assert_eq!(block(&later.advanced(16)), expected.wrapping_add(1));

        let two = crate::CpuEngine::new(Some(2)).unwrap();
        let mut threaded = vec![0u8; 1 << 20];
        crate::Engine::process(&two, &job, &mut threaded).unwrap();
        // One thread, one call: its counter runs on in 128 bits by itself.
        let one = crate::CpuEngine::new(Some(1)).unwrap();
        let mut reference = vec![0u8; 1 << 20];
        crate::Engine::process(&one, &job, &mut reference).unwrap();
        assert!(
            threaded == reference,
            "the threads' slices past 2^64 differ"
        );
    }

    #[test]
    fn data_slots_skip_the_tags() {
        let (g, r, t) = (GCM_CHUNK_LEN, GCM_RECORD_LEN, GCM_TAG_LEN);
        let slots = |len| RecordsJob::data_slots(len).collect::<Vec<_>>();
        assert!(slots(0).is_empty());
        assert_eq!(slots(t), vec![0..0]);
        assert_eq!(slots(t + 5), vec![0..5]);
        assert_eq!(slots(r), vec![0..g]);
        assert_eq!(slots(r + t), vec![0..g, r..r]);
        assert_eq!(slots(2 * r + t + 1), vec![0..g, r..r + g, 2 * r..2 * r + 1]);
        for len in [0, t, r, r + t + 9, 3 * r, 3 * r + t] {
            let data: usize = slots(len).iter().map(|s| s.len()).sum();
            assert_eq!(Some(data), RecordsJob::plaintext_len(len), "{len}");
            // Scattered into the slots and gathered again, the tags' places untouched.
            let plain: Vec<u8> = (0..data).map(|i| (i % 251) as u8 + 1).collect();
            let mut records = vec![0u8; len];
            RecordsJob::scatter_data(&plain, &mut records);
            assert_eq!(RecordsJob::gather_data(&records), plain, "{len}");
            let tags = records.chunks(r).map(|record| &record[record.len() - t..]);
            assert!(tags.flatten().all(|&b| b == 0), "{len}");
        }
    }
}
