//! One offload's data path: the MPE splits the blocks over core groups and CPEs (contiguous,
//! balanced shares), and every CPE streams its share through its LDM buffers (DMA get, batches,
//! DMA put), each CPE on a rayon task.

use paraes_core::engine::GCM_CHUNK_LEN;
use paraes_core::modes::counter_at;
use paraes_core::{Counters, Direction, Job};
use rayon::prelude::*;

use crate::kernel::{
    self, run_batch, CipherShape, Counter, Flavor, BATCH_BYTES, BATCH_WORDS, GCM_CHUNK_BLOCKS,
};
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

/// Where the bytes a job transforms lie in its buffer. The CPEs see them as one contiguous *data
/// space*: for ECB and stream CTR the stream itself; for GCM chunks the chunks' data back to back
/// (data-space byte `16384 r + q` is byte `q` of record `r`), with the records' tag rooms taken
/// out: the DMA never moves a tag's room (docs/SUNWAY.md says why).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DataMap {
    /// Bytes from one record to the next when records have room past their chunk data; `None`
    /// when the data is the whole stream (ECB, stream CTR, GCM chunks back to back).
    stride: Option<u64>,
}

impl DataMap {
    /// The map of a job's counter layout.
    pub fn of(counters: Counters) -> Self {
        let stride = match counters {
            Counters::GcmChunks { stride, .. } if stride > GCM_CHUNK_LEN => Some(stride as u64),
            _ => None,
        };
        DataMap { stride }
    }

    /// The data-space position of stream byte `stream` (a byte in a tag's room maps to the next
    /// record's first data byte).
    pub fn to_data(&self, stream: u64) -> u64 {
        match self.stride {
            None => stream,
            Some(stride) => stream / stride * CHUNK + (stream % stride).min(CHUNK),
        }
    }

    /// The stream position of data-space byte `data`.
    pub fn to_stream(&self, data: u64) -> u64 {
        match self.stride {
            None => data,
            Some(stride) => data / CHUNK * stride + data % CHUNK,
        }
    }

    /// Data-space blocks between the points where a DMA transfer must be cut (each record's end,
    /// where its tag's room lies), if any.
    pub fn cut_blocks(&self) -> Option<u64> {
        self.stride.map(|_| GCM_CHUNK_BLOCKS)
    }

    /// The data bytes `lo..hi` as runs contiguous in the stream: `(data start, length)`, one per
    /// record touched (one DMA transfer each).
    pub fn pieces(&self, lo: u64, hi: u64) -> impl Iterator<Item = (u64, u64)> + '_ {
        let mut at = lo;
        std::iter::from_fn(move || {
            if at >= hi {
                return None;
            }
            let end = match self.stride {
                None => hi,
                Some(_) => hi.min((at / CHUNK + 1) * CHUNK),
            };
            let piece = (at, end - at);
            at = end;
            Some(piece)
        })
    }
}

/// Bytes of one GCM chunk's data.
const CHUNK: u64 = GCM_CHUNK_LEN as u64;

/// The data-space bytes of a job of `len` bytes at stream byte `offset`: `start..end`.
pub fn data_range(map: &DataMap, offset: u64, len: usize) -> (u64, u64) {
    (map.to_data(offset), map.to_data(offset + len as u64))
}

