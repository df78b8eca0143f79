//! GpuEngine: the [`Engine`] on a CUDA GPU. Partial CTR blocks at the ends of a buffer run
//! on the host; whole blocks stream through the GPU in pieces, round-robin over 2-4 CUDA
//! streams, each with its own pinned host buffer and device buffer, so that the copy-in of
//! one piece, the kernel of another and the copy-out of a third overlap.

use std::ops::Range;
use std::str::FromStr;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use paraes_core::seeded::SplitMix64;
use paraes_core::{modes, Direction, Engine, EngineError, ExpandedKey, Implementation, Job, Mode};

use crate::driver::{
    load_driver, Device, DeviceBuffer, DeviceInfo, Event, Kernel, PinnedBuffer, Stream,
};
use crate::error::GpuError;
use crate::image::{ImageChoice, ModuleReport};
use crate::plan::{self, RoundKeyWords};
use crate::variant::{KernelVariant, SyncMode};
use crate::xor::{par_copy, par_xor_into};

/// How CTR uses the GPU.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum CtrVariant {
    /// Measure both on the first large CTR buffer and keep the faster (keystream until then).
    #[default]
    Auto,
    /// Data to the GPU, ciphertext back: two bus crossings per byte.
    Fused,
    /// The GPU makes keystream only; the host XORs it in: one bus crossing per byte.
    Keystream,
}

impl CtrVariant {
    /// Every variant, in the order of [`CtrVariant::name`]'s list.
    pub const ALL: [CtrVariant; 3] = [CtrVariant::Auto, CtrVariant::Fused, CtrVariant::Keystream];

    /// `auto`, `fused` or `keystream`.
    pub fn name(self) -> &'static str {
        match self {
            CtrVariant::Auto => "auto",
            CtrVariant::Fused => "fused",
            CtrVariant::Keystream => "keystream",
        }
    }
}

impl std::fmt::Display for CtrVariant {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for CtrVariant {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        CtrVariant::ALL
            .into_iter()
            .find(|v| v.name().eq_ignore_ascii_case(s))
            .ok_or_else(|| format!("unknown CTR variant {s:?}: expected auto, fused or keystream"))
    }
}

/// The four kernels of kernels/aes.cu (each in an AES-128, -192 and -256 version).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum KernelKind {
    /// `aesN_ecb_encrypt`.
    EcbEncrypt,
    /// `aesN_ecb_decrypt`.
    EcbDecrypt,
    /// `aesN_ctr_fused`: out = in XOR keystream.
    CtrFused,
    /// `aesN_ctr_keystream`: out = keystream.
    CtrKeystream,
}

impl KernelKind {
    /// All four.
    pub const ALL: [KernelKind; 4] = [
        KernelKind::EcbEncrypt,
        KernelKind::EcbDecrypt,
        KernelKind::CtrFused,
        KernelKind::CtrKeystream,
    ];

    /// The kernel name's suffix, e.g. `ctr_fused`.
    pub fn name(self) -> &'static str {
        match self {
            KernelKind::EcbEncrypt => "ecb_encrypt",
            KernelKind::EcbDecrypt => "ecb_decrypt",
            KernelKind::CtrFused => "ctr_fused",
            KernelKind::CtrKeystream => "ctr_keystream",
        }
    }

    pub(crate) fn index(self) -> usize {
        self as usize
    }

    /// Bytes the kernel moves through device memory per byte of data (read + write).
    pub fn device_bytes_per_byte(self) -> u32 {
        match self {
            KernelKind::CtrKeystream => 1,
            _ => 2,
        }
    }
}

/// Which way a timed copy goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CopyDirection {
    /// Pinned host memory to device memory.
    HostToDevice,
    /// Device memory to pinned host memory.
    DeviceToHost,
    /// Device memory to device memory (counts read + write when turned into bandwidth).
    DeviceToDevice,
}

