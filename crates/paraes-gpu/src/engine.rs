//! GpuEngine: the [`Engine`] on a CUDA GPU. Partial CTR blocks at the ends of a buffer run
//! on the host; whole blocks go through the GPU, with Stream counters or GCM chunk counters
//! (one launch covers thousands of chunks; the kernels make each block's counter). The rooms: piece scheduling over the CUDA
//! streams ([`schedule`]), CTR's choice of kernel ([`calibrate`]) and the benchmark timers
//! ([`timing`]); this file holds the engine itself and its Engine path.

mod calibrate;
mod records;
mod schedule;
mod timing;
mod timing_records;

use std::sync::{Arc, Mutex, OnceLock};

use paraes_core::{
    modes, AesImpl, Counters, Direction, Engine, EngineError, Job, Mode, RecordsError, RecordsJob,
};

use crate::driver::{load_driver, Device, DeviceInfo, Kernel, Stream};
use crate::error::GpuError;
use crate::image::ModuleReport;
use crate::kernels::KernelKind;
use crate::options::{CtrVariant, GpuOptions};
use crate::plan::{self, GcmLayout, RoundKeyWords};

pub(crate) use records::first_failure;
use schedule::{PieceJob, Slot};
pub use timing::{CopyDirection, KernelTiming};
pub use timing_records::RecordsStep;

/// Kernel kinds per key size.
const KINDS: usize = KernelKind::ALL.len();

/// AES on a CUDA GPU; byte-identical to the CPU engine. Calls from several threads are
/// served one at a time (one pipeline per engine).
pub struct GpuEngine {
    device: Arc<Device>,
    options: GpuOptions,
    /// The kernels of the chosen variant, per [key size][kernel kind].
    kernels: [[Kernel; KINDS]; 3],
    /// Grid size that fills the GPU, per [key size][kernel kind].
    full_grid: [[u32; KINDS]; 3],
    slots: Mutex<Vec<Slot>>,
    pool: rayon::ThreadPool,
    /// The CTR variant in force: set from the options, or once by `Auto`'s calibration.
    resolved: OnceLock<CtrVariant>,
    host_aes: AesImpl,
    /// The stream the device-memory API orders work on unless given another
    /// ([`GpuEngine::default_stream`]).
    default_stream: Stream,
}

impl GpuEngine {
    /// Opens the device, loads the kernels (once per device, image choice and process) and
    /// prepares the pipeline. `options` pass through [`GpuOptions::with_env`] first. Where
    /// there is no driver or device this returns an error whose message says what to do; it
    /// never panics.
    pub fn new(options: GpuOptions) -> Result<GpuEngine, GpuError> {
        let options = options.with_env()?;
        options.check()?;
        load_driver()?;
        let device = Device::get(options.device, options.image)?;
        let mut full_grid = [[1u32; KINDS]; 3];
        let mut kernels = Vec::new();
        for (size, grids) in full_grid.iter_mut().enumerate() {
            let mut row = Vec::new();
            for kind in KernelKind::ALL {
                let kernel = device.kernel(10 + 2 * size, kind, options.kernel_variant)?;
                let resident = kernel.resident_per_sm(options.threads_per_block)?;
                grids[kind.index()] = device.info.sms.max(1) * resident;
                row.push(kernel);
            }
            kernels.push(<[Kernel; KINDS]>::try_from(row).unwrap_or_else(|_| unreachable!()));
        }
        let kernels = <[[Kernel; KINDS]; 3]>::try_from(kernels).unwrap_or_else(|_| unreachable!());
        let threads = options
            .host_threads
            .unwrap_or_else(|| paraes_core::cpus::usable().count);
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .thread_name(|i| format!("paraes-gpu-host-{i}"))
            .build()
            .map_err(|e| {
                GpuError::BadOption(format!("could not start {threads} host threads: {e}"))
            })?;
        let resolved = match options.ctr_variant {
            CtrVariant::Auto => OnceLock::new(),
            fixed => OnceLock::from(fixed),
        };
        let default_stream = Stream::new(device.context())?;
        Ok(GpuEngine {
            default_stream,
            device,
            options,
            kernels,
            full_grid,
            slots: Mutex::new(Vec::new()),
            pool,
            resolved,
            host_aes: AesImpl::detect(),
        })
    }

    /// The device the engine runs on (for the device-memory API).
    pub(crate) fn device(&self) -> &Arc<Device> {
        &self.device
    }

    /// The engine's own stream (for the device-memory API).
    pub(crate) fn own_stream(&self) -> &Stream {
        &self.default_stream
    }

    /// The GPU in use.
    pub fn device_info(&self) -> &DeviceInfo {
        &self.device.info
    }

    /// The options in force (those the engine was made with, after [`GpuOptions::with_env`]).
    pub fn options(&self) -> &GpuOptions {
        &self.options
    }

