//! paraes-sunway-sim: a byte-exact, cycle-modelled simulator of SW-AES (Li et al., "SW-AES:
//! Accelerating AES Algorithm on the Sunway TaihuLight") on the SW26010 many-core chip.
//!
//! [`SunwaySimEngine`] really encrypts: every AES step runs as counted operations on simulated
//! 256-bit registers ([`machine::V256`], 8 x u32 lanes) against a simulated 64 KiB LDM per CPE,
//! CPEs in parallel on the host with rayon, and its output is byte-identical to
//! [`paraes_core::modes::apply`]. At the same time it models how long an SW26010 would take:
//! the instruction stream of one batch (8 blocks) is recorded through the same code, scheduled on
//! an in-order dual-issue (P0 + P1) CPE, and combined with a DMA and start-up model
//! ([`timing`]) whose every constant is in [`params::PARAMETER_TABLE`] with its source.
//!
//! The public API the CLI uses:
//! - [`SimConfig`] (`variant`, `buffering`, `cgs`, `params`), [`Variant`], [`Buffering`];
//! - [`SunwaySimEngine::new`], [`paraes_core::Engine`] for it, [`SunwaySimEngine::process_timed`]
//!   returning a [`SimReport`], and the running totals [`SunwaySimEngine::simulated_seconds`] /
//!   [`SunwaySimEngine::simulated_bytes`];
//! - [`SunwaySimEngine::predict`]: the same time model for a size without running data.
//!
//! Each `process` call is one offload: the MPE splits the buffer over the CGs, spawns the CPE
//! threads (paying the athread start-up), and joins them. A file streamed in 1 MiB chunks thus
//! pays the start-up once per MiB and moves only 4 KiB per CPE per call, so its simulated rate
//! is lower than the paper's one-shot figures (which offload the whole input at once; see
//! docs/SUNWAY.md).
#![deny(missing_docs)]
#![forbid(unsafe_code)]

pub mod kernel;
pub mod ldm;
pub mod machine;
pub mod params;
pub mod schedule;
pub mod timing;

use std::collections::HashMap;
use std::fmt;
use std::str::FromStr;
use std::sync::Mutex;

use paraes_core::modes::counter_at;
use paraes_core::{Direction, Engine, EngineError, ExpandedKey, Job, KeySize, Mode, Modelled};
use rayon::prelude::*;

use kernel::{
    run_batch, CipherShape, Counter, ExtractFlavor, Flavor, LdmPlan, ScalarFlavor, SelldwFlavor,
    BATCH_BYTES,
};
use ldm::Ldm;
use machine::{Machine, NullSink, Trace};
use params::Params;
use timing::{KernelCost, TimeSplit};

/// The rungs of the paper's optimisation ladder (Fig. 8).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Variant {
    /// "Original parallel": no vectorisation, one state in scalar registers, byte lookups.
    Original,
    /// SIMD-friendly layout, but SubBytes by extracting lanes to scalars and inserting back.
    Simd,
    /// SIMD layout + semi-SIMD lookup with `selldw` on the ExtS-Box.
    Selldw,
    /// SIMD + selldw + Pipelined Step Execution (two batches interleaved).
    Pipelined,
}

impl Variant {
    /// Every variant, in the order of the ladder.
    pub const ALL: [Variant; 4] = [
        Variant::Original,
        Variant::Simd,
        Variant::Selldw,
        Variant::Pipelined,
    ];

    /// The name used on the command line (`--sw-variant`).
    pub fn name(self) -> &'static str {
        match self {
            Variant::Original => "original",
            Variant::Simd => "simd",
            Variant::Selldw => "selldw",
            Variant::Pipelined => "pipelined",
        }
    }
}

/// Single or double buffering of the DMA transfers in LDM.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Buffering {
    /// One LDM buffer: get, compute, put, in turn.
    Single,
    /// Two LDM buffers: the next get runs while the current buffer is computed.
    Double,
}

impl Buffering {
    /// Both modes.
    pub const ALL: [Buffering; 2] = [Buffering::Single, Buffering::Double];