/// Settings of a [`GpuEngine`]. The sizes are parameters, not tuned constants: nothing
/// was measured when they were chosen (docs/GPU.md); the device benchmark reports what to
/// set them to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GpuOptions {
    /// CUDA device ordinal.
    pub device: usize,
    /// How CTR uses the GPU.
    pub ctr_variant: CtrVariant,
    /// CUDA streams (and pinned/device buffer pairs) the pieces rotate over; 1..=8, 3 by default.
    pub streams: usize,
    /// Largest piece, and the size of each stream's buffers (default 8 MiB).
    pub max_piece: usize,
    /// Smallest piece a buffer is cut into (default 256 KiB).
    pub min_piece: usize,
    /// Threads per thread block (32..=512, a multiple of 32; default 256).
    pub threads_per_block: u32,
    /// Buffers shorter than this run on the host instead (0, the default: never). For the
    /// measured CPU/GPU crossover, once the device benchmark has found it.
    pub cpu_below: usize,
    /// Host threads for the keystream XOR and the staging copies (`None`: all cores).
    pub host_threads: Option<usize>,
    /// Bytes timed per variant when `Auto` calibrates (default 16 MiB): CTR buffers of at
    /// least twice this much calibrate; smaller ones use the keystream variant until then.
    pub calibrate_bytes: usize,
    /// Which kernels of kernels/aes.cu run (default `Base`; the others are to A/B on a GPU).
    pub kernel_variant: KernelVariant,
    /// How the host waits for each piece (default `Spin`, the driver's default).
    pub sync: SyncMode,
    /// Which kernel image to load (default: the cubin for the GPU, else the PTX).
    pub image: ImageChoice,
}

impl Default for GpuOptions {
    fn default() -> Self {
        GpuOptions {
            device: 0,
            ctr_variant: CtrVariant::Auto,
            streams: 3,
            max_piece: 8 << 20,
            min_piece: 256 << 10,
            threads_per_block: 256,
            cpu_below: 0,
            host_threads: None,
            calibrate_bytes: 16 << 20,
            kernel_variant: KernelVariant::Base,
            sync: SyncMode::Spin,
            image: ImageChoice::Auto,
        }
    }
}

/// The environment variables [`GpuOptions::with_env`] reads, with what each sets.
pub const ENV_OVERRIDES: [(&str, &str); 6] = [
    (
        "PARAES_GPU_KERNEL",
        "kernel variant: base, pair, r1, pair-r1, lb5",
    ),
    ("PARAES_GPU_SYNC", "spin or blocking"),
    ("PARAES_GPU_IMAGE", "auto (cubin for sm_8x/sm_9x) or ptx"),
    ("PARAES_GPU_STREAMS", "CUDA streams, 1..=8"),
    (
        "PARAES_GPU_PIECE",
        "largest piece in bytes (each stream's buffers)",
    ),
    ("PARAES_GPU_THREADS", "threads per block"),
];

impl GpuOptions {
    /// These options with the `PARAES_GPU_*` environment variables of [`ENV_OVERRIDES`]
    /// applied (those set and non-empty): a way to A/B the engine's settings through the
    /// `paraes` tool itself, which has no flag for each. [`GpuEngine::new`] applies them, and
    /// the engine's name reports the settings in force.
    pub fn with_env(mut self) -> Result<GpuOptions, GpuError> {
        fn var(name: &str) -> Option<String> {
            std::env::var(name).ok().filter(|v| !v.is_empty())
        }
        fn parse<T: FromStr>(name: &str, value: &str) -> Result<T, GpuError>
        where
            T::Err: std::fmt::Display,
        {
            value
                .parse()
                .map_err(|e| GpuError::BadOption(format!("{name}={value:?}: {e}")))
        }
        if let Some(v) = var("PARAES_GPU_KERNEL") {
            self.kernel_variant = parse("PARAES_GPU_KERNEL", &v)?;
        }
        if let Some(v) = var("PARAES_GPU_SYNC") {
            self.sync = parse("PARAES_GPU_SYNC", &v)?;
        }
        if let Some(v) = var("PARAES_GPU_IMAGE") {
            self.image = parse("PARAES_GPU_IMAGE", &v)?;
        }
        if let Some(v) = var("PARAES_GPU_STREAMS") {
            self.streams = parse("PARAES_GPU_STREAMS", &v)?;
        }
        if let Some(v) = var("PARAES_GPU_PIECE") {
            self.max_piece = parse("PARAES_GPU_PIECE", &v)?;
            self.min_piece = self.min_piece.min(self.max_piece);
        }
        if let Some(v) = var("PARAES_GPU_THREADS") {
            self.threads_per_block = parse("PARAES_GPU_THREADS", &v)?;
        }
        Ok(self)
    }

