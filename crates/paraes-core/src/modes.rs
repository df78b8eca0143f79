//! ECB and CTR over buffers of any length on one AES implementation, single-threaded.
//!
//! This is the reference transform of a [`Job`]: engines that split a buffer call it on the
//! pieces. CTR follows NIST SP 800-38A and OpenSSL: the counter block is a 128-bit big-endian
//! integer, `counter + i` for block `i` of the stream, wrapping at 2^128; a buffer may start at any
//! byte of the stream, including the middle of a block. With [`Counters::GcmChunks`] each
//! record's chunk data runs CTR from its own counter block (GCM's), and its tag room is skipped.

use zeroize::Zeroize;

use crate::aes::AesImpl;
use crate::job::{gcm_chunk_nonce, Counters, Direction, EngineError, Job, Mode, GCM_CHUNK_LEN};
use crate::key::ExpandedKey;

/// The counter of block `block` of a stream whose block 0 has counter block `counter`.
pub fn counter_at(counter: &[u8; 16], block: u128) -> u128 {
    u128::from_be_bytes(*counter).wrapping_add(block)
}

/// Applies `job` to `buf` in place with the implementation `imp` on the calling thread.
pub fn apply(imp: AesImpl, job: &Job<'_>, buf: &mut [u8]) -> Result<(), EngineError> {
    job.check(buf.len())?;
    match (job.mode, job.direction) {
        (Mode::Ecb, Direction::Encrypt) => imp.encrypt_blocks(job.key, buf),
        (Mode::Ecb, Direction::Decrypt) => imp.decrypt_blocks(job.key, buf),
        (Mode::Ctr, _) => match job.counters {
            Counters::Stream => ctr(imp, job.key, &job.counter, job.offset, buf),
            Counters::GcmChunks { base_nonce, stride } => {
                gcm_chunks(imp, job.key, &base_nonce, stride, job.offset, buf)
            }
        },
    }
    Ok(())
}

/// The counter block of GCM chunk `record`'s first data block: `(base_nonce XOR be96(record))
/// || be32(2)`.
pub fn gcm_chunk_counter(base_nonce: &[u8; 12], record: u64) -> [u8; 16] {
    let mut counter = [0u8; 16];
    counter[..12].copy_from_slice(&gcm_chunk_nonce(base_nonce, record));
    counter[15] = 2;
    counter
}

/// CTR over the chunk data of the records that `buf` (from stream byte `offset`) touches,
/// leaving each record's bytes past [`GCM_CHUNK_LEN`] alone.
fn gcm_chunks(
    imp: AesImpl,
    key: &ExpandedKey,
    base_nonce: &[u8; 12],
    stride: usize,
    offset: u64,
    buf: &mut [u8],
) {
    let stride = stride as u64;
    let mut at = offset;
    let mut rest = buf;
    while !rest.is_empty() {
        let record = at / stride;
        let within = at % stride;
        let to_record_end = (stride - within).min(rest.len() as u64) as usize;
        let (here, next) = rest.split_at_mut(to_record_end);
        if within < GCM_CHUNK_LEN as u64 {
            let data = here.len().min(GCM_CHUNK_LEN - within as usize);
            let counter = gcm_chunk_counter(base_nonce, record);
            // Within a chunk the 128-bit add never carries past the low 32 bits (block 2 + j,
            // j < 1024), so SP 800-38A's counter gives GCM's inc32 counters here.
            ctr(imp, key, &counter, within, &mut here[..data]);
        }
        at += to_record_end as u64;
        rest = next;
    }
}

/// CTR from stream byte `offset` on: a partial first block, whole blocks, a partial last block.
fn ctr(imp: AesImpl, key: &ExpandedKey, first: &[u8; 16], offset: u64, buf: &mut [u8]) {
    let mut counter = counter_at(first, u128::from(offset / 16));
    let skip = (offset % 16) as usize;
    let mut rest = buf;
    if skip != 0 {
        let take = rest.len().min(16 - skip);
        let (head, tail) = rest.split_at_mut(take);
        xor_partial_block(imp, key, counter, skip, head);
        counter = counter.wrapping_add(1);
        rest = tail;
    }
    let whole = rest.len() / 16 * 16;
    let (blocks, tail) = rest.split_at_mut(whole);
    imp.ctr_blocks(key, counter, blocks);
    if !tail.is_empty() {
        counter = counter.wrapping_add((whole / 16) as u128);
        xor_partial_block(imp, key, counter, 0, tail);
    }
}

/// XORs bytes `skip..skip + data.len()` of the keystream block for `counter` into `data`.
fn xor_partial_block(imp: AesImpl, key: &ExpandedKey, counter: u128, skip: usize, data: &mut [u8]) {
    let mut block = [0u8; 16];
    block[skip..skip + data.len()].copy_from_slice(data);
    imp.ctr_blocks(key, counter, &mut block);
    data.copy_from_slice(&block[skip..skip + data.len()]);
    block.zeroize();
}
