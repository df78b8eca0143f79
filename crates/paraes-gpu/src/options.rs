//! What a [`crate::GpuEngine`] can be asked to do: its settings, the CTR variant, and the
//! `PARAES_GPU_*` environment overrides.

use std::str::FromStr;

use crate::error::GpuError;
use crate::image::ImageChoice;
use crate::variant::{KernelVariant, SyncMode};

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
    /// `paraes` tool itself, which has no flag for each. [`crate::GpuEngine::new`] applies them, and
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

    /// Refuses settings the engine cannot run with.
    pub(crate) fn check(&self) -> Result<(), GpuError> {
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
