//! GCM chunk records (C2SP chunked encryption) in the pipeline: a pipeline chunk is a batch of
//! 16 KiB GCM chunks, each followed by its tag in the stream's ciphertext. Either the engine
//! seals or opens a batch's records whole ([`crate::RecordsJob`], out of place) where it runs
//! that job, or the batch goes through the engine's CTR job ([`super::steps`]) and the tags are
//! computed and checked here.

use std::cell::Cell;

use super::{Chunk, PipelineError, StreamSpec, Tags};
use crate::cobblestone::{ChunkCipher, MAX_CHUNKS};
use crate::engine::{
    Direction, EngineError, RecordsError, RecordsJob, GCM_CHUNK_LEN, GCM_RECORD_LEN, GCM_TAG_LEN,
};

impl StreamSpec<'_> {
    /// The records job of the pipeline chunk `index` of a GCM chunk stream, `None` for any
    /// other stream.
    fn records_job(&self, index: u64) -> Option<RecordsJob<'_>> {
        match self.tags {
            Tags::Gcm(cipher) => {
                let first = index * self.gcm_per_chunk() as u64;
                Some(cipher.records_job(self.direction, first))
            }
            _ => None,
        }
    }

    /// Whether the stream is GCM chunks and its engine runs their records job itself
    /// ([`crate::Engine::runs_records`]): then each pipeline chunk is sealed or opened whole by
    /// [`crypt_records`], and there are no separate CTR and tag steps.
    pub(super) fn runs_records(&self) -> bool {
        self.records_job(0)
            .is_some_and(|job| self.engine.runs_records(&job))
    }

    /// Whether the stream is GCM chunks and its engine runs their records job in place
    /// ([`crate::Engine::runs_records_in_place`]): then a window read from a file can be read
    /// straight into its records' data slots ([`super::sealed_len`]) and sealed there
    /// ([`super::seal_in_place`]), and an opened window written from between its tags.
    pub fn runs_records_in_place(&self) -> bool {
        self.records_job(0)
            .is_some_and(|job| self.engine.runs_records_in_place(&job))
    }
}

/// The length of the records a plaintext pipeline chunk of `plain_len` bytes seals to (the
/// stream's last, when `last`: it ends in a short, possibly empty, GCM chunk; any other is whole
/// GCM chunks), so that its plaintext can be read into their data slots; `None` for a chunk
/// that is not.
pub(super) fn sealed_len(plain_len: usize, last: bool) -> Option<usize> {
    RecordsJob::records_len(plain_len, pieces(plain_len, last))
}

/// How many GCM chunks a plaintext pipeline chunk of `len` bytes holds: 16 KiB pieces, and the
/// stream's last chunk (`last`) ends in a short, possibly empty, one.
fn pieces(len: usize, last: bool) -> usize {
    len / GCM_CHUNK_LEN + usize::from(last)
}

/// The index of the first GCM chunk of pipeline chunk `index`, where `count` GCM chunks from
/// it stay under C2SP's limit.
fn first_under_limit(
    spec: &StreamSpec<'_>,
    index: u64,
    count: usize,
) -> Result<u64, PipelineError> {
    let first = index * spec.gcm_per_chunk() as u64;
    if first.saturating_add(count as u64) > MAX_CHUNKS {
        return Err(PipelineError::TooLong);
    }
    Ok(first)
}

/// Seals or opens (by `spec`'s direction) the GCM records of `chunk` in place with the engine's
/// records job: `chunk.data` is the records side, sealing's plaintext in the data slots
/// ([`sealed_len`] long) and opening's records as read; afterwards it holds the sealed records,
/// or the opened plaintext in the data slots (the output is then those slots, back to back).
/// Opening checks the chunk's shape as [`crypt_records`] does; on an error nothing of
/// `chunk.data` may be released.
pub(super) fn crypt_records_in_place(
    spec: &StreamSpec<'_>,
    chunk: &mut Chunk,
) -> Result<(), PipelineError> {
    let job = job_in_place(spec, chunk)?;
    spec.engine
        .process_records_in_place(&job, &mut chunk.data)
        .map_err(records_error)
}

/// The job that seals or opens (by `spec`'s direction) `chunk`'s records side in place, once
/// its layout is checked ([`sealing_in_place`], [`check_records`]).
fn job_in_place<'s>(
    spec: &'s StreamSpec<'_>,
    chunk: &Chunk,
) -> Result<RecordsJob<'s>, PipelineError> {
    match spec.direction {
        Direction::Encrypt => sealing_in_place(spec, chunk),
        Direction::Decrypt => {
            check_records(spec, chunk)?;
            job_of(spec, chunk.index)
        }
    }
}

