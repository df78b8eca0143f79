//! The time model of one offload: the MPE splits the blocks over core groups and CPEs, each CPE
//! streams its share through LDM buffers (DMA get, compute, DMA put) with single or double
//! buffering, the CG's memory bandwidth is one channel shared by its CPEs and served to groups of
//! 4 CPEs in turn, and the athread spawn/join cost is paid once per offload. Start-up is the
//! spawn/join plus each CPE's fetch of its tables (S-box, round keys) into LDM: the time before
//! the first batch can start, which Fig. 7 calls "thread start-up" (see docs/SUNWAY.md).

use crate::batch::BATCH_BYTES;
use crate::config::Buffering;
use crate::ldm_plan::LdmPlan;
use crate::offload::distribute;
use crate::params::Params;

/// Cycles a CPE needs for a number of batches: units of `batches_per_unit` batches (2 when two
/// batches are interleaved) and single batches for the rest.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct KernelCost {
    /// Cycles of one scheduling unit.
    pub unit_cycles: u64,
    /// Batches in one unit.
    pub batches_per_unit: u64,
    /// Cycles of one batch alone (for a remainder).
    pub single_cycles: u64,
    /// Instructions per batch (all pipelines).
    pub instructions_per_batch: f64,
}

impl KernelCost {
    /// Cycles for `batches` batches.
    pub fn cycles(&self, batches: u64) -> u64 {
        batches / self.batches_per_unit * self.unit_cycles
            + batches % self.batches_per_unit * self.single_cycles
    }

    /// Mean cycles per batch in the steady state.
    pub fn cycles_per_batch(&self) -> f64 {
        self.unit_cycles as f64 / self.batches_per_unit as f64
    }
}

/// Where the simulated time of one offload went.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct TimeSplit {
    /// Simulated wall time, seconds (the sum of the four parts below).
    pub seconds: f64,
    /// Computing with no DMA of its own pending (slowest CPE group), seconds.
    pub compute_seconds: f64,
    /// Waiting for DMA (queueing for the shared channel included), seconds.
    pub dma_seconds: f64,
    /// Start-up: athread spawn + join, and the CPEs' table fetch before their first batch,
    /// seconds.
    pub startup_seconds: f64,
    /// Computing while the group's own DMA was in flight (double buffering), seconds.
    pub overlapped_seconds: f64,
}

/// One DMA request of a CPE group: all 4 CPEs' transfers of one step, served as one.
#[derive(Clone, Copy, Debug)]
enum Request {
    Table(usize),
    Get(usize),
    Put(usize),
}

/// One DMA step of a group: its requests (each: bytes of all its CPEs, bytes of the largest CPE
/// transfer), compute seconds after. One request, unless a CPE's chunk is cut ([`Cuts`]): its
/// `p`-th piece goes in request `p`.
#[derive(Clone, Debug)]
struct Step {
    requests: Vec<(f64, f64)>,
    compute: f64,
}

/// Where the CPEs' DMA transfers are cut: at the data-space blocks that are multiples of
/// `every` (the ends of GCM records with a tag's room, which the DMA skips, so data on both sides
/// of one is two transfers), counting the job's first block as block `first`. The default cuts
/// nothing (ECB, stream CTR, GCM chunks back to back).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Cuts {
    /// The data-space position of the job's first block.
    pub first: u64,
    /// Blocks from one cut to the next, if any.
    pub every: Option<u64>,
}

impl Cuts {
    /// The transfers of blocks `start..start + blocks` (relative to the job's first block), in
    /// blocks.
    fn pieces(&self, start: u64, blocks: u64) -> impl Iterator<Item = u64> + '_ {
        let mut at = self.first + start;
        let end = at + blocks;
        std::iter::from_fn(move || {
            if at >= end {
                return None;
            }
            let next = match self.every {
                None => end,
                Some(every) => end.min((at / every + 1) * every),
            };
            let piece = next - at;
            at = next;
            Some(piece)
        })
    }
}