/// One CPE's part of an offload.
struct Share<'b> {
    /// Its bytes of the buffer: from its first data byte (the buffer's start for the first CPE)
    /// to the next CPE's first data byte.
    bytes: &'b mut [u8],
    /// The stream position of `bytes[0]`.
    stream: u64,
    /// Its first data-space block.
    first: u64,
    /// Its blocks.
    blocks: u64,
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
    let map = DataMap::of(job.counters);
    let (data_start, data_end) = data_range(&map, job.offset, buf.len());
    if data_start == data_end {
        return;
    }
    let first_block = data_start / 16;
    let total_blocks = data_end.div_ceil(16) - first_block;
    let (sbox, keys) = match shape.direction {
        Direction::Encrypt => (kernel::sbox::sbox(), job.key.enc_round_keys()),
        Direction::Decrypt => (kernel::sbox::inv_sbox(), job.key.dec_round_keys()),
    };
    let sbox_image = F::sbox_image(&sbox);
    let key_image = F::round_key_image(keys);
    let counts: Vec<u64> = distribute(total_blocks, cgs, cpes_per_cg)
        .into_iter()
        .flatten()
        .filter(|&blocks| blocks > 0)
        .collect();
    let mut shares = Vec::with_capacity(counts.len());
    let mut rest: &mut [u8] = buf;
    let mut stream = job.offset;
    let mut block = first_block;
    for (i, &blocks) in counts.iter().enumerate() {
        let next = if i + 1 == counts.len() {
            stream + rest.len() as u64
        } else {
            map.to_stream(16 * (block + blocks))
        };
        let (mine, others) = rest.split_at_mut((next - stream) as usize);
        shares.push(Share {
            bytes: mine,
            stream,
            first: block,
            blocks,
        });
        rest = others;
        stream = next;
        block += blocks;
    }
    let counter_at_block = |block: u64| match job.counters {
        Counters::Stream => Counter::new(counter_at(&job.counter, u128::from(block))),
        Counters::GcmChunks { base_nonce, .. } => Counter::gcm_chunks(&base_nonce, block),
    };
    shares.into_par_iter().for_each_init(
        || {
            let mut ldm = Ldm::new(plan.total_bytes);
            ldm.put_words(plan.sbox.word(), &sbox_image);
            ldm.put_words(plan.round_keys.word(), &key_image);
            ldm
        },
        |ldm, share| {
            run_cpe::<F>(
                ldm,
                plan,
                shape,
                &map,
                &counter_at_block,
                (data_start, data_end),
                share,
            );
        },
    );
}

/// One CPE: its blocks in LDM-buffer-sized chunks: DMA get (one transfer per run of data
/// contiguous in the stream), batches, DMA put.
fn run_cpe<F: Flavor>(
    ldm: &mut Ldm,
    plan: &LdmPlan,
    shape: CipherShape,
    map: &DataMap,
    counter_at_block: &(impl Fn(u64) -> Counter + Sync),
    (data_start, data_end): (u64, u64),
    share: Share<'_>,
) {
    let mut machine = Machine::new(NullSink);
    let chunk_blocks = (plan.buffer_bytes() / 16) as u64;
    let mut done = 0u64;
    let mut chunk = 0usize;
    while done < share.blocks {
        let here = chunk_blocks.min(share.blocks - done);
        let chunk_first = share.first + done;
        let chunk_start = 16 * chunk_first;
        let low = chunk_start.max(data_start);
        let high = (chunk_start + 16 * here).min(data_end);
        let buffer = plan.buffers[chunk % plan.buffers.len()].word();
        for (data, len) in map.pieces(low, high) {
            let at = (map.to_stream(data) - share.stream) as usize;
            ldm.get_bytes(
                buffer,
                (data - chunk_start) as usize,
                &share.bytes[at..at + len as usize],
            );
        }
        let mut counter = counter_at_block(chunk_first);
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
        for (data, len) in map.pieces(low, high) {
            let at = (map.to_stream(data) - share.stream) as usize;
            ldm.put_bytes_out(
                buffer,
                (data - chunk_start) as usize,
                &mut share.bytes[at..at + len as usize],
            );
        }
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

    #[test]
    fn data_space_skips_tag_rooms_and_cuts_at_records_ends() {
        let stride = GCM_CHUNK_LEN + 16;
        let map = DataMap::of(Counters::GcmChunks {
            base_nonce: [0; 12],
            stride,
        });
        let (chunk, stride) = (CHUNK, stride as u64);
        assert_eq!(map.to_data(stride + 5), chunk + 5);
        // A tag's room maps to the next record's first data byte.
        assert_eq!(map.to_data(stride + chunk + 3), 2 * chunk);
        assert_eq!(map.to_stream(2 * chunk + 7), 2 * stride + 7);
        for data in [0, 1, chunk - 1, chunk, 5 * chunk + 77] {
            assert_eq!(map.to_data(map.to_stream(data)), data);
        }
        let pieces: Vec<_> = map.pieces(chunk - 32, 2 * chunk + 16).collect();
        assert_eq!(pieces, [(chunk - 32, 32), (chunk, chunk), (2 * chunk, 16)]);
        assert_eq!(map.cut_blocks(), Some(GCM_CHUNK_BLOCKS));
        // Back to back, the data is the stream: nothing is cut.
        let packed = DataMap::of(Counters::GcmChunks {
            base_nonce: [0; 12],
            stride: GCM_CHUNK_LEN,
        });
        assert_eq!(packed, DataMap::of(Counters::Stream));
        assert_eq!(packed.pieces(5, 3 * chunk).count(), 1);
    }
}
