//! The CUDA driver layer, where the crate's driver calls live: finding the driver without
//! panicking ([`load_driver`], [`probe`]), and the GPU types the engine works with: [`Device`]
//! (one context and one loaded module per device, cached for the process), [`Kernel`] (a
//! launch that checks its operands), [`Stream`], [`Event`], [`DeviceBuffer`] and
//! [`PinnedBuffer`].
//!
//! Streams, events, device memory and pinned host memory are cudarc's safe types
//! (`CudaContext`, `CudaStream`, `CudaEvent`, `CudaSlice`, `PinnedHostSlice`), so their
//! safety is in their types, not in the callers: a buffer holds its stream and context alive;
//! cudarc records an event after every copy or launch that uses a buffer, makes later work
//! on any stream wait for it, and waits for it before memory is freed or pinned memory is
//! read by the host. Raw driver calls remain where cudarc 0.19's safe layer cannot serve,
//! each with its reason: the probe (no context may be made just to ask), the module load
//! (cudarc's `load_module` takes no JIT options, so no logs and no wall time), and, since a
//! module loaded that way cannot become a `CudaModule`, the kernel lookups, attributes,
//! occupancy queries and the launch itself (its operands checked first: [`Kernel::launch`]).
//! docs/GPU.md lists every driver entry point and which side calls it.
//!
//! cudarc loads `libcuda.so.1` on its first driver call and panics if it cannot; so before
//! any call, [`load_driver`] asks cudarc's `is_culib_present` (a plain dlopen attempt) and
//! returns [`GpuError::NoDriver`] instead. Every entry point also runs under
//! `catch_unwind`, so a panic inside the bindings (a symbol missing from an ancient driver,
//! a bug) becomes [`GpuError::Internal`]: an error that surfaces, never "no GPU here".

mod device;
mod memory;

use std::ffi::{c_void, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::OnceLock;

use cudarc::driver::{result, sys};

use crate::error::GpuError;

pub(crate) use device::{Device, GcmKeys, Kernel, Launch, Operands, RecordsKind, RecordsLaunch};
pub(crate) use memory::{DeviceBuffer, Event, PinnedBuffer, Stream};

/// What the driver says about a GPU, for `--backend auto`, logs and benchmark records.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceInfo {
    /// Device ordinal.
    pub ordinal: usize,
    /// Marketing name, e.g. `NVIDIA H100 80GB HBM3`.
    pub name: String,
    /// Compute capability (major, minor), e.g. (9, 0).
    pub compute_capability: (u32, u32),
    /// Streaming multiprocessors.
    pub sms: u32,
    /// Device memory in bytes.
    pub total_memory: u64,
    /// Shared memory per SM in bytes.
    pub shared_memory_per_sm: u32,
    /// Resident threads per SM at most.
    pub max_threads_per_sm: u32,
    /// Driver API version, e.g. 12080 for CUDA 12.8.
    pub driver_version: u32,
    /// Peak SM clock in kHz (`CU_DEVICE_ATTRIBUTE_CLOCK_RATE`; the clock under load may be
    /// lower: read `nvidia-smi dmon` beside a measurement).
    pub sm_clock_khz: u32,
    /// Devices the driver sees.
    pub device_count: usize,
}

impl DeviceInfo {
    /// True on the CUDA stand-in of the tests ([`STANDIN_ENV`]): nothing measured on it is a
    /// GPU figure.
    pub fn is_standin(&self) -> bool {
        self.name == STANDIN_NAME
    }

    /// The driver's CUDA version as `12.4`.
    pub fn driver_cuda(&self) -> String {
        format!(
            "{}.{}",
            self.driver_version / 1000,
            self.driver_version % 1000 / 10
        )
    }
}

impl std::fmt::Display for DeviceInfo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} (sm_{}{}, {} SMs, {:.0} GiB, driver CUDA {})",
            self.name,
            self.compute_capability.0,
            self.compute_capability.1,
            self.sms,
            self.total_memory as f64 / (1u64 << 30) as f64,
            self.driver_cuda()
        )
    }
}

