//! One offload's data path: the MPE splits the blocks over core groups and CPEs (contiguous,
//! balanced shares), and every CPE streams its share through its LDM buffers (DMA get, batches,
//! DMA put), each CPE on a rayon task.

use paraes_core::modes::counter_at;
use paraes_core::{Direction, Job};
use rayon::prelude::*;

use crate::kernel::{self, run_batch, CipherShape, Counter, Flavor, BATCH_BYTES, BATCH_WORDS};
use crate::ldm::Ldm;
use crate::ldm_plan::LdmPlan;
use crate::machine::{Machine, NullSink};

/// Splits `total` items into `parts` contiguous, balanced shares (first shares one larger).
pub fn split_even(total: u64, parts: usize) -> Vec<u64> {
    let parts64 = parts as u64;
    (0..parts64)
        .map(|i| total / parts64 + u64::from(i < total % parts64))
        .collect()
}

/// Blocks of every CPE of a job of `total_blocks` blocks on `cgs` core groups: `[cg][cpe]`.
pub fn distribute(total_blocks: u64, cgs: usize, cpes_per_cg: usize) -> Vec<Vec<u64>> {
    split_even(total_blocks, cgs)
        .into_iter()
        .map(|cg| split_even(cg, cpes_per_cg))
        .collect()
}

/// Runs the data of one offload through the CPE kernels of flavour `F` on `cgs` core groups of
/// `cpes_per_cg` CPEs: every CPE's share on a rayon task.
pub fn run<F: Flavor>(
    job: &Job<'_>,
    shape: CipherShape,
    plan: &LdmPlan,
    cgs: usize,
    cpes_per_cg: usize,
    buf: &mut [u8],
) {
    let skip = (job.offset % 16) as usize;
    let first_block = u128::from(job.offset / 16);
    let total_blocks = (skip + buf.len()).div_ceil(16) as u64;
    let (sbox, keys) = match shape.direction {
        Direction::Encrypt => (kernel::sbox::sbox(), job.key.enc_round_keys()),
        Direction::Decrypt => (kernel::sbox::inv_sbox(), job.key.dec_round_keys()),
    };
    let sbox_image = F::sbox_image(&sbox);
    let key_image = F::round_key_image(keys);
    // Each CPE's share: (its bytes of buf, its first block relative to the job, its blocks).
    let mut shares = Vec::new();
    let job_end = skip + buf.len();
    let mut rest: &mut [u8] = buf;
    let mut block = 0u64;
    for blocks in distribute(total_blocks, cgs, cpes_per_cg)
        .into_iter()
        .flatten()
    {
        if blocks == 0 {
            continue;
        }
        let start = (16 * block as usize).max(skip);
        let end = (16 * (block + blocks) as usize).min(job_end);
        let (mine, others) = rest.split_at_mut(end - start);
        shares.push((mine, block, blocks));
        rest = others;
        block += blocks;
    }
    let iv = job.counter;
    shares.into_par_iter().for_each_init(
        || {
            let mut ldm = Ldm::new(plan.total_bytes);
            ldm.put_words(plan.sbox.word(), &sbox_image);
            ldm.put_words(plan.round_keys.word(), &key_image);
            ldm
        },
        |ldm, (data, first, blocks)| {
            run_cpe::<F>(
                ldm,
                plan,
                shape,
                &iv,
                first_block + u128::from(first),
                skip,
                first,
                blocks,
                data,
            );
        },
    );
}

/// One CPE: its blocks in LDM-buffer-sized chunks: DMA get, batches, DMA put.
#[allow(clippy::too_many_arguments)]
fn run_cpe<F: Flavor>(
    ldm: &mut Ldm,
    plan: &LdmPlan,
    shape: CipherShape,
    iv: &[u8; 16],
    stream_block: u128,
    skip: usize,
    first: u64,
    blocks: u64,
    data: &mut [u8],
) {
    let mut machine = Machine::new(NullSink);
    let chunk_blocks = (plan.buffer_bytes() / 16) as u64;
    // Positions are bytes from the start of the job's first block; `data` starts at `origin`.
    let origin = (16 * first as usize).max(skip);
    let end = origin + data.len();
    let mut done = 0u64;
    let mut chunk = 0usize;
    while done < blocks {
        let here = chunk_blocks.min(blocks - done);
        let chunk_start = 16 * (first + done) as usize;
        let low = chunk_start.max(origin);
        let high = (chunk_start + 16 * here as usize).min(end);
        let buffer = plan.buffers[chunk % plan.buffers.len()].word();
        ldm.get_bytes(
            buffer,
            low - chunk_start,
            &data[low - origin..high - origin],
        );
        let mut counter = Counter::new(counter_at(iv, stream_block + u128::from(done)));
        for batch in 0..(16 * here as usize).div_ceil(BATCH_BYTES) {
            run_batch::<F, NullSink>(
                &mut machine,
                ldm,
                plan,
                shape,
                buffer + batch * BATCH_WORDS,
                &mut counter,
            );
        }
        ldm.put_bytes_out(
            buffer,
            low - chunk_start,
            &mut data[low - origin..high - origin],
        );
        done += here;
        chunk += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares_are_balanced_and_complete() {
        let shares = split_even(10, 4);
        assert_eq!(shares, vec![3, 3, 2, 2]);
        let all = distribute(1000, 3, 64);
        assert_eq!(all.iter().flatten().sum::<u64>(), 1000);
    }
}