#[derive(Default)]
struct GroupState {
    compute_free: f64,
    done: f64,
    tables_done: f64,
    compute: Vec<(f64, f64)>,
    dma: Vec<(f64, f64)>,
}

/// Simulates one core group whose CPEs have `cpe_blocks` blocks each (the first from block
/// `cuts.first` of the job's data, its transfers cut as `cuts` says); returns its time split
/// (without start-up).
pub fn simulate_cg(
    cpe_blocks: &[u64],
    cuts: Cuts,
    cost: &KernelCost,
    plan: &LdmPlan,
    table_bytes: &[usize],
    buffering: Buffering,
    params: &Params,
) -> TimeSplit {
    let chunk_blocks = (plan.buffer_bytes() / 16) as u64;
    // Each CPE's first block, relative to the job's first block.
    let starts: Vec<u64> = cpe_blocks
        .iter()
        .scan(0u64, |at, &blocks| {
            let start = *at;
            *at += blocks;
            Some(start)
        })
        .collect();
    let groups: Vec<Vec<Step>> = cpe_blocks
        .chunks(params.dma_group_cpes)
        .zip(starts.chunks(params.dma_group_cpes))
        .map(|(group, group_starts)| {
            let chunks = group
                .iter()
                .map(|b| b.div_ceil(chunk_blocks))
                .max()
                .unwrap_or(0);
            (0..chunks)
                .map(|k| {
                    let mut step = Step {
                        requests: vec![(0.0, 0.0)],
                        compute: 0.0,
                    };
                    for (&blocks, &start) in group.iter().zip(group_starts) {
                        let here = blocks.saturating_sub(k * chunk_blocks).min(chunk_blocks);
                        let pieces = cuts.pieces(start + k * chunk_blocks, here);
                        for (p, piece) in pieces.enumerate() {
                            if p == step.requests.len() {
                                step.requests.push((0.0, 0.0));
                            }
                            let bytes = (16 * piece) as f64;
                            let request = &mut step.requests[p];
                            request.0 += bytes;
                            request.1 = request.1.max(bytes);
                        }
                        let batches = (16 * here).div_ceil(BATCH_BYTES as u64);
                        step.compute = step
                            .compute
                            .max(cost.cycles(batches) as f64 / params.clock_hz);
                    }
                    step
                })
                .collect()
        })
        .collect();
    if groups.iter().all(|g| g.is_empty()) {
        return TimeSplit::default();
    }
    let way = if params.dma_counts_both_ways {
        1.0
    } else {
        0.5
    };
    let duration = |bytes: f64, transfer: f64| way * bytes / params.dma_bandwidth(transfer);
    let double = buffering == Buffering::Double;
    let mut state: Vec<GroupState> = groups.iter().map(|_| GroupState::default()).collect();
    // Pending requests: (issue time, sequence, group, request).
    let mut pending: Vec<(f64, u64, usize, Request)> = Vec::new();
    let mut sequence = 0u64;
    let mut push = |pending: &mut Vec<_>, time: f64, group: usize, request: Request| {
        pending.push((time, sequence, group, request));
        sequence += 1;
    };
    for (g, steps) in groups.iter().enumerate() {
        if !steps.is_empty() {
            push(&mut pending, 0.0, g, Request::Table(0));
        }
    }
    let mut channel_free = 0.0f64;
    while let Some(position) = (0..pending.len()).min_by(|&a, &b| {
        let (ta, sa, ..) = pending[a];
        let (tb, sb, ..) = pending[b];
        ta.total_cmp(&tb).then(sa.cmp(&sb))
    }) {
        let (issue, _, g, request) = pending.swap_remove(position);
        let steps = &groups[g];
        let cpes = (cpe_blocks.len() - g * params.dma_group_cpes).min(params.dma_group_cpes) as f64;
        let busy = match request {
            Request::Table(i) => duration(cpes * table_bytes[i] as f64, table_bytes[i] as f64),
            Request::Get(k) | Request::Put(k) => steps[k]
                .requests
                .iter()
                .map(|&(bytes, transfer)| duration(bytes, transfer))
                .sum(),
        };
        let start = issue.max(channel_free);
        let end = start + busy;
        channel_free = end;
        let group = &mut state[g];
        match request {
            Request::Table(i) if i + 1 < table_bytes.len() => {
                push(&mut pending, end, g, Request::Table(i + 1))
            }
            Request::Table(_) => {
                group.tables_done = end;
                push(&mut pending, end, g, Request::Get(0))
            }
            _ => group.dma.push((issue, end)),
        }
        match request {
            Request::Table(_) => {}
            Request::Get(k) => {
                let begin = if double {
                    end.max(group.compute_free)
                } else {
                    end
                };
                let finish = begin + steps[k].compute;
                group.compute.push((begin, finish));
                group.compute_free = finish;
                if double && k + 1 < steps.len() {
                    push(&mut pending, begin, g, Request::Get(k + 1));
                }
                push(&mut pending, finish, g, Request::Put(k));
            }
            Request::Put(k) => {
                if k + 1 == steps.len() {
                    group.done = end;
                } else if !double {
                    push(&mut pending, end, g, Request::Get(k + 1));
                }
            }
        }
    }
    let critical = state
        .iter()
        .max_by(|a, b| a.done.total_cmp(&b.done))
        .expect("at least one group has work");
    let compute = union_length(&critical.compute);
    let dma = union_length(&critical.dma);
    let mut both: Vec<(f64, f64)> = critical.compute.clone();
    both.extend_from_slice(&critical.dma);
    let overlapped = (compute + dma - union_length(&both)).max(0.0);
    TimeSplit {
        seconds: critical.done,
        compute_seconds: compute - overlapped,
        dma_seconds: critical.done - critical.tables_done - compute,
        startup_seconds: critical.tables_done,
        overlapped_seconds: overlapped,
    }
}

