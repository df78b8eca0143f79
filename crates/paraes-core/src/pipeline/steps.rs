//! What one chunk goes through when the engine runs its CTR or ECB job: padding, the engine's
//! job, and the chunk tags of a v2 stream (a GCM stream's tags are [`super::gcm`]'s).

use super::gcm;
use super::{Chunk, PipelineError, StreamSpec, Tags};
use crate::chunk_tag::TAG_LEN;
use crate::engine::{Direction, Mode};

/// [`super::seal`] by the engine's CTR or ECB job: padding, encryption and tags.
pub(super) fn seal(spec: &StreamSpec<'_>, chunk: &mut Chunk) -> Result<(), PipelineError> {
    crypt_chunk(spec, chunk)?;
    tag_chunk(spec, chunk)
}

/// [`super::open`] by the engine's CTR or ECB job: tag checks, decryption and padding removal.
pub(super) fn open(spec: &StreamSpec<'_>, chunk: &mut Chunk) -> Result<(), PipelineError> {
    verify_tags(spec, chunk)?;
    crypt_chunk(spec, chunk)
}

/// Encrypts or decrypts one chunk in place (padding the last one before encryption, removing the
/// padding after decryption).
pub(super) fn crypt_chunk(spec: &StreamSpec<'_>, chunk: &mut Chunk) -> Result<(), PipelineError> {
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
        gcm::join_records(chunk);
    }
    Ok(())
}

/// Adds the tags of an encrypted chunk (none for a raw stream).
pub(super) fn tag_chunk(spec: &StreamSpec<'_>, chunk: &mut Chunk) -> Result<(), PipelineError> {
    match spec.tags {
        Tags::None => {}
        Tags::Chunk(auth) => {
            let tag = auth.tag(chunk.index, chunk.last, &chunk.data);
            chunk.data.extend_from_slice(&tag);
        }
        Tags::Gcm(cipher) => gcm::tag_records(spec, cipher, chunk)?,
    }
    Ok(())
}

/// Checks (and for v2 removes) the tags of a chunk read from a tagged stream, and its shape.
pub(crate) fn verify_tags(spec: &StreamSpec<'_>, chunk: &mut Chunk) -> Result<(), PipelineError> {
    let auth = match spec.tags {
        Tags::None => return Ok(()),
        Tags::Chunk(auth) => auth,
        Tags::Gcm(cipher) => return gcm::verify_records(spec, cipher, chunk),
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