/// The job that seals `chunk`'s records side in place, once its layout is checked: the
/// stream's last chunk ends in a short (possibly empty) GCM chunk, any other is whole ones (a
/// layout that says otherwise would seal a truncation as whole), and no index passes the limit.
fn sealing_in_place<'s>(
    spec: &'s StreamSpec<'_>,
    chunk: &Chunk,
) -> Result<RecordsJob<'s>, PipelineError> {
    let len = chunk.data.len();
    if chunk.last == len.is_multiple_of(GCM_RECORD_LEN) {
        return Err(PipelineError::Engine(EngineError::Unsupported(format!(
            "{len} bytes of records laid out for the {} chunk of a stream",
            if chunk.last { "last" } else { "inner" }
        ))));
    }
    let records = RecordsJob::records(len).unwrap_or(usize::MAX);
    first_under_limit(spec, chunk.index, records)?;
    job_of(spec, chunk.index)
}

/// The records job of pipeline chunk `index` of `spec`'s GCM chunk stream.
fn job_of<'s>(spec: &'s StreamSpec<'_>, index: u64) -> Result<RecordsJob<'s>, PipelineError> {
    let job = spec
        .records_job(index)
        .ok_or_else(|| EngineError::Unsupported("GCM records of a stream without them".into()))?;
    Ok(job)
}

/// Records sealed or opened at a time by [`crypt_read_in_place`]: 256 KiB of data and their
/// tags, which stay in a core's L2 cache from the read that brings them to the kernel that
/// seals or opens them (and under the CPU engine's [`crate::CpuEngine`] threshold for sharing a
/// buffer among its threads: each worker runs its own pieces). Measured on Zen 4 against 8
/// and 32 (docs/RESULTS.md, "A file's windows read and crypted a piece at a time").
const RECORDS_AT_A_TIME: usize = 16;

/// Seals or opens (by `spec`'s direction) the GCM records of `chunk` in place as
/// [`crypt_records_in_place`] does, reading them first, a few records at a time:
/// `read(records, offset)` brings in the input of the records side `records` from the chunk's
/// input byte `offset` on (sealing: plaintext into their data slots; opening: the records
/// whole), and those records are sealed or opened at once, while the bytes just read are still
/// in the core's cache. `chunk.data` is the records side: [`sealed_len`] long when sealing, the
/// records' length when opening. A read error is [`PipelineError::Read`]; on any error nothing
/// of `chunk.data` may be released.
pub(super) fn crypt_read_in_place(
    spec: &StreamSpec<'_>,
    chunk: &mut Chunk,
    mut read: impl FnMut(&mut [u8], u64) -> std::io::Result<()>,
) -> Result<(), PipelineError> {
    let job = job_in_place(spec, chunk)?;
    // Input bytes from one record to the next: plaintext when sealing, records when opening.
    let input_unit = match spec.direction {
        Direction::Encrypt => GCM_CHUNK_LEN,
        Direction::Decrypt => GCM_RECORD_LEN,
    };
    let piece_len = RECORDS_AT_A_TIME * GCM_RECORD_LEN;
    for (k, records) in chunk.data.chunks_mut(piece_len).enumerate() {
        let first = k * RECORDS_AT_A_TIME;
        read(records, (first * input_unit) as u64).map_err(PipelineError::Read)?;
        spec.engine
            .process_records_in_place(&job.advanced(first as u64), records)
            .map_err(records_error)?;
    }
    Ok(())
}

fn records_error(e: RecordsError) -> PipelineError {
    match e {
        RecordsError::Tampered(index) => PipelineError::Tampered(index),
        RecordsError::Engine(e) => PipelineError::Engine(e),
    }
}

thread_local! {
    /// The output buffer of [`super::seal`] and [`super::open`] where the engine runs the
    /// records job: one per thread that calls them, kept between calls so its allocation is
    /// reused, as the pipeline's own buffers are.
    static SPARE: Cell<Vec<u8>> = const { Cell::new(Vec::new()) };
}

/// Runs `work` with this thread's spare buffer.
pub(super) fn with_spare<T>(work: impl FnOnce(&mut Vec<u8>) -> T) -> T {
    let mut spare = SPARE.take();
    let done = work(&mut spare);
    SPARE.set(spare);
    done
}

