//! The simulator as a [`paraes_core::Engine`]: really encrypts through the CPE kernels (see
//! [`crate::offload`]) and reports the modelled SW26010 time of each offload.

use std::collections::HashMap;
use std::sync::Mutex;

use paraes_core::{Counters, Direction, Engine, EngineError, Job, KeySize, Mode, Modelled};

use crate::config::{SimConfig, Variant};
use crate::error::SimError;
use crate::kernel::{self, ByteFlavor, CipherShape, CounterLayout, ExtractFlavor, SelldwFlavor};
use crate::ldm_plan::LdmPlan;
use crate::machine::Trace;
use crate::offload;
use crate::report::SimReport;
use crate::schedule;
use crate::timing::{self, Cuts, KernelCost};

/// Running totals over `process` calls.
#[derive(Default)]
struct Totals {
    seconds: f64,
    bytes: u64,
}

/// The SW26010 simulator as an [`Engine`].
pub struct SunwaySimEngine {
    config: SimConfig,
    plan: LdmPlan,
    costs: Mutex<HashMap<(CipherShape, CounterLayout), KernelCost>>,
    totals: Mutex<Totals>,
}

impl SunwaySimEngine {
    /// A simulator for `config`; fails on bad settings or an LDM layout that does not fit.
    pub fn new(config: SimConfig) -> Result<Self, SimError> {
        config.validate()?;
        let p = &config.params;
        let plan = LdmPlan::new(
            config.variant,
            config.buffering,
            p.ldm_bytes,
            p.ldm_reserved_bytes,
            p.ldm_buffer_bytes,
        )?;
        Ok(SunwaySimEngine {
            config,
            plan,
            costs: Mutex::new(HashMap::new()),
            totals: Mutex::new(Totals::default()),
        })
    }

    /// The configuration.
    pub fn config(&self) -> &SimConfig {
        &self.config
    }

    /// The LDM layout of every CPE.
    pub fn ldm_plan(&self) -> &LdmPlan {
        &self.plan
    }

    /// Simulated CPEs: 64 per core group.
    pub fn cpes(&self) -> usize {
        self.config.cgs * self.config.params.cpes_per_cg
    }

    /// Simulated seconds of all `process` calls so far.
    pub fn simulated_seconds(&self) -> f64 {
        self.totals.lock().map(|t| t.seconds).unwrap_or(0.0)
    }

    /// Bytes of all `process` calls so far.
    pub fn simulated_bytes(&self) -> u64 {
        self.totals.lock().map(|t| t.bytes).unwrap_or(0)
    }

    /// Simulated Gbps over all `process` calls so far.
    pub fn simulated_gbps(&self) -> f64 {
        paraes_core::Throughput::new(self.simulated_bytes(), self.simulated_seconds()).gbps()
    }

    /// Clears the running totals.
    pub fn reset_totals(&self) {
        if let Ok(mut totals) = self.totals.lock() {
            *totals = Totals::default();
        }
    }

    /// The instruction stream of one scheduling unit (one batch; two interleaved batches for
    /// the pipelined variant) of a job shape.
    pub fn kernel_trace(&self, mode: Mode, direction: Direction, key_size: KeySize) -> Trace {
        kernel::record_variant(
            self.config.variant,
            &self.plan,
            shape_of(mode, direction, key_size.rounds()),
            &self.config.params,
        )
    }

    /// The kernel cost of a job shape and counter layout (recorded and scheduled once, then
    /// cached).
    fn cost(&self, shape: CipherShape, layout: CounterLayout) -> KernelCost {
        let key = (shape, layout);
        if let Some(cost) = self.costs.lock().ok().and_then(|c| c.get(&key).copied()) {
            return cost;
        }
        let params = &self.config.params;
        let variant = self.config.variant;
        let unit = kernel::record_variant_with(variant, &self.plan, shape, layout, params);
        let single = match variant {
            Variant::Pipelined => {
                kernel::record_variant_with(Variant::Selldw, &self.plan, shape, layout, params)
            }
            _ => unit.clone(),
        };
        let batches_per_unit = if variant == Variant::Pipelined { 2 } else { 1 };
        let cost = KernelCost {
            unit_cycles: schedule::trace_cycles(&unit, params),
            batches_per_unit,
            single_cycles: schedule::trace_cycles(&single, params),
            instructions_per_batch: unit.instrs.len() as f64 / batches_per_unit as f64,
        };
        if let Ok(mut costs) = self.costs.lock() {
            costs.insert(key, cost);
        }
        cost
    }

    /// The simulated time of `bytes` bytes in one offload, without running any data (the same
    /// model as [`Self::process_timed`]; used for sizes too large to run). Stream CTR counters;
    /// see [`Self::predict_job`] for any job.
    pub fn predict(
        &self,
        mode: Mode,
        direction: Direction,
        key_size: KeySize,
        bytes: u64,
    ) -> SimReport {
        let shape = shape_of(mode, direction, key_size.rounds());
        self.report(
            shape,
            CounterLayout::Stream,
            bytes,
            bytes.div_ceil(16),
            Cuts::default(),
        )
    }