    /// Which kernel image was loaded, how long it took, and the driver's JIT log.
    pub fn module_report(&self) -> &ModuleReport {
        &self.device.module
    }

    fn kernel(&self, rounds: usize, kind: KernelKind) -> &Kernel {
        &self.kernels[(rounds - 10) / 2][kind.index()]
    }

    /// The CTR variant in use: `Auto` until `Auto` has calibrated, then the winner.
    pub fn ctr_variant(&self) -> CtrVariant {
        self.resolved.get().copied().unwrap_or(CtrVariant::Auto)
    }

    /// [`Engine::process`] with the CTR variant chosen by the caller (tests, benchmarks);
    /// `Auto` means the engine's choice.
    pub fn process_with(
        &self,
        job: &Job<'_>,
        buf: &mut [u8],
        variant: CtrVariant,
    ) -> Result<(), EngineError> {
        job.check(buf.len())?;
        if buf.is_empty() {
            return Ok(());
        }
        let gcm = match job.counters {
            Counters::Stream => None,
            Counters::GcmChunks { base_nonce, stride } => match GcmLayout::new(&base_nonce, stride)
            {
                Some(layout) => Some(layout),
                // Records that are not whole blocks (or longer than 256 MiB): not what a
                // message holds (16384 or 16400 bytes), so the host's CTR serves them.
                None => return modes::apply(self.host_aes, job, buf),
            },
        };
        if buf.len() < self.options.cpu_below {
            return modes::apply(self.host_aes, job, buf);
        }
        let split = match job.mode {
            Mode::Ecb => plan::split(0, buf.len()),
            Mode::Ctr => plan::split(job.offset, buf.len()),
        };
        for edge in [split.head.clone(), split.tail.clone()] {
            if !edge.is_empty() {
                modes::apply(
                    self.host_aes,
                    &job.advanced(edge.start as u64),
                    &mut buf[edge],
                )?;
            }
        }
        if split.body.is_empty() {
            return Ok(());
        }
        let first_block = match job.mode {
            Mode::Ecb => 0,
            Mode::Ctr => split.first_block,
        };
        self.body(job, variant, gcm, first_block, &mut buf[split.body])
            .map_err(EngineError::from)
    }

    /// Whole blocks through the GPU; with `gcm` (CTR only), under GCM chunk counters.
    fn body(
        &self,
        job: &Job<'_>,
        variant: CtrVariant,
        gcm: Option<GcmLayout>,
        first_block: u64,
        body: &mut [u8],
    ) -> Result<(), GpuError> {
        let (kind, keys) = match (job.mode, job.direction) {
            (Mode::Ecb, Direction::Encrypt) => (KernelKind::EcbEncrypt, job.key.enc_round_keys()),
            (Mode::Ecb, Direction::Decrypt) => (KernelKind::EcbDecrypt, job.key.dec_round_keys()),
            (Mode::Ctr, _) => (KernelKind::CtrKeystream, job.key.enc_round_keys()),
        };
        let mut words = RoundKeyWords::new(keys);
        let mut slots = self.slots.lock().unwrap_or_else(|p| p.into_inner());
        let piece_job = PieceJob {
            kind,
            keys: &words,
            rounds: job.key.rounds(),
            counter: &job.counter,
            gcm,
            first_block,
        };
        let result = match job.mode {
            Mode::Ecb => self.pipeline(&mut slots, &piece_job, body),
            Mode::Ctr => self.ctr(&mut slots, variant, piece_job, body),
        };
        words.wipe();
        if result.is_err() {
            // Leave no piece in flight: wait for every stream (errors already reported).
            for slot in slots.iter_mut() {
                let _ = slot.stream.synchronize();
                slot.pending = None;
            }
        }
        result
    }
}

impl Engine for GpuEngine {
    fn name(&self) -> String {
        let o = &self.options;
        format!(
            "gpu ({}, {}, kernels {}, CTR {}, GCM tags on the device, {} streams x {} MiB, {} threads/block, {} sync)",
            self.device.info.name,
            self.device.module,
            o.kernel_variant,
            self.ctr_variant(),
            o.streams,
            o.max_piece >> 20,
            o.threads_per_block,
            o.sync
        )
    }

    fn workers(&self) -> usize {
        (self.device.info.sms as usize).max(1)
    }

    fn process(&self, job: &Job<'_>, buf: &mut [u8]) -> Result<(), EngineError> {
        self.process_with(job, buf, CtrVariant::Auto)
    }

    /// Cobblestone-128 and -256 (AES-128 and AES-256 keys): CTR, GHASH and tags on the device.
    fn runs_records(&self, job: &RecordsJob<'_>) -> bool {
        Self::has_records_kernels(job.key.rounds())
    }

    fn process_records(
        &self,
        job: &RecordsJob<'_>,
        input: &[u8],
        output: &mut [u8],
    ) -> Result<(), RecordsError> {
        self.records(job, input, output)
    }
}
