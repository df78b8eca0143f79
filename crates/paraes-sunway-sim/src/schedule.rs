//! The CPE's in-order dual-issue model: turns a recorded instruction stream into cycles (at most
//! one P0 and one P1 instruction per cycle, in program order, operands ready), and two ways of
//! interleaving two independent batches: the paper's Pipelined Step Execution at step
//! granularity ([`pipeline_steps`], Sec. III-B3, Fig. 5) and a greedy list scheduler
//! ([`interleave`]), the upper bound of what reordering two batches can gain; and what a
//! compiler's list scheduler makes of C code ([`compile_blocks`], the original rung).

use std::ops::Range;

use crate::ldm_plan::LdmPlan;
use crate::machine::{Access, Instr, Op, Pipe, Step, Tag, Trace, NO_TAG};
use crate::params::{Aliasing, Params};

/// Cycles from issue until an instruction's result can be used.
pub fn latency(op: Op, params: &Params) -> u64 {
    u64::from(match op {
        Op::VLoad | Op::Selldw => params.vector_load_latency,
        Op::SLoad => params.scalar_load_latency,
        Op::VLogic | Op::VShift | Op::VShuffle | Op::VMove | Op::VExtract | Op::VInsert => {
            params.p0_latency
        }
        Op::SAlu => params.scalar_latency,
        Op::VStore | Op::SStore | Op::Branch => 1,
    })
}

/// Cycles from the issue of `producer` until `consumer` can read its result as operand
/// `operand`: the producer's latency, except along a `selldw` chain through a temporary register
/// (operand 1 of a `selldw` written by a `selldw`), where only the lane merge waits.
pub fn edge_latency(producer: Op, consumer: Op, operand: usize, params: &Params) -> u64 {
    if producer == Op::Selldw && consumer == Op::Selldw && operand == 1 {
        u64::from(params.selldw_link_latency)
    } else {
        latency(producer, params)
    }
}

/// The first cycle `instr` can issue given the issue cycles of the instructions before it.
fn operands_ready(instrs: &[Instr], issued: &[u64], instr: &Instr, params: &Params) -> u64 {
    instr
        .deps
        .iter()
        .enumerate()
        .filter(|&(_, &dep)| dep != NO_TAG)
        .map(|(operand, &dep)| {
            let producer = dep as usize;
            issued[producer] + edge_latency(instrs[producer].op, instr.op, operand, params)
        })
        .max()
        .unwrap_or(0)
}

/// Whether two instructions can go to different pipelines in the same cycle.
fn pipes_pair(first: Pipe, second: Pipe) -> bool {
    !matches!((first, second), (Pipe::P0, Pipe::P0) | (Pipe::P1, Pipe::P1))
}

/// Cycles an in-order, dual-issue CPE takes for `instrs`: each cycle the instruction at the head
/// issues once its operands are ready; the one after it issues in the same cycle if it needs the
/// other pipeline and its operands are ready too (so it cannot use the head's result).
pub fn schedule(instrs: &[Instr], params: &Params) -> u64 {
    let mut issued = vec![0u64; instrs.len()];
    let mut cycle = 0u64;
    let mut i = 0;
    while i < instrs.len() {
        let head = instrs[i];
        let issue = cycle.max(operands_ready(instrs, &issued, &head, params));
        issued[i] = issue;
        i += 1;
        if let Some(next) = instrs.get(i) {
            if pipes_pair(head.op.pipe(), next.op.pipe())
                && operands_ready(instrs, &issued, next, params) <= issue
            {
                issued[i] = issue;
                i += 1;
            }
        }
        cycle = issue + 1;
    }
    cycle
}

/// Cycles of a whole trace.
pub fn trace_cycles(trace: &Trace, params: &Params) -> u64 {
    schedule(&trace.instrs, params)
}