/// Total length of a set of intervals (overlaps counted once).
fn union_length(intervals: &[(f64, f64)]) -> f64 {
    let mut sorted = intervals.to_vec();
    sorted.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut total = 0.0;
    let mut current: Option<(f64, f64)> = None;
    for (start, end) in sorted {
        match current {
            Some((s, e)) if start <= e => current = Some((s, e.max(end))),
            Some((s, e)) => {
                total += e - s;
                current = Some((start, end));
            }
            None => current = Some((start, end)),
        }
    }
    if let Some((s, e)) = current {
        total += e - s;
    }
    total
}

/// The time of a whole offload of `total_blocks` data blocks (their transfers cut as `cuts`
/// says) on `cgs` core groups: start-up plus the slowest core group.
#[allow(clippy::too_many_arguments)]
pub fn simulate_offload(
    total_blocks: u64,
    cuts: Cuts,
    cgs: usize,
    cost: &KernelCost,
    plan: &LdmPlan,
    table_bytes: &[usize],
    buffering: Buffering,
    params: &Params,
) -> TimeSplit {
    if total_blocks == 0 {
        return TimeSplit::default();
    }
    let mut first = cuts.first;
    let split = distribute(total_blocks, cgs, params.cpes_per_cg)
        .iter()
        .map(|cpes| {
            let cg_cuts = Cuts { first, ..cuts };
            first += cpes.iter().sum::<u64>();
            simulate_cg(cpes, cg_cuts, cost, plan, table_bytes, buffering, params)
        })
        .max_by(|a, b| a.seconds.total_cmp(&b.seconds))
        .unwrap_or_default();
    TimeSplit {
        seconds: split.seconds + params.athread_startup_s,
        startup_seconds: split.startup_seconds + params.athread_startup_s,
        ..split
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn union_of_overlapping_intervals() {
        assert_eq!(union_length(&[(0.0, 2.0), (1.0, 3.0), (5.0, 6.0)]), 4.0);
    }
}