/// Runs `f`, turning a panic inside the CUDA bindings into [`GpuError::Internal`] (which
/// `--backend auto` reports instead of quietly using the CPU).
pub(crate) fn guard<T>(what: &str, f: impl FnOnce() -> Result<T, GpuError>) -> Result<T, GpuError> {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(result) => result,
        Err(panic) => {
            let message = panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            Err(GpuError::Internal(format!(
                "{what} (a panic in the CUDA bindings: {message})"
            )))
        }
    }
}

/// True when `PARAES_NO_GPU` is set to something other than empty or `0`.
fn disabled_by_env() -> bool {
    std::env::var_os("PARAES_NO_GPU").is_some_and(|v| !v.is_empty() && v != "0")
}

/// The environment variable that names a CUDA stand-in library to load instead of the NVIDIA
/// driver: a test double that runs kernels/aes.cu on the CPU (kernels/emulate/cuda-standin.cpp,
/// built by the tests). Only the tests set it; nothing sets it on its own.
pub const STANDIN_ENV: &str = "PARAES_CUDA_STANDIN";

/// The device name the stand-in reports, so every engine name, timing line and JSON made on it
/// says what it is.
pub const STANDIN_NAME: &str = "CUDA stand-in (not a GPU)";

/// True when a CUDA driver library (`libcuda.so`, `libcuda.so.1`, ...) can be loaded here: a
/// dlopen attempt, nothing cached (the tests ask this before they choose the stand-in).
pub fn driver_installed() -> bool {
    // SAFETY: is_culib_present only tries dlopen on the driver's library names and drops what
    // it opened; it runs no driver code besides library constructors.
    unsafe { sys::is_culib_present() }
}

#[cfg(unix)]
extern "C" {
    fn dlopen(filename: *const std::ffi::c_char, flag: std::ffi::c_int) -> *mut c_void;
    fn dlerror() -> *mut std::ffi::c_char;
}

/// Loads the stand-in named by [`STANDIN_ENV`] and keeps it loaded. Its SONAME is
/// `libcuda.so`, the first name cudarc asks dlopen for, and dlopen answers a bare name with an
/// already loaded library of that SONAME: so every driver call then goes to the stand-in.
#[cfg(unix)]
fn load_standin(path: &std::ffi::OsStr) -> Result<(), GpuError> {
    use std::os::unix::ffi::OsStrExt;
    let failed = |why: String| {
        GpuError::Driver(format!(
            "loading the CUDA stand-in {} named by {STANDIN_ENV}: {why}; unset {STANDIN_ENV} or \
             rebuild the stand-in",
            path.to_string_lossy()
        ))
    };
    let cpath = CString::new(path.as_bytes()).map_err(|e| failed(e.to_string()))?;
    const RTLD_NOW: std::ffi::c_int = 2;
    // SAFETY: `cpath` is a NUL-terminated path that outlives the call; the handle is never
    // closed, so the library stays loaded for the life of the process.
    let handle = unsafe { dlopen(cpath.as_ptr(), RTLD_NOW) };
    if handle.is_null() {
        // SAFETY: dlerror returns null or a NUL-terminated message owned by the C library,
        // read at once on this thread.
        let why = unsafe {
            let e = dlerror();
            if e.is_null() {
                "dlopen failed".to_owned()
            } else {
                std::ffi::CStr::from_ptr(e).to_string_lossy().into_owned()
            }
        };
        return Err(failed(why));
    }
    Ok(())
}

#[cfg(not(unix))]
fn load_standin(_path: &std::ffi::OsStr) -> Result<(), GpuError> {
    Err(GpuError::Driver(format!(
        "{STANDIN_ENV} is set, but the CUDA stand-in runs on Unix only: unset it"
    )))
}

