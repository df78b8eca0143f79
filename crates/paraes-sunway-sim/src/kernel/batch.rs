//! One batch as a CPE runs it (CTR counters, the flavour's cipher, the keystream xor, the loop
//! branch), and the recording of its instruction stream for the timing model.

use paraes_core::engine::GCM_CHUNK_LEN;

use crate::config::Variant;
use crate::kernel::bytes::ByteFlavor;
use crate::kernel::flavor::{CipherShape, Flavor, BATCH_BLOCKS, BATCH_BYTES};
use crate::kernel::vector::{ExtractFlavor, SelldwFlavor};
use crate::ldm::Ldm;
use crate::ldm_plan::LdmPlan;
use crate::machine::{Machine, Scalar, Sink, Step, Trace};
use crate::params::{Compilation, Params, Pipelining};
use crate::schedule;

/// Blocks of one GCM chunk's data ([`GCM_CHUNK_LEN`] / 16 = 1024, a power of two,
/// so a block's chunk and its block within the chunk are a shift and a mask of its position).
pub const GCM_CHUNK_BLOCKS: u64 = (GCM_CHUNK_LEN / 16) as u64;

/// How the counter blocks of a CTR batch are made: what the counter code computes, and so its
/// instruction stream (which does not depend on the values: the IV, the nonce, the position).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum CounterLayout {
    /// One 128-bit counter for the stream (SP 800-38A): carried, +1 per block.
    #[default]
    Stream,
    /// GCM chunk counters (format v3 bodies, [`paraes_core::Counters::GcmChunks`]): each block's
    /// counter block computed from its position among the chunks' data blocks.
    GcmChunks,
}

/// The CTR counter state carried from block to block and batch to batch.
#[derive(Clone, Copy, Debug)]
pub enum Counter {
    /// [`CounterLayout::Stream`]: the next block's 128-bit counter block as two big-endian
    /// halves.
    Stream {
        /// High 64 bits.
        high: Scalar,
        /// Low 64 bits.
        low: Scalar,
    },
    /// [`CounterLayout::GcmChunks`]: the next block's position among the data blocks of the
    /// chunks (block `j` of chunk `r` is at `1024 r + j`; tag rooms take no positions), and the
    /// base nonce as the two halves of the counter block it is xored into.
    GcmChunks {
        /// The next block's data-block position.
        position: Scalar,
        /// Bytes 0..8 of the base nonce, big-endian.
        nonce_high: Scalar,
        /// Bytes 8..12 of the base nonce, big-endian, in the high 32 bits.
        nonce_low: Scalar,
    },
}

impl Counter {
    /// The stream counter block `value`, held in registers before the traced code.
    pub fn new(value: u128) -> Self {
        Counter::Stream {
            high: Scalar::imm((value >> 64) as u64),
            low: Scalar::imm(value as u64),
        }
    }

    /// GCM chunk counters of `base_nonce` from data block `position` on (`1024 r + j` for block
    /// `j` of chunk `r`), held in registers before the traced code.
    pub fn gcm_chunks(base_nonce: &[u8; 12], position: u64) -> Self {
        let mut high = [0u8; 8];
        high.copy_from_slice(&base_nonce[..8]);
        let mut low = [0u8; 4];
        low.copy_from_slice(&base_nonce[8..]);
        Counter::GcmChunks {
            position: Scalar::imm(position),
            nonce_high: Scalar::imm(u64::from_be_bytes(high)),
            nonce_low: Scalar::imm(u64::from(u32::from_be_bytes(low)) << 32),
        }
    }

    /// A zero counter of `layout` (for recording: the instruction stream ignores the values).
    pub fn zero(layout: CounterLayout) -> Self {
        match layout {
            CounterLayout::Stream => Counter::new(0),
            CounterLayout::GcmChunks => Counter::gcm_chunks(&[0; 12], 0),
        }
    }

    /// Its layout.
    pub fn layout(&self) -> CounterLayout {
        match self {
            Counter::Stream { .. } => CounterLayout::Stream,
            Counter::GcmChunks { .. } => CounterLayout::GcmChunks,
        }
    }

    /// The counter block of the next block, as two big-endian halves: the counter code's first
    /// part. Stream: the carried halves (no instruction). GCM chunks: from the position `d`,
    /// chunk `r = d >> 10` and block `j = d & 1023`; `high = nonce_high ^ (r >> 32)` and `low =
    /// (nonce_low ^ (r << 32)) | (2 + j)`, which is `(nonce XOR be96(r)) || be32(2 + j)`.
    fn block<S: Sink>(&self, m: &mut Machine<S>) -> (Scalar, Scalar) {
        match *self {
            Counter::Stream { high, low } => (high, low),
            Counter::GcmChunks {
                position,
                nonce_high,
                nonce_low,
            } => {
                let shift = u64::from(GCM_CHUNK_BLOCKS.trailing_zeros());
                let record = m.alu(position, Scalar::imm(shift), |x, y| x >> y);
                let within = m.alu(position, Scalar::imm(GCM_CHUNK_BLOCKS - 1), |x, y| x & y);
                let ctr32 = m.alu(within, Scalar::imm(2), u64::wrapping_add);
                let record_high = m.alu(record, Scalar::imm(32), |x, y| x >> y);
                let high = m.alu(nonce_high, record_high, |x, y| x ^ y);
                let record_low = m.alu(record, Scalar::imm(32), |x, y| x << y);
                let top = m.alu(nonce_low, record_low, |x, y| x ^ y);
                (high, m.alu(top, ctr32, |x, y| x | y))
            }
        }
    }

