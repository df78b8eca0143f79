//! ECB and CTR over buffers of any length on one AES implementation, single-threaded.
//!
//! This is the reference transform of a [`Job`]: engines that split a buffer call it on the
//! pieces. CTR follows NIST SP 800-38A and OpenSSL: the counter block is a 128-bit big-endian
//! integer, `counter + i` for block `i` of the stream, wrapping at 2^128; a buffer may start at any
//! byte of the stream, including the middle of a block.

use zeroize::Zeroize;

use crate::aes::AesImpl;
use crate::engine::{Direction, EngineError, Job, Mode};
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
        (Mode::Ctr, _) => ctr(imp, job.key, &job.counter, job.offset, buf),
    }
    Ok(())
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