    fn check(&self) -> Result<(), GpuError> {
        if !(1..=8).contains(&self.streams) {
            return Err(GpuError::BadOption(format!(
                "streams must be 1..=8, not {}",
                self.streams
            )));
        }
        let t = self.threads_per_block;
        if !(32..=crate::MAX_THREADS_PER_BLOCK).contains(&t) || !t.is_multiple_of(32) {
            return Err(GpuError::BadOption(format!(
                "threads per block must be a multiple of 32 in 32..={}, not {t}",
                crate::MAX_THREADS_PER_BLOCK
            )));
        }
        if self.max_piece < 16 || self.min_piece > self.max_piece {
            return Err(GpuError::BadOption(format!(
                "need 16 <= min_piece <= max_piece, got {} and {}",
                self.min_piece, self.max_piece
            )));
        }
        if self.kernel_variant == KernelVariant::Lb5 && t > 256 {
            return Err(GpuError::BadOption(format!(
                "kernel variant lb5 runs at most 256 threads per block, not {t}"
            )));
        }
        if self.host_threads == Some(0) {
            return Err(GpuError::BadOption(
                "host threads must be at least 1".into(),
            ));
        }
        Ok(())
    }
}

/// One stream's share of the pipeline.
struct Slot {
    stream: Stream,
    /// With [`SyncMode::Blocking`]: recorded after each piece and waited on (sleeping).
    done: Option<Event>,
    host: PinnedBuffer,
    dev: DeviceBuffer,
    /// The piece in flight: its place in the body and whether it comes back as keystream.
    pending: Option<(Range<usize>, bool)>,
}

impl Slot {
    /// Waits for the piece in flight, if any, and puts its bytes into `body`.
    fn finish(&mut self, pool: &rayon::ThreadPool, body: &mut [u8]) -> Result<(), GpuError> {
        if let Some((range, keystream)) = self.pending.take() {
            match &self.done {
                Some(done) => done.synchronize()?,
                None => self.stream.synchronize()?,
            }
            let len = range.len();
            let host = &self.host.as_mut_slice()[..len];
            if keystream {
                par_xor_into(pool, &mut body[range], host);
            } else {
                par_copy(pool, &mut body[range], host);
            }
        }
        Ok(())
    }
}

/// Values of [`GpuEngine`]'s resolved CTR variant.
const UNDECIDED: u8 = 0;
const FUSED: u8 = 1;
const KEYSTREAM: u8 = 2;