    /// Moves on to the next block: the counter code's last part. Stream: a 128-bit add (add,
    /// carry compare, add). GCM chunks: the position plus one.
    fn advance<S: Sink>(&mut self, m: &mut Machine<S>) {
        match self {
            Counter::Stream { high, low } => {
                let next = m.alu(*low, Scalar::imm(1), u64::wrapping_add);
                let carry = m.alu(next, *low, |x, y| u64::from(x < y));
                *high = m.alu(*high, carry, u64::wrapping_add);
                *low = next;
            }
            Counter::GcmChunks { position, .. } => {
                *position = m.alu(*position, Scalar::imm(1), u64::wrapping_add);
            }
        }
    }
}

/// Writes the counter blocks of one batch (its 8 blocks') to the LDM counter batch at word
/// `counters` in `counter`'s layout: per block, its counter block made ([`Counter::block`]),
/// its halves byte-swapped and stored, and the counter advanced ([`Counter::advance`]).
fn write_counters<S: Sink>(
    m: &mut Machine<S>,
    ldm: &mut Ldm,
    counters: usize,
    counter: &mut Counter,
) {
    for block in 0..BATCH_BLOCKS {
        let slot = counters + 4 * block;
        let (high, low) = counter.block(m);
        let high = m.alu(high, high, |x, _| x.swap_bytes());
        m.store_long(ldm, slot, high);
        let low = m.alu(low, low, |x, _| x.swap_bytes());
        m.store_long(ldm, slot + 2, low);
        counter.advance(m);
    }
}

/// One batch of a job as the CPE runs it: ECB in place, or CTR (counters written to the counter
/// batch as `counter`'s layout says, encrypted, xored into the data), then the loop's pointer
/// update, compare and branch.
pub fn run_batch<F: Flavor, S: Sink>(
    m: &mut Machine<S>,
    ldm: &mut Ldm,
    plan: &LdmPlan,
    shape: CipherShape,
    word: usize,
    counter: &mut Counter,
) {
    if shape.ctr {
        let counters = plan.counters.word();
        write_counters(m, ldm, counters, counter);
        F::cipher_batch(m, ldm, plan, shape, counters);
        m.step(Step::CtrXor);
        F::xor_keystream(m, ldm, counters, word);
    } else {
        F::cipher_batch(m, ldm, plan, shape, word);
    }
    let pointer = m.alu(
        Scalar::imm(word as u64),
        Scalar::imm(BATCH_BYTES as u64),
        |x, y| x + y,
    );
    let more = m.alu(pointer, Scalar::imm(0), |x, y| u64::from(x != y));
    m.branch(more);
}

/// Records the instruction stream of one batch as written (data-independent; run on a zeroed
/// LDM), the code built as `params` say (`selldw` temporaries, the C loops' unrolling), with
/// stream CTR counters.
pub fn record_batch<F: Flavor>(plan: &LdmPlan, shape: CipherShape, params: &Params) -> Trace {
    record_batch_with::<F>(plan, shape, CounterLayout::Stream, params)
}

/// [`record_batch`] with CTR counters in `layout` (ignored for ECB).
pub fn record_batch_with<F: Flavor>(
    plan: &LdmPlan,
    shape: CipherShape,
    layout: CounterLayout,
    params: &Params,
) -> Trace {
    let mut ldm = Ldm::new(plan.total_bytes);
    let mut machine = Machine::for_params(Trace::default(), params);
    let mut counter = Counter::zero(layout);
    run_batch::<F, Trace>(
        &mut machine,
        &mut ldm,
        plan,
        shape,
        plan.buffers[0].word(),
        &mut counter,
    );
    machine.sink
}

/// Records the instruction stream of one scheduling unit of `variant`: one batch, or for the
/// pipelined variant two selldw batches interleaved as `params.pipelining` says (stream CTR
/// counters).
pub fn record_variant(
    variant: Variant,
    plan: &LdmPlan,
    shape: CipherShape,
    params: &Params,
) -> Trace {
    record_variant_with(variant, plan, shape, CounterLayout::Stream, params)
}

/// [`record_variant`] with CTR counters in `layout` (ignored for ECB).
pub fn record_variant_with(
    variant: Variant,
    plan: &LdmPlan,
    shape: CipherShape,
    layout: CounterLayout,
    params: &Params,
) -> Trace {
    match variant {
        Variant::Original => {
            let written = record_batch_with::<ByteFlavor>(plan, shape, layout, params);
            match params.original_compilation {
                Compilation::SourceOrder => written,
                Compilation::Scheduled(aliasing) => {
                    schedule::compile_blocks(&written, aliasing, plan, params)
                }
            }
        }
        Variant::Simd => record_batch_with::<ExtractFlavor>(plan, shape, layout, params),
        Variant::Selldw => record_batch_with::<SelldwFlavor>(plan, shape, layout, params),
        Variant::Pipelined => {
            let one = record_batch_with::<SelldwFlavor>(plan, shape, layout, params);
            match params.pipelining {
                Pipelining::Fig5Steps => {
                    schedule::pipeline_steps(&one, &one, params.selldw_temporaries)
                }
                Pipelining::ListScheduler => schedule::interleave(&one, &one, params),
            }
        }
    }
}
