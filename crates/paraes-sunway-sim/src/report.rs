//! The simulated cost of one offload, split the way Fig. 7 splits it.

use crate::timing::{KernelCost, TimeSplit};

/// The simulated cost of one offload (one `process` call or one prediction).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct SimReport {
    /// Bytes processed.
    pub bytes: u64,
    /// Simulated SW26010 time, seconds (= compute + dma + startup + overlapped).
    pub seconds: f64,
    /// Computing with no own DMA in flight (slowest CPE group), seconds.
    pub compute_seconds: f64,
    /// Waiting for DMA, seconds.
    pub dma_seconds: f64,
    /// athread spawn + join, seconds.
    pub startup_seconds: f64,
    /// Computing overlapped with own DMA (double buffering), seconds.
    pub overlapped_seconds: f64,
    /// Steady-state cycles per 8-block batch on one CPE.
    pub cycles_per_batch: f64,
    /// Simulated instructions per batch.
    pub instructions_per_batch: f64,
    /// Simulated CPEs (64 per core group).
    pub cpes: usize,
}

impl SimReport {
    /// Simulated throughput in Gbps (1e9 bits/s, the paper's unit); 0 for an empty job.
    pub fn gbps(&self) -> f64 {
        paraes_core::Throughput::new(self.bytes, self.seconds).gbps()
    }

    pub(crate) fn from_split(bytes: u64, split: TimeSplit, cost: &KernelCost, cpes: usize) -> Self {
        SimReport {
            bytes,
            seconds: split.seconds,
            compute_seconds: split.compute_seconds,
            dma_seconds: split.dma_seconds,
            startup_seconds: split.startup_seconds,
            overlapped_seconds: split.overlapped_seconds,
            cycles_per_batch: cost.cycles_per_batch(),
            instructions_per_batch: cost.instructions_per_batch,
            cpes,
        }
    }
}