    /// The name used on the command line (`--sw-buffering`).
    pub fn name(self) -> &'static str {
        match self {
            Buffering::Single => "single",
            Buffering::Double => "double",
        }
    }
}

/// Implements Display and FromStr from `ALL` and `name()`.
macro_rules! named_enum {
    ($type:ident, $what:literal) => {
        impl fmt::Display for $type {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.name())
            }
        }

        impl FromStr for $type {
            type Err = SimError;
            fn from_str(text: &str) -> Result<Self, SimError> {
                $type::ALL
                    .iter()
                    .copied()
                    .find(|v| v.name() == text)
                    .ok_or_else(|| {
                        let names: Vec<&str> = $type::ALL.iter().map(|v| v.name()).collect();
                        SimError::Config(format!(
                            "unknown {} '{text}': choose one of {}",
                            $what,
                            names.join(", ")
                        ))
                    })
            }
        }
    };
}
named_enum!(Variant, "Sunway variant");
named_enum!(Buffering, "Sunway buffering");

/// Why the simulator cannot be set up.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SimError {
    /// A bad setting.
    #[error("{0}")]
    Config(String),
    /// The kernel's data does not fit in a CPE's local memory.
    #[error(
        "LDM overflow: '{region}' needs {requested} bytes but only {} of the CPE's {capacity} \
         bytes are left: use a smaller LDM buffer",
        capacity - used
    )]
    LdmOverflow {
        /// The region that did not fit.
        region: String,
        /// Its size in bytes.
        requested: usize,
        /// Bytes already allocated.
        used: usize,
        /// LDM size in bytes.
        capacity: usize,
    },
}

impl From<SimError> for EngineError {
    fn from(error: SimError) -> Self {
        EngineError::Unavailable(error.to_string())
    }
}

/// How the simulated SW26010 runs SW-AES.
#[derive(Clone, Debug, PartialEq)]
pub struct SimConfig {
    /// The optimisation rung.
    pub variant: Variant,
    /// Single or double buffering.
    pub buffering: Buffering,
    /// Core groups used, 1 to 4.
    pub cgs: usize,
    /// The cost parameters (defaults: [`Params::DEFAULT`]).
    pub params: Params,
}

impl Default for SimConfig {
    fn default() -> Self {
        SimConfig {
            variant: Variant::Pipelined,
            buffering: Buffering::Double,
            cgs: 4,
            params: Params::DEFAULT,
        }
    }
}

impl SimConfig {
    /// A configuration with the default parameters.
    pub fn new(variant: Variant, buffering: Buffering, cgs: usize) -> Self {
        SimConfig {
            variant,
            buffering,
            cgs,
            ..SimConfig::default()
        }
    }