/// Seals or opens (by `spec`'s direction) the GCM records of `chunk` with the engine's records
/// job, out of place into `spare`; then the buffers change places: `chunk.data` holds the
/// output and `spare` the input's buffer, for the next chunk. Sealing writes the pipeline
/// chunk's GCM chunks as records (the stream's last chunk ends in a short, possibly empty,
/// one); opening checks the chunk's shape, and releases its plaintext only when every tag
/// verified (on an error `chunk.data` is left as it was).
pub(super) fn crypt_records(
    spec: &StreamSpec<'_>,
    chunk: &mut Chunk,
    spare: &mut Vec<u8>,
) -> Result<(), PipelineError> {
    let (first, output_len) = match spec.direction {
        Direction::Encrypt => {
            let (first, pieces) = gcm_pieces(spec, chunk)?;
            (first, chunk.data.len() + pieces * GCM_TAG_LEN)
        }
        Direction::Decrypt => {
            let first = check_records(spec, chunk)?;
            let plain = RecordsJob::plaintext_len(chunk.data.len()).expect("shape checked");
            (first, plain)
        }
    };
    let job = job_of(spec, chunk.index)?;
    debug_assert_eq!(job.first_index, first);
    if spare.capacity() < output_len {
        // A fresh allocation of the size needed, not a copy of the old bytes into a doubled one
        // (a buffer read as input has just its input's capacity).
        *spare = Vec::with_capacity(output_len);
    }
    // A recycled buffer keeps its length, so only bytes past it are zeroed.
    spare.resize(output_len, 0);
    spec.engine
        .process_records(&job, &chunk.data, spare)
        .map_err(records_error)?;
    std::mem::swap(&mut chunk.data, spare);
    Ok(())
}

/// The index of the first GCM chunk of a plaintext pipeline chunk and how many GCM chunks it
/// holds: 16 KiB pieces, and the stream's last chunk ends in a short, possibly empty, one.
fn gcm_pieces(spec: &StreamSpec<'_>, chunk: &Chunk) -> Result<(u64, usize), PipelineError> {
    let pieces = pieces(chunk.data.len(), chunk.last);
    Ok((first_under_limit(spec, chunk.index, pieces)?, pieces))
}

/// Adds the tags of a pipeline chunk encrypted by the engine's CTR job: its 16 KiB pieces move
/// apart to their places as GCM records, each with room for its tag after it (from the back, so
/// nothing is overwritten before it moves), and each tag is computed right after its piece
/// moved, while it is in the cache.
pub(super) fn tag_records(
    spec: &StreamSpec<'_>,
    cipher: &ChunkCipher,
    chunk: &mut Chunk,
) -> Result<(), PipelineError> {
    let (first, pieces) = gcm_pieces(spec, chunk)?;
    let len = chunk.data.len();
    chunk.data.resize(len + pieces * GCM_TAG_LEN, 0);
    for k in (0..pieces).rev() {
        let start = k * GCM_CHUNK_LEN;
        let data_len = (len - start).min(GCM_CHUNK_LEN);
        let at = k * GCM_RECORD_LEN;
        chunk.data.copy_within(start..start + data_len, at);
        let (data, tag) = chunk.data[at..at + data_len + GCM_TAG_LEN].split_at_mut(data_len);
        tag.copy_from_slice(&cipher.tag(first + k as u64, data));
    }
    Ok(())
}

/// Checks every GCM tag of a pipeline chunk of records, and its shape (see [`check_records`]),
/// leaving the tags in place for the engine's CTR job ([`join_records`] removes them after).
pub(super) fn verify_records(
    spec: &StreamSpec<'_>,
    cipher: &ChunkCipher,
    chunk: &Chunk,
) -> Result<(), PipelineError> {
    let first = check_records(spec, chunk)?;
    for (k, record) in chunk.data.chunks(GCM_RECORD_LEN).enumerate() {
        let (data, tag) = record.split_at(record.len() - GCM_TAG_LEN);
        if !cipher.verify(first + k as u64, data, tag) {
            return Err(PipelineError::Tampered(first + k as u64));
        }
    }
    Ok(())
}

/// Removes the tags from a pipeline chunk of GCM records (checked and decrypted in place),
/// closing the gaps.
pub(super) fn join_records(chunk: &mut Chunk) {
    let records = chunk.data.len().div_ceil(GCM_RECORD_LEN);
    let mut plaintext = 0;
    for k in 0..records {
        let start = k * GCM_RECORD_LEN;
        let data_len = (chunk.data.len() - start).min(GCM_RECORD_LEN) - GCM_TAG_LEN;
        chunk.data.copy_within(start..start + data_len, plaintext);
        plaintext += data_len;
    }
    chunk.data.truncate(plaintext);
}

/// Checks the shape of a pipeline chunk of GCM records read from a stream: the stream's last
/// chunk ends in a record shorter than a full one (a full chunk's records are all full), every
/// record holds its tag, and no index passes the limit. Returns the index of its first GCM
/// chunk.
fn check_records(spec: &StreamSpec<'_>, chunk: &Chunk) -> Result<u64, PipelineError> {
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
    if RecordsJob::records(len).is_none() {
        return Err(PipelineError::Truncated(first + records - 1));
    }
    Ok(first)
}