/// Interleaves two independent instruction streams the way Pipelined Step Execution does:
/// `first` runs alone for as many instructions as its first SubBytes has, so that the streams run
/// half a round apart (`second` reaches its SubBytes as `first` reaches its ShiftRows: one in its
/// P1-bound SubBytes while the other is in its P0-bound ShiftRows, MixColumns and AddRoundKey);
/// then, like a list scheduler, each next instruction is the head of whichever
/// stream would issue earliest on the in-order dual-issue CPE after what is already placed (ties:
/// the one that pairs with the open cycle, then the one that keeps the streams half a round
/// apart). Program order within
/// each stream, and so every dependency, is kept.
pub fn interleave(first: &Trace, second: &Trace, params: &Params) -> Trace {
    // The lead: the length of the first SubBytes step.
    let lead = first
        .steps
        .iter()
        .position(|&(_, step)| step == Step::SubBytes)
        .and_then(|i| Some(first.steps.get(i + 1)?.0 - first.steps[i].0))
        .unwrap_or(0);
    let streams = [first, second];
    let mut maps = [
        vec![NO_TAG; first.instrs.len()],
        vec![NO_TAG; second.instrs.len()],
    ];
    let mut next = [0usize, 0usize];
    let mut out = Trace::default();
    let mut issued: Vec<u64> = Vec::new();
    // The cycle being filled: its issue time and the pipe of its single instruction, if open.
    let mut open: Option<(u64, Pipe)> = None;
    let mut next_cycle = 0u64;
    let remap = |maps: &[Vec<Tag>; 2], s: usize, instr: &Instr| {
        instr.deps.map(|d| {
            if d == NO_TAG {
                NO_TAG
            } else {
                maps[s][d as usize]
            }
        })
    };
    loop {
        let mut best: Option<(u64, bool, usize, usize)> = None;
        for s in 0..2 {
            let Some(instr) = streams[s].instrs.get(next[s]) else {
                continue;
            };
            if s == 1 && next[0] < lead {
                continue;
            }
            let placed = Instr {
                op: instr.op,
                deps: remap(&maps, s, instr),
            };
            let operands = operands_ready(&out.instrs, &issued, &placed, params);
            let (time, pairs) = match open {
                Some((issue, pipe)) if pipes_pair(pipe, instr.op.pipe()) && operands <= issue => {
                    (issue, true)
                }
                Some((issue, _)) => ((issue + 1).max(operands), false),
                None => (next_cycle.max(operands), false),
            };
            // Ties go to the stream that keeps the two half a round apart.
            let behind = if next[0] >= next[1] + lead { 1 } else { 0 };
            let rank = usize::from(s != behind);
            let better = match best {
                None => true,
                Some((t, p, r, _)) => (time, !pairs, rank) < (t, !p, r),
            };
            if better {
                best = Some((time, pairs, rank, s));
            }
        }
        let Some((time, pairs, _, s)) = best else {
            break;
        };
        let instr = streams[s].instrs[next[s]];
        let deps = remap(&maps, s, &instr);
        out.instrs.push(Instr { op: instr.op, deps });
        issued.push(time);
        maps[s][next[s]] = (out.instrs.len() - 1) as Tag;
        next[s] += 1;
        if pairs {
            open = None;
            next_cycle = time + 1;
        } else {
            open = Some((time, instr.op.pipe()));
        }
    }
    out
}

/// A trace cut into half rounds: alternately runs of SubBytes (P1-bound) and runs of every other
/// step (P0-bound: ShiftRows, MixColumns, AddRoundKey, with the load, store and CTR work at the
/// ends), starting with the latter; `true` marks SubBytes.
pub fn half_rounds(trace: &Trace) -> Vec<(bool, Range<usize>)> {
    let mut units = vec![(false, 0..0)];
    for &(at, step) in &trace.steps {
        let sub_bytes = step == Step::SubBytes;
        let last = units.last_mut().expect("at least one unit");
        if last.0 != sub_bytes {
            last.1.end = at;
            units.push((sub_bytes, at..at));
        }
    }
    units.last_mut().expect("at least one unit").1.end = trace.instrs.len();
    units
}

