//! paraes-gpu: the CUDA GPU engine of paraes, the AES kernels of kernels/aes.cu (the sm_80 or
//! sm_90 cubin, or the PTX on other GPUs) driven through cudarc's run-time-loaded driver API.
//!
//! One `cargo build` serves every machine: the CUDA driver (`libcuda.so.1`) is looked for
//! at run time, before the first driver call, so on a machine without a driver or a device
//! [`probe`] and [`GpuEngine::new`] return a one-line [`GpuError`] and nothing panics.
//!
//! * [`GpuEngine`] implements [`paraes_core::Engine`], byte-identical to the CPU engine.
//! * [`probe`] says cheaply whether a usable GPU is there (for `--backend auto`).
//! * [`device_memory`]: device memory as an API: Cobblestone chunk records sealed and opened
//!   in device memory ([`DeviceMemory`], [`GpuStream`], [`ChunkSpan`]), and v3 container files
//!   decrypted straight into device memory or written from it.
//! * [`model`] is a CPU emulation of the kernel's table layout and round function, tested
//!   against the AES oracle so the kernel's logic is checked even where there is no GPU.
//!
//! docs/GPU.md describes the design, the side-channel discussion and how to benchmark.
#![deny(missing_docs)]

pub mod device_memory;
mod driver;
mod engine;
mod error;
pub mod image;
mod kernels;
pub mod model;
mod options;
pub mod plan;
pub mod variant;
pub mod xor;

pub use device_memory::{ChunkSpan, DeviceMemory, DeviceMemoryError, GpuEvent, GpuStream};
pub use driver::{driver_installed, probe, DeviceInfo, STANDIN_ENV, STANDIN_NAME};
pub use engine::{CopyDirection, GpuEngine, KernelTiming, RecordsStep};
pub use error::GpuError;
pub use image::{ImageChoice, KernelImage, ModuleReport};
pub use kernels::{KernelKind, RECORDS_KERNELS};
pub use options::{CtrVariant, GpuOptions, ENV_OVERRIDES};
pub use variant::{KernelVariant, SyncMode};

/// The kernels' PTX, generated from kernels/aes.cu by kernels/build-ptx.sh and committed:
/// what the driver JIT-compiles on GPUs other than compute capability 8.x and 9.x.
pub const PTX: &str = include_str!("../../../kernels/aes.ptx");

/// `include_bytes!` with the bytes 8-byte aligned: the driver reads a cubin in place as ELF
/// structures (8-byte fields), and a misaligned one may be refused, which would cost a PTX JIT.
macro_rules! include_aligned {
    ($path:literal) => {{
        #[repr(C, align(8))]
        struct Aligned<B: ?Sized>(B);
        const ALIGNED: &Aligned<[u8]> = &Aligned(*include_bytes!($path));
        &ALIGNED.0
    }};
}

/// SASS for compute capability 8.x, assembled from [`PTX`] by the pinned ptxas
/// (kernels/build-ptx.sh; kernels/check-ptx.sh checks it is current). 8-byte aligned.
pub const CUBIN_SM80: &[u8] = include_aligned!("../../../kernels/aes.sm_80.cubin");

/// SASS for compute capability 9.x, as [`CUBIN_SM80`].
pub const CUBIN_SM90: &[u8] = include_aligned!("../../../kernels/aes.sm_90.cubin");

/// AES blocks each GPU thread works on per tile (the kernels' `BLOCKS_PER_THREAD`, set in
/// kernels/build-ptx.py; a test checks that the two agree). Used to size the grid.
pub const BLOCKS_PER_THREAD: u32 = 4;

/// The largest thread block the kernels are compiled for (`MAX_THREADS`, `__launch_bounds__`).
pub const MAX_THREADS_PER_BLOCK: u32 = 512;