    /// The simulated time of one offload of `job` on `len` bytes, without running any data:
    /// exactly what [`Self::process_timed`] reports for it (GCM chunk counters included).
    pub fn predict_job(&self, job: &Job<'_>, len: u64) -> Result<SimReport, EngineError> {
        let len = usize::try_from(len)
            .map_err(|_| EngineError::Unsupported(format!("{len} bytes in one offload")))?;
        job.check(len)?;
        Ok(self.job_report(job, len))
    }

    /// The modelled cost of `job` on `len` bytes: the data blocks the CPEs transform (for GCM
    /// chunks with a tag's room, only the chunk data: the DMA skips the rooms, cutting a
    /// transfer at each), with the kernel of the job's counter layout.
    fn job_report(&self, job: &Job<'_>, len: usize) -> SimReport {
        let shape = shape_of(job.mode, job.direction, job.key.rounds());
        let map = offload::DataMap::of(job.counters);
        let (start, end) = offload::data_range(&map, job.offset, len);
        if start == end {
            // Nothing to transform (an empty buffer, or only a tag's room): no offload.
            return SimReport {
                bytes: len as u64,
                cpes: self.cpes(),
                ..SimReport::default()
            };
        }
        let cuts = Cuts {
            first: start / 16,
            every: map.cut_blocks(),
        };
        let blocks = end.div_ceil(16) - start / 16;
        self.report(shape, layout_of(job), len as u64, blocks, cuts)
    }

    fn report(
        &self,
        shape: CipherShape,
        layout: CounterLayout,
        bytes: u64,
        blocks: u64,
        cuts: Cuts,
    ) -> SimReport {
        let cost = self.cost(shape, layout);
        let split = timing::simulate_offload(
            blocks,
            cuts,
            self.config.cgs,
            &cost,
            &self.plan,
            &self.plan.tables().map(|t| t.used),
            self.config.buffering,
            &self.config.params,
        );
        SimReport::from_split(bytes, split, &cost, self.cpes())
    }

    /// Processes `buf` like [`Engine::process`] and returns the simulated cost of this offload
    /// (also added to the running totals).
    pub fn process_timed(&self, job: &Job<'_>, buf: &mut [u8]) -> Result<SimReport, EngineError> {
        job.check(buf.len())?;
        let shape = shape_of(job.mode, job.direction, job.key.rounds());
        if !buf.is_empty() {
            let (plan, cgs, cpes) = (&self.plan, self.config.cgs, self.config.params.cpes_per_cg);
            match self.config.variant {
                Variant::Original => offload::run::<ByteFlavor>(job, shape, plan, cgs, cpes, buf),
                Variant::Simd => offload::run::<ExtractFlavor>(job, shape, plan, cgs, cpes, buf),
                Variant::Selldw | Variant::Pipelined => {
                    offload::run::<SelldwFlavor>(job, shape, plan, cgs, cpes, buf)
                }
            }
        }
        let report = self.job_report(job, buf.len());
        if let Ok(mut totals) = self.totals.lock() {
            totals.seconds += report.seconds;
            totals.bytes += report.bytes;
        }
        Ok(report)
    }
}

/// The counter layout of a job's kernel (ECB: stream, which it ignores).
fn layout_of(job: &Job<'_>) -> CounterLayout {
    match (job.mode, job.counters) {
        (Mode::Ctr, Counters::GcmChunks { .. }) => CounterLayout::GcmChunks,
        _ => CounterLayout::Stream,
    }
}

/// The kernel shape of a job.
fn shape_of(mode: Mode, direction: Direction, rounds: usize) -> CipherShape {
    match mode {
        Mode::Ecb => CipherShape {
            direction,
            rounds,
            ctr: false,
        },
        Mode::Ctr => CipherShape {
            direction: Direction::Encrypt,
            rounds,
            ctr: true,
        },
    }
}

impl Engine for SunwaySimEngine {
    fn name(&self) -> String {
        format!(
            "sunway-sim ({}, {} buffering, {} CG{}, {} simulated CPEs)",
            self.config.variant,
            self.config.buffering,
            self.config.cgs,
            if self.config.cgs == 1 { "" } else { "s" },
            self.cpes()
        )
    }

    fn workers(&self) -> usize {
        self.cpes()
    }

    fn process(&self, job: &Job<'_>, buf: &mut [u8]) -> Result<(), EngineError> {
        self.process_timed(job, buf).map(|_| ())
    }

    fn modelled(&self) -> Option<Modelled> {
        Some(Modelled {
            bytes: self.simulated_bytes(),
            seconds: self.simulated_seconds(),
        })
    }
}
