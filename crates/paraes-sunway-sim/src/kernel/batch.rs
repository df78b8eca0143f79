//! One batch as a CPE runs it (CTR counters, the flavour's cipher, the keystream xor, the loop
//! branch), and the recording of its instruction stream for the timing model.

use crate::config::Variant;
use crate::kernel::bytes::ByteFlavor;
use crate::kernel::flavor::{CipherShape, Flavor, BATCH_BLOCKS, BATCH_BYTES};
use crate::kernel::vector::{ExtractFlavor, SelldwFlavor};
use crate::ldm::Ldm;
use crate::ldm_plan::LdmPlan;
use crate::machine::{Machine, Scalar, Sink, Step, Trace};
use crate::params::{Compilation, Params, Pipelining};
use crate::schedule;

/// The CTR counter carried from batch to batch: the next block's 128-bit counter as two halves.
#[derive(Clone, Copy, Debug)]
pub struct Counter {
    /// High 64 bits.
    pub high: Scalar,
    /// Low 64 bits.
    pub low: Scalar,
}

impl Counter {
    /// The counter value `value`, held in registers before the traced code.
    pub fn new(value: u128) -> Self {
        Counter {
            high: Scalar::imm((value >> 64) as u64),
            low: Scalar::imm(value as u64),
        }
    }
}

/// One batch of a job as the CPE runs it: ECB in place, or CTR (counters written to the counter
/// batch, encrypted, xored into the data), then the loop's pointer update, compare and branch.
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
        for block in 0..BATCH_BLOCKS {
            let slot = counters + 4 * block;
            let high = m.alu(counter.high, counter.high, |x, _| x.swap_bytes());
            m.store_long(ldm, slot, high);
            let low = m.alu(counter.low, counter.low, |x, _| x.swap_bytes());
            m.store_long(ldm, slot + 2, low);
            let next = m.alu(counter.low, Scalar::imm(1), u64::wrapping_add);
            let carry = m.alu(next, counter.low, |x, y| u64::from(x < y));
            counter.high = m.alu(counter.high, carry, u64::wrapping_add);
            counter.low = next;
        }
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
/// LDM), the code built as `params` say (`selldw` temporaries, the C loops' unrolling).
pub fn record_batch<F: Flavor>(plan: &LdmPlan, shape: CipherShape, params: &Params) -> Trace {
    let mut ldm = Ldm::new(plan.total_bytes);
    let mut machine = Machine::for_params(Trace::default(), params);
    let mut counter = Counter::new(0);
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
/// pipelined variant two selldw batches interleaved as `params.pipelining` says.
pub fn record_variant(
    variant: Variant,
    plan: &LdmPlan,
    shape: CipherShape,
    params: &Params,
) -> Trace {
    match variant {
        Variant::Original => {
            let written = record_batch::<ByteFlavor>(plan, shape, params);
            match params.original_compilation {
                Compilation::SourceOrder => written,
                Compilation::Scheduled(aliasing) => {
                    schedule::compile_blocks(&written, aliasing, plan, params)
                }
            }
        }
        Variant::Simd => record_batch::<ExtractFlavor>(plan, shape, params),
        Variant::Selldw => record_batch::<SelldwFlavor>(plan, shape, params),
        Variant::Pipelined => {
            let one = record_batch::<SelldwFlavor>(plan, shape, params);
            match params.pipelining {
                Pipelining::Fig5Steps => {
                    schedule::pipeline_steps(&one, &one, params.selldw_temporaries)
                }
                Pipelining::ListScheduler => schedule::interleave(&one, &one, params),
            }
        }
    }
}