/// AES on a CUDA GPU; byte-identical to the CPU engine. Calls from several threads are
/// served one at a time (one pipeline per engine).
pub struct GpuEngine {
    device: Arc<Device>,
    options: GpuOptions,
    /// The kernels of the chosen variant, per [key size][kernel kind].
    kernels: [[Kernel; 4]; 3],
    /// Grid size that fills the GPU, per [key size][kernel kind].
    full_grid: [[u32; 4]; 3],
    slots: Mutex<Vec<Slot>>,
    pool: rayon::ThreadPool,
    resolved: AtomicU8,
    host_aes: Implementation,
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
        let mut full_grid = [[1u32; 4]; 3];
        let mut kernels = Vec::new();
        for (size, grids) in full_grid.iter_mut().enumerate() {
            let mut row = Vec::new();
            for kind in KernelKind::ALL {
                let kernel = device.kernel(10 + 2 * size, kind, options.kernel_variant)?;
                let resident = device.resident_per_sm(&kernel, options.threads_per_block)?;
                grids[kind.index()] = device.info.sms.max(1) * resident;
                row.push(kernel);
            }
            kernels.push(<[Kernel; 4]>::try_from(row).expect("four kinds"));
        }
        let kernels = <[[Kernel; 4]; 3]>::try_from(kernels).unwrap_or_else(|_| unreachable!());
        let threads = options
            .host_threads
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .thread_name(|i| format!("paraes-gpu-host-{i}"))
            .build()
            .map_err(|e| {
                GpuError::BadOption(format!("could not start {threads} host threads: {e}"))
            })?;
        let resolved = match options.ctr_variant {
            CtrVariant::Auto => UNDECIDED,
            CtrVariant::Fused => FUSED,
            CtrVariant::Keystream => KEYSTREAM,
        };
        Ok(GpuEngine {
            device,
            options,
            kernels,
            full_grid,
            slots: Mutex::new(Vec::new()),
            pool,
            resolved: AtomicU8::new(resolved),
            host_aes: Implementation::detect(),
        })
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

    fn kernel(&self, rounds: usize, kind: KernelKind) -> Kernel {
        self.kernels[(rounds - 10) / 2][kind.index()]
    }

    /// The CTR variant in use: `Auto` until `Auto` has calibrated, then the winner.
    pub fn ctr_variant(&self) -> CtrVariant {
        match self.resolved.load(Ordering::Relaxed) {
            FUSED => CtrVariant::Fused,
            KEYSTREAM => CtrVariant::Keystream,
            _ => CtrVariant::Auto,
        }
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
        self.body(job, variant, first_block, &mut buf[split.body])
            .map_err(EngineError::from)
    }