    /// Checks the settings.
    pub fn validate(&self) -> Result<(), SimError> {
        if self.cgs == 0 || self.cgs > self.params.cgs_per_chip {
            return Err(SimError::Config(format!(
                "an SW26010 has core groups 1 to {}; --sw-cgs {} is out of range",
                self.params.cgs_per_chip, self.cgs
            )));
        }
        Ok(())
    }
}

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
        if self.seconds > 0.0 {
            self.bytes as f64 * 8.0 / self.seconds / 1e9
        } else {
            0.0
        }
    }

    fn from_split(bytes: u64, split: TimeSplit, cost: &KernelCost, cpes: usize) -> Self {
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
    costs: Mutex<HashMap<CipherShape, KernelCost>>,
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
        let seconds = self.simulated_seconds();
        if seconds > 0.0 {
            self.simulated_bytes() as f64 * 8.0 / seconds / 1e9
        } else {
            0.0
        }
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

    /// The kernel cost of a job shape (recorded and scheduled once, then cached).
    fn cost(&self, shape: CipherShape) -> KernelCost {
        if let Some(cost) = self.costs.lock().ok().and_then(|c| c.get(&shape).copied()) {
            return cost;
        }
        let params = &self.config.params;
        let unit = kernel::record_variant(self.config.variant, &self.plan, shape, params);
        let single = match self.config.variant {
            Variant::Pipelined => {
                kernel::record_variant(Variant::Selldw, &self.plan, shape, params)
            }
            _ => unit.clone(),
        };
        let batches_per_unit = if self.config.variant == Variant::Pipelined {
            2
        } else {
            1
        };
        let cost = KernelCost {
            unit_cycles: schedule::trace_cycles(&unit, params),
            batches_per_unit,
            single_cycles: schedule::trace_cycles(&single, params),
            instructions_per_batch: unit.instrs.len() as f64 / batches_per_unit as f64,
        };
        if let Ok(mut costs) = self.costs.lock() {
            costs.insert(shape, cost);
        }
        cost
    }

    fn table_bytes(&self) -> [usize; 2] {
        let regions = &self.plan.regions;
        [regions[1].2, regions[2].2]
    }

    /// The simulated time of `bytes` bytes in one offload, without running any data (the same
    /// model as [`Self::process_timed`]; used for sizes too large to run).
    pub fn predict(
        &self,
        mode: Mode,
        direction: Direction,
        key_size: KeySize,
        bytes: u64,
    ) -> SimReport {
        let shape = shape_of(mode, direction, key_size.rounds());
        self.report(shape, bytes, bytes.div_ceil(16))
    }

    fn report(&self, shape: CipherShape, bytes: u64, blocks: u64) -> SimReport {
        let cost = self.cost(shape);
        let split = timing::simulate_offload(
            blocks,
            self.config.cgs,
            &cost,
            &self.plan,
            &self.table_bytes(),
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
        let skip = (job.offset % 16) as usize;
        let blocks = (skip + buf.len()).div_ceil(16) as u64;
        if !buf.is_empty() {
            match self.config.variant {
                Variant::Original => self.run_data::<ScalarFlavor>(job, shape, buf),
                Variant::Simd => self.run_data::<ExtractFlavor>(job, shape, buf),
                Variant::Selldw | Variant::Pipelined => {
                    self.run_data::<SelldwFlavor>(job, shape, buf)
                }
            }
        }
        let report = if buf.is_empty() {
            SimReport {
                cpes: self.cpes(),
                ..SimReport::default()
            }
        } else {
            self.report(shape, buf.len() as u64, blocks)
        };
        if let Ok(mut totals) = self.totals.lock() {
            totals.seconds += report.seconds;
            totals.bytes += report.bytes;
        }
        Ok(report)
    }

    /// Runs the data through the CPE kernels: every CPE's share on a rayon task.
    fn run_data<F: Flavor>(&self, job: &Job<'_>, shape: CipherShape, buf: &mut [u8]) {
        let skip = (job.offset % 16) as usize;
        let first_block = u128::from(job.offset / 16);
        let total_blocks = (skip + buf.len()).div_ceil(16) as u64;
        let (sbox, keys) = match shape.direction {
            Direction::Encrypt => (kernel::sbox(), job.key.enc_round_keys()),
            Direction::Decrypt => (kernel::inv_sbox(), job.key.dec_round_keys()),
        };
        let sbox_image = F::sbox_image(&sbox);
        let key_image = F::round_key_image(keys);
        // Each CPE's share: (its bytes of buf, its first block relative to the job, its blocks).
        let mut shares = Vec::new();
        let job_end = skip + buf.len();
        let mut rest: &mut [u8] = buf;
        let mut block = 0u64;
        for blocks in timing::distribute(
            total_blocks,
            self.config.cgs,
            self.config.params.cpes_per_cg,
        )
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
        let plan = &self.plan;
        let iv = job.iv;
        shares.into_par_iter().for_each_init(
            || {
                let mut ldm = Ldm::new(plan.total_bytes);
                ldm.put_words(plan.sbox_word, &sbox_image);
                ldm.put_words(plan.round_key_word, &key_image);
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
    let chunk_blocks = (plan.buffer_bytes / 16) as u64;
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
        let buffer = plan.buffer_words[chunk % plan.buffer_words.len()];
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
                buffer + batch * kernel::BATCH_WORDS,
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

/// A key schedule for tests and examples.
pub fn expand_key(bytes: &[u8]) -> ExpandedKey {
    paraes_core::Key::new(bytes)
        .expect("a 16, 24 or 32 byte key")
        .expand()
}