/// Loads and initialises the driver once per process; never panics. Where [`STANDIN_ENV`]
/// names a library, that stand-in is loaded first and answers every driver call.
pub(crate) fn load_driver() -> Result<(), GpuError> {
    if disabled_by_env() {
        return Err(GpuError::Disabled);
    }
    static DRIVER: OnceLock<Result<(), GpuError>> = OnceLock::new();
    DRIVER
        .get_or_init(|| {
            guard("loading the CUDA driver", || {
                if let Some(path) = std::env::var_os(STANDIN_ENV).filter(|p| !p.is_empty()) {
                    load_standin(&path)?;
                }
                // SAFETY: is_culib_present only tries dlopen on the driver's library names and
                // drops what it opened; it runs no driver code besides library constructors.
                if !unsafe { sys::is_culib_present() } {
                    return Err(GpuError::NoDriver);
                }
                result::init().map_err(|e| GpuError::driver("initialising the CUDA driver", e))
            })
        })
        .clone()
}

/// Information about device `ordinal` without creating a context: cheap enough for
/// `--backend auto` (driver load and init, a few attribute queries).
pub fn probe_device(ordinal: usize) -> Result<DeviceInfo, GpuError> {
    load_driver()?;
    guard("querying the GPU", || {
        let count =
            result::device::get_count().map_err(|e| GpuError::driver("counting devices", e))?;
        let count = count.max(0) as usize;
        if count == 0 {
            return Err(GpuError::NoDevice("the driver sees no device".into()));
        }
        if ordinal >= count {
            return Err(GpuError::BadDevice {
                device: ordinal,
                count,
            });
        }
        let dev = result::device::get(ordinal as i32)
            .map_err(|e| GpuError::driver("opening the device", e))?;
        let attr = |a: sys::CUdevice_attribute| -> Result<u32, GpuError> {
            // SAFETY: `dev` came from cuDeviceGet above; the attribute is a valid enum value.
            unsafe { result::device::get_attribute(dev, a) }
                .map(|v| v.max(0) as u32)
                .map_err(|e| GpuError::driver("querying a device attribute", e))
        };
        use sys::CUdevice_attribute::*;
        let name = result::device::get_name(dev)
            .map_err(|e| GpuError::driver("querying the device name", e))?;
        // SAFETY: `dev` came from cuDeviceGet.
        let total = unsafe { result::device::total_mem(dev) }
            .map_err(|e| GpuError::driver("querying device memory", e))?;
        let mut version = 0i32;
        // SAFETY: cuDriverGetVersion writes one int through a valid pointer.
        unsafe { sys::cuDriverGetVersion(&mut version) }
            .result()
            .map_err(|e| GpuError::driver("querying the driver version", e))?;
        Ok(DeviceInfo {
            ordinal,
            name,
            compute_capability: (
                attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)?,
                attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)?,
            ),
            sms: attr(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)?,
            total_memory: total as u64,
            shared_memory_per_sm: attr(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR)?,
            max_threads_per_sm: attr(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR)?,
            driver_version: version.max(0) as u32,
            sm_clock_khz: attr(CU_DEVICE_ATTRIBUTE_CLOCK_RATE)?,
            device_count: count,
        })
    })
}

/// Information about device 0 (see [`probe_device`]). `Err` means "no usable GPU here";
/// its message says why and what to do.
pub fn probe() -> Result<DeviceInfo, GpuError> {
    probe_device(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panic_in_the_bindings_is_an_internal_error_not_unavailable() {
        let error = guard("testing the guard", || -> Result<(), GpuError> {
            panic!("symbol cuFoo not found")
        })
        .unwrap_err();
        assert!(matches!(error, GpuError::Internal(_)), "{error:?}");
        assert!(!error.is_unavailable());
        let text = error.to_string();
        assert!(
            text.contains("testing the guard") && text.contains("cuFoo"),
            "{text}"
        );
        assert!(matches!(
            paraes_core::EngineError::from(error),
            paraes_core::EngineError::Device { .. }
        ));
        // A formatted panic message (String payload) is kept too.
        let n = 7;
        let error = guard("x", || -> Result<(), GpuError> { panic!("code {n}") }).unwrap_err();
        assert!(error.to_string().contains("code 7"));
        // No panic: the closure's own result passes through unchanged.
        assert_eq!(
            guard("x", || Err::<(), _>(GpuError::NoDriver)),
            Err(GpuError::NoDriver)
        );
    }
}