    /// Whole blocks through the GPU.
    fn body(
        &self,
        job: &Job<'_>,
        variant: CtrVariant,
        first_block: u64,
        body: &mut [u8],
    ) -> Result<(), GpuError> {
        let (kind, keys) = match (job.mode, job.direction) {
            (Mode::Ecb, Direction::Encrypt) => (KernelKind::EcbEncrypt, job.key.enc_round_keys()),
            (Mode::Ecb, Direction::Decrypt) => (KernelKind::EcbDecrypt, job.key.dec_round_keys()),
            (Mode::Ctr, _) => (KernelKind::CtrKeystream, job.key.enc_round_keys()),
        };
        let mut words = RoundKeyWords::new(keys);
        let rounds = job.key.rounds();
        let mut slots = self.slots.lock().unwrap_or_else(|p| p.into_inner());
        let result = (|| {
            if kind != KernelKind::CtrKeystream {
                return self.pipeline(&mut slots, kind, &words, rounds, &job.iv, first_block, body);
            }
            let chosen = match variant {
                CtrVariant::Fused => FUSED,
                CtrVariant::Keystream => KEYSTREAM,
                CtrVariant::Auto => self.resolved.load(Ordering::Relaxed),
            };
            let ctr_kind = |v| {
                if v == FUSED {
                    KernelKind::CtrFused
                } else {
                    KernelKind::CtrKeystream
                }
            };
            let calibrate = self.options.calibrate_bytes.max(16) / 16 * 16;
            if chosen != UNDECIDED || body.len() < 2 * calibrate {
                let v = if chosen == UNDECIDED {
                    KEYSTREAM
                } else {
                    chosen
                };
                return self.pipeline(
                    &mut slots,
                    ctr_kind(v),
                    &words,
                    rounds,
                    &job.iv,
                    first_block,
                    body,
                );
            }
            // Auto, first large buffer: time each variant on real work, keep the faster.
            // A warm-up piece first, so that neither timing pays for buffer allocation.
            let warm = self.options.min_piece.max(16) / 16 * 16;
            let (warm_part, rest) = body.split_at_mut(warm.min(body.len() - 2 * calibrate));
            self.pipeline(
                &mut slots,
                KernelKind::CtrKeystream,
                &words,
                rounds,
                &job.iv,
                first_block,
                warm_part,
            )?;
            let mut block = first_block + (warm_part.len() / 16) as u64;
            let (a, rest) = rest.split_at_mut(calibrate);
            let (b, rest) = rest.split_at_mut(calibrate);
            let mut seconds = [0f64; 2];
            for (i, (part, v)) in [(a, KEYSTREAM), (b, FUSED)].into_iter().enumerate() {
                let start = Instant::now();
                self.pipeline(
                    &mut slots,
                    ctr_kind(v),
                    &words,
                    rounds,
                    &job.iv,
                    block,
                    part,
                )?;
                seconds[i] = start.elapsed().as_secs_f64();
                block += (part.len() / 16) as u64;
            }
            let winner = if seconds[1] < seconds[0] {
                FUSED
            } else {
                KEYSTREAM
            };
            self.resolved.store(winner, Ordering::Relaxed);
            self.pipeline(
                &mut slots,
                ctr_kind(winner),
                &words,
                rounds,
                &job.iv,
                block,
                rest,
            )
        })();
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

    /// Streams `body` (whole blocks; stream block `first_block` first) through `kind`.
    #[allow(clippy::too_many_arguments)]
    fn pipeline(
        &self,
        slots: &mut Vec<Slot>,
        kind: KernelKind,
        keys: &RoundKeyWords,
        rounds: usize,
        iv: &[u8; 16],
        first_block: u64,
        body: &mut [u8],
    ) -> Result<(), GpuError> {
        if body.is_empty() {
            return Ok(());
        }
        self.device.bind()?;
        let o = &self.options;
        let piece = plan::piece_len(body.len(), o.streams, o.min_piece, o.max_piece);
        let capacity = (o.max_piece / 16 * 16).max(16);
        while slots.len() < o.streams {
            slots.push(Slot {
                stream: Stream::new(&self.device)?,
                done: match o.sync {
                    SyncMode::Blocking => Some(Event::blocking(&self.device)?),
                    SyncMode::Spin => None,
                },
                host: PinnedBuffer::new(&self.device, capacity)?,
                dev: DeviceBuffer::new(&self.device, capacity)?,
                pending: None,
            });
        }
        let kernel = self.kernel(rounds, kind);
        let full_grid = self.full_grid[(rounds - 10) / 2][kind.index()];
        let n = slots.len();
        let mut next = 0;
        for (i, start) in (0..body.len()).step_by(piece).enumerate() {
            let slot = &mut slots[i % n];
            slot.finish(&self.pool, body)?;
            let range = start..(start + piece).min(body.len());
            let len = range.len();
            let nblocks = (len / 16) as u64;
            let counter = plan::counter_halves(iv, first_block + (start / 16) as u64);
            let grid = plan::grid_size(
                nblocks,
                o.threads_per_block,
                crate::BLOCKS_PER_THREAD,
                full_grid,
                1,
            );
            let keystream = kind == KernelKind::CtrKeystream;
            let input = if keystream {
                0
            } else {
                par_copy(
                    &self.pool,
                    &mut slot.host.as_mut_slice()[..len],
                    &body[range.clone()],
                );
                slot.stream.copy_to_device(&slot.dev, 0, &slot.host, len)?;
                slot.dev.ptr
            };
            self.device.launch(
                &kernel,
                grid,
                o.threads_per_block,
                &slot.stream,
                input,
                slot.dev.ptr,
                nblocks,
                counter,
                keys,
            )?;
            slot.stream.copy_to_host(&slot.host, &slot.dev, len)?;
            if let Some(done) = &slot.done {
                slot.stream.record(done)?;
            }
            slot.pending = Some((range, keystream));
            next = (i + 1) % n;
        }
        for k in 0..n {
            slots[(next + k) % n].finish(&self.pool, body)?;
        }
        Ok(())
    }

    /// Kernel-only timing with the engine's variant and threads per block: seconds per
    /// launch (see [`GpuEngine::time_kernel_with`]).
    pub fn time_kernel(
        &self,
        key: &ExpandedKey,
        kind: KernelKind,
        bytes: usize,
        reps: usize,
    ) -> Result<Vec<f64>, GpuError> {
        let o = &self.options;
        self.time_kernel_with(
            key,
            kind,
            o.kernel_variant,
            o.threads_per_block,
            bytes,
            reps,
        )
        .map(|t| t.seconds)
    }

    /// Kernel-only timing of any variant at any block size: `reps` launches of `kind` for
    /// `key` over `bytes` bytes in device memory (separate input and output), each timed
    /// with CUDA events after two warm-up launches, on a grid that fills the GPU.
    pub fn time_kernel_with(
        &self,
        key: &ExpandedKey,
        kind: KernelKind,
        variant: KernelVariant,
        threads: u32,
        bytes: usize,
        reps: usize,
    ) -> Result<KernelTiming, GpuError> {
        self.timed(|| {
            let rounds = key.rounds();
            let kernel = self.device.kernel(rounds, kind, variant)?;
            if threads > kernel.max_threads || threads == 0 || !threads.is_multiple_of(32) {
                return Err(GpuError::BadOption(format!(
                    "{variant} {} runs 32..={} threads per block in steps of 32, not {threads}",
                    kind.name(),
                    kernel.max_threads
                )));
            }
            let resident = self.device.resident_per_sm(&kernel, threads)?;
            let registers = self.device.registers(&kernel)?;
            let bytes = (bytes / 16 * 16).max(16);
            let input = self.device_random(bytes)?;
            let output = DeviceBuffer::new(&self.device, bytes)?;
            let keys = match kind {
                KernelKind::EcbDecrypt => key.dec_round_keys(),
                _ => key.enc_round_keys(),
            };
            let mut words = RoundKeyWords::new(keys);
            let nblocks = (bytes / 16) as u64;
            let grid = plan::grid_size(
                nblocks,
                threads,
                crate::BLOCKS_PER_THREAD,
                self.device.info.sms.max(1) * resident,
                1,
            );
            let stream = Stream::new(&self.device)?;
            let (start, end) = (Event::new(&self.device)?, Event::new(&self.device)?);
            let mut seconds = Vec::with_capacity(reps);
            for rep in 0..reps + 2 {
                stream.record(&start)?;
                self.device.launch(
                    &kernel,
                    grid,
                    threads,
                    &stream,
                    input.ptr,
                    output.ptr,
                    nblocks,
                    (rep as u64, 0),
                    &words,
                )?;
                stream.record(&end)?;
                let t = start.seconds_until(&end)?;
                if rep >= 2 {
                    seconds.push(t);
                }
            }
            words.wipe();
            stream.synchronize()?;
            Ok(KernelTiming {
                kernel: variant.kernel_name(128 + 32 * (rounds - 10), kind),
                registers,
                resident_per_sm: resident,
                grid,
                threads,
                seconds,
            })
        })
    }

    /// Simultaneous copy timing: `bytes` host-to-device on one stream while `bytes` go
    /// device-to-host on another (pinned memory), `reps` times after one warm-up. Seconds
    /// from the start of both to the end of the later; bandwidth = 2 * bytes / seconds.
    pub fn time_copy_both_ways(&self, bytes: usize, reps: usize) -> Result<Vec<f64>, GpuError> {
        self.timed(|| {
            let up_dst = DeviceBuffer::new(&self.device, bytes)?;
            let down_src = self.device_random(bytes)?;
            let up_src = PinnedBuffer::new(&self.device, bytes)?;
            let down_dst = PinnedBuffer::new(&self.device, bytes)?;
            let (a, b) = (Stream::new(&self.device)?, Stream::new(&self.device)?);
            let start = Event::new(&self.device)?;
            let (b_done, end) = (Event::new(&self.device)?, Event::new(&self.device)?);
            let mut times = Vec::with_capacity(reps);
            for rep in 0..reps + 1 {
                a.record(&start)?;
                b.wait(&start)?;
                a.copy_to_device(&up_dst, 0, &up_src, bytes)?;
                b.copy_to_host(&down_dst, &down_src, bytes)?;
                b.record(&b_done)?;
                a.wait(&b_done)?;
                a.record(&end)?;
                let t = start.seconds_until(&end)?;
                if rep >= 1 {
                    times.push(t);
                }
            }
            a.synchronize()?;
            b.synchronize()?;
            Ok(times)
        })
    }

    /// Copy timing: `reps` copies of `bytes` bytes in `direction` (pinned host memory),
    /// each timed with CUDA events after one warm-up copy. Seconds per copy.
    pub fn time_copy(
        &self,
        direction: CopyDirection,
        bytes: usize,
        reps: usize,
    ) -> Result<Vec<f64>, GpuError> {
        self.timed(|| {
            let a = self.device_random(bytes)?;
            let b = DeviceBuffer::new(&self.device, bytes)?;
            let host = PinnedBuffer::new(&self.device, bytes)?;
            let stream = Stream::new(&self.device)?;
            let (start, end) = (Event::new(&self.device)?, Event::new(&self.device)?);
            let mut times = Vec::with_capacity(reps);
            for rep in 0..reps + 1 {
                stream.record(&start)?;
                match direction {
                    CopyDirection::HostToDevice => stream.copy_to_device(&b, 0, &host, bytes)?,
                    CopyDirection::DeviceToHost => stream.copy_to_host(&host, &a, bytes)?,
                    CopyDirection::DeviceToDevice => stream.copy_on_device(&b, &a, bytes)?,
                }
                stream.record(&end)?;
                let t = start.seconds_until(&end)?;
                if rep >= 1 {
                    times.push(t);
                }
            }
            stream.synchronize()?;
            Ok(times)
        })
    }

    /// Runs `f` with the context bound, under the panic guard.
    fn timed<T>(&self, f: impl FnOnce() -> Result<T, GpuError>) -> Result<T, GpuError> {
        self.device.bind()?;
        crate::driver::guard("timing on the GPU", f)
    }

    /// `bytes` of device memory filled with pseudo-random data (never time on zeros).
    fn device_random(&self, bytes: usize) -> Result<DeviceBuffer, GpuError> {
        let buffer = DeviceBuffer::new(&self.device, bytes)?;
        let staging_len = bytes.clamp(16, 64 << 20);
        let mut staging = PinnedBuffer::new(&self.device, staging_len)?;
        SplitMix64::new(0x2545_f491_4f6c_dd1d).fill(staging.as_mut_slice());
        let stream = Stream::new(&self.device)?;
        let mut at = 0;
        while at < bytes {
            let len = staging_len.min(bytes - at);
            stream.copy_to_device(&buffer, at, &staging, len)?;
            stream.synchronize()?;
            at += len;
        }
        Ok(buffer)
    }
}

/// What [`GpuEngine::time_kernel_with`] measured, with the launch shape.
#[derive(Clone, Debug, PartialEq)]
pub struct KernelTiming {
    /// Entry point in kernels/aes.cu.
    pub kernel: String,
    /// Registers per thread.
    pub registers: u32,
    /// Thread blocks resident per SM at this block size.
    pub resident_per_sm: u32,
    /// Thread blocks launched.
    pub grid: u32,
    /// Threads per block.
    pub threads: u32,
    /// Seconds per launch.
    pub seconds: Vec<f64>,
}

impl Engine for GpuEngine {
    fn name(&self) -> String {
        let o = &self.options;
        format!(
            "gpu ({}, {}, kernels {}, CTR {}, {} streams x {} MiB, {} threads/block, {} sync)",
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
}