/// Pipelined Step Execution (Sec. III-B3, Fig. 5): batch `second` runs half a round behind
/// `first`, so each SubBytes of one is paired with the ShiftRows, MixColumns and AddRoundKey of
/// the other. Within a pair the two steps' instructions are spread evenly (the P1 `selldw` of one
/// next to the P0 logic of the other, so "the next two instructions in the front of the
/// instruction queue" can issue to the two pipelines). Program order within each batch, and so
/// every dependency, is kept. The two batches share the `temporaries` `selldw` temporary
/// registers of the one instruction stream: a chained `selldw` depends on the last `selldw` into
/// the same temporary in the woven order, whichever batch it belongs to.
pub fn pipeline_steps(first: &Trace, second: &Trace, temporaries: usize) -> Trace {
    let streams = [first, second];
    let units = [half_rounds(first), half_rounds(second)];
    let phases = units[0].len().max(units[1].len() + 1);
    let mut maps = [
        vec![NO_TAG; first.instrs.len()],
        vec![NO_TAG; second.instrs.len()],
    ];
    // Ordinal of the next selldw of each stream, and the last selldw into each temporary.
    let mut selldw_seen = [0usize; 2];
    let mut last_into = vec![NO_TAG; temporaries];
    let mut out = Trace::default();
    for phase in 0..phases {
        let ranges = [
            units[0].get(phase).map_or(0..0, |u| u.1.clone()),
            phase
                .checked_sub(1)
                .and_then(|p| units[1].get(p))
                .map_or(0..0, |u| u.1.clone()),
        ];
        let lengths = [ranges[0].len(), ranges[1].len()];
        let mut taken = [0usize; 2];
        while taken[0] < lengths[0] || taken[1] < lengths[1] {
            // Take from the stream that is behind in proportion to its length.
            let s = if taken[1] == lengths[1]
                || (taken[0] < lengths[0] && taken[0] * lengths[1] <= taken[1] * lengths[0])
            {
                0
            } else {
                1
            };
            let index = ranges[s].start + taken[s];
            taken[s] += 1;
            let instr = streams[s].instrs[index];
            let mut deps = instr.deps.map(|d| {
                if d == NO_TAG {
                    NO_TAG
                } else {
                    maps[s][d as usize]
                }
            });
            let tag = out.instrs.len() as Tag;
            if instr.op == Op::Selldw && temporaries > 0 {
                // Groups of 8 per intv8 vector, 4 per SubBytes of a row: group g uses g % T.
                let temporary = (selldw_seen[s] / 8 % 4) % temporaries;
                selldw_seen[s] += 1;
                if instr.deps[1] != NO_TAG || last_into[temporary] != NO_TAG {
                    deps[1] = last_into[temporary];
                }
                last_into[temporary] = tag;
            }
            out.instrs.push(Instr { op: instr.op, deps });
            maps[s][index] = tag;
        }
    }
    out
}

/// The LDM access of each instruction of `trace`, by index.
fn accesses_by_index(trace: &Trace) -> Vec<Option<Access>> {
    let mut by_index = vec![None; trace.instrs.len()];
    for &(tag, access) in &trace.accesses {
        by_index[tag as usize] = Some(access);
    }
    by_index
}

/// Whether a compiler must keep two LDM accesses in program order under `aliasing`; `array`
/// names the array (LDM region) an access falls in.
fn must_keep_order(
    earlier: &Access,
    later: &Access,
    aliasing: Aliasing,
    array: &dyn Fn(usize) -> Option<usize>,
) -> bool {
    (earlier.store || later.store)
        && match aliasing {
            Aliasing::Undistinguished => true,
            Aliasing::ByArray => {
                array(earlier.byte) != array(later.byte) || earlier.overlaps(later)
            }
            Aliasing::Exact => earlier.overlaps(later),
        }
}

/// What a compiler's list scheduler makes of C code: each basic block of `trace` (from one
/// branch to the next: the steps are inlined, so only the loops' branches end blocks) reordered
/// by cycle, each cycle taking the ready instructions with the longest latency path to the end
/// of the block, at most one per pipeline (scalar integer to either). Register dependencies and
/// the LDM order `aliasing` requires are kept (`plan` says which array each access falls in); a
/// branch stays last in its block; blocks stay in order. The result is issued by the in-order
/// model like any other stream ([`schedule`]). `trace` must carry the accesses the machine
/// records (a recorded batch, not a woven one).
pub fn compile_blocks(trace: &Trace, aliasing: Aliasing, plan: &LdmPlan, params: &Params) -> Trace {
    let accesses = accesses_by_index(trace);
    // Basic blocks end at branches only: the steps are inlined C, so a step's start is no
    // boundary unless a loop's branch is.
    let mut cuts: Vec<usize> = (0..trace.instrs.len())
        .filter(|&i| trace.instrs[i].op == Op::Branch)
        .map(|i| i + 1)
        .collect();
    cuts.push(0);
    cuts.push(trace.instrs.len());
    cuts.sort_unstable();
    cuts.dedup();
    let array = |byte: usize| plan.region_of(byte);
    let mut order: Vec<usize> = Vec::with_capacity(trace.instrs.len());
    for block in cuts.windows(2) {
        order.extend(schedule_block(
            trace,
            &accesses,
            block[0]..block[1],
            &|earlier, later| must_keep_order(earlier, later, aliasing, &array),
            params,
        ));
    }
    let mut new_index = vec![NO_TAG; trace.instrs.len()];
    for (position, &old) in order.iter().enumerate() {
        new_index[old] = position as Tag;
    }
    let mut out = Trace::default();
    for &old in &order {
        let instr = trace.instrs[old];
        let deps = instr.deps.map(|d| {
            if d == NO_TAG {
                NO_TAG
            } else {
                new_index[d as usize]
            }
        });
        out.instrs.push(Instr { op: instr.op, deps });
    }
    out.accesses = trace
        .accesses
        .iter()
        .map(|&(tag, access)| (new_index[tag as usize], access))
        .collect();
    out.accesses.sort_unstable_by_key(|&(tag, _)| tag);
    // A block may now span the start of a step: the marks stay where the steps started before
    // scheduling (nothing that times a compiled trace reads them).
    out.steps = trace.steps.clone();
    out
}

/// The list-scheduled order (original indices) of the instructions in `block`.
fn schedule_block(
    trace: &Trace,
    accesses: &[Option<Access>],
    block: Range<usize>,
    keep_order: &dyn Fn(&Access, &Access) -> bool,
    params: &Params,
) -> Vec<usize> {
    let start = block.start;
    let n = block.len();
    // Edges within the block: (predecessor, cycles until the successor may issue).
    let mut preds: Vec<Vec<(usize, u64)>> = vec![Vec::new(); n];
    for k in 0..n {
        let instr = &trace.instrs[start + k];
        for (operand, &dep) in instr.deps.iter().enumerate() {
            if dep != NO_TAG && dep as usize >= start {
                let producer = trace.instrs[dep as usize].op;
                let cycles = edge_latency(producer, instr.op, operand, params);
                preds[k].push((dep as usize - start, cycles));
            }
        }
        if let Some(later) = &accesses[start + k] {
            for (i, earlier) in accesses[start..start + k].iter().enumerate() {
                if earlier.is_some_and(|e| keep_order(&e, later)) {
                    preds[k].push((i, 1));
                }
            }
        }
        if instr.op == Op::Branch {
            // The branch closes the block: everything before it stays before it.
            preds[k].extend((0..k).map(|i| (i, 0)));
        }
    }
    // Priority: the longest latency path from each instruction to the end of the block.
    let mut height = vec![0u64; n];
    for k in (0..n).rev() {
        let own = latency(trace.instrs[start + k].op, params);
        height[k] = height[k].max(own);
        for &(p, cycles) in &preds[k] {
            height[p] = height[p].max(cycles + height[k]);
        }
    }
    let mut issued: Vec<Option<u64>> = vec![None; n];
    let mut order = Vec::with_capacity(n);
    let mut cycle = 0u64;
    while order.len() < n {
        let ready_at = |k: usize, issued: &[Option<u64>]| -> Option<u64> {
            preds[k].iter().try_fold(0u64, |at, &(p, cycles)| {
                issued[p].map(|t| at.max(t + cycles))
            })
        };
        let mut taken: Option<Pipe> = None;
        for _ in 0..2 {
            let best = (0..n)
                .filter(|&k| issued[k].is_none())
                .filter(|&k| ready_at(k, &issued).is_some_and(|at| at <= cycle))
                .filter(|&k| {
                    taken.is_none_or(|pipe| pipes_pair(pipe, trace.instrs[start + k].op.pipe()))
                })
                .max_by_key(|&k| (height[k], std::cmp::Reverse(k)));
            let Some(k) = best else { break };
            issued[k] = Some(cycle);
            order.push(start + k);
            taken = Some(trace.instrs[start + k].op.pipe());
        }
        cycle += 1;
    }
    order
}

#[cfg(test)]
mod tests;
