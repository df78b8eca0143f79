//! The CUDA driver layer, the crate's only `unsafe`: finding the driver without panicking,
//! one context and one loaded module per device (cached for the process), and small RAII
//! wrappers for streams, events, device memory and pinned host memory.
//!
//! cudarc loads `libcuda.so.1` on its first driver call and panics if it cannot; so before
//! any call, [`load_driver`] asks cudarc's `is_culib_present` (a plain dlopen attempt) and
//! returns [`GpuError::NoDriver`] instead. Every entry point also runs under
//! `catch_unwind`, so a panic inside the bindings (a symbol missing from an ancient driver,
//! a bug) becomes [`GpuError::Internal`]: an error that surfaces, never "no GPU here".

use std::collections::HashMap;
use std::ffi::{c_void, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Arc, Mutex, OnceLock};

use cudarc::driver::{result, sys};

use crate::error::GpuError;
use crate::image::{one_line, ImageChoice, KernelImage, ModuleReport};
use crate::kernels::KernelKind;
use crate::plan::{GcmLayout, RoundKeyWords};
use crate::variant::{dynamic_shared_bytes, max_threads, KernelVariant};

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

/// One kernel of the loaded module, with what a launch needs to know about it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Kernel {
    pub(crate) func: sys::CUfunction,
    /// Dynamic shared memory to pass at launch (PAIR kernels).
    pub(crate) shared_bytes: u32,
    /// The most threads per block it was compiled for.
    pub(crate) max_threads: u32,
    /// Takes GCM chunk counters (a `_gcm` kernel: one parameter more, `GcmLayout`).
    pub(crate) gcm: bool,
}

// SAFETY: a CUfunction handle of a module that is never unloaded may be used from any thread
// with its context current (every launch binds the context first); Kernel is immutable.
unsafe impl Send for Kernel {}
// SAFETY: as above.
unsafe impl Sync for Kernel {}

/// One device: its primary context and one loaded module of the kernels. Made once per
/// (device, image choice) and kept for the life of the process.
pub(crate) struct Device {
    pub(crate) info: DeviceInfo,
    ctx: sys::CUcontext,
    /// Every kernel of the module, by entry-point name; `Err` says why one cannot run here
    /// (a PAIR kernel's shared memory refused).
    kernels: HashMap<String, Result<Kernel, String>>,
    /// What loading the module took and said.
    pub(crate) module: ModuleReport,
}

// SAFETY: CUDA driver handles (contexts, functions) may be used from any thread once the
// context is made current there, which every operation does first (Device::bind).
unsafe impl Send for Device {}
// SAFETY: as above; the handles are immutable after creation.
unsafe impl Sync for Device {}

/// Entry-point names of the embedded PTX (the same in both cubins; image.rs tests that).
fn kernel_names() -> impl Iterator<Item = &'static str> {
    crate::PTX
        .lines()
        .filter_map(|l| l.strip_prefix(".visible .entry "))
        .filter_map(|l| l.split('(').next())
}

/// Loads one image with `cuModuleLoadDataEx`, keeping the JIT's info and error logs and
/// wall time. On failure the error carries the error log.
fn load_module(image: KernelImage) -> Result<(sys::CUmodule, ModuleReport), GpuError> {
    const LOG: usize = 1 << 14;
    let mut info_log = vec![0u8; LOG];
    let mut error_log = vec![0u8; LOG];
    let ptx_with_nul;
    let bytes: &[u8] = match image {
        KernelImage::Ptx => {
            ptx_with_nul = [crate::PTX.as_bytes(), b"\0"].concat();
            &ptx_with_nul
        }
        _ => image.bytes(),
    };
    use sys::CUjit_option::*;
    let mut options = [
        CU_JIT_INFO_LOG_BUFFER,
        CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES,
        CU_JIT_ERROR_LOG_BUFFER,
        CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
        CU_JIT_LOG_VERBOSE,
        CU_JIT_WALL_TIME,
    ];
    // Values are pointer-sized slots: buffers, sizes and flags by value; the driver writes
    // the used log sizes and the wall time (a float in the slot's low bytes) back.
    let mut values: [*mut c_void; 6] = [
        info_log.as_mut_ptr().cast(),
        std::ptr::without_provenance_mut(LOG),
        error_log.as_mut_ptr().cast(),
        std::ptr::without_provenance_mut(LOG),
        std::ptr::without_provenance_mut(1),
        std::ptr::null_mut(),
    ];
    let mut module: sys::CUmodule = std::ptr::null_mut();
    let start = std::time::Instant::now();
    // SAFETY: `bytes` is a cubin or a NUL-terminated PTX that outlives the call (the driver
    // copies what it needs); the option arrays have the same length, the log buffers hold
    // LOG bytes as their size slots say and outlive the call; the context is current.
    let loaded = unsafe {
        sys::cuModuleLoadDataEx(
            &mut module,
            bytes.as_ptr().cast(),
            options.len() as u32,
            options.as_mut_ptr(),
            values.as_mut_ptr(),
        )
    }
    .result();
    let load_seconds = start.elapsed().as_secs_f64();
    let jit_wall_ms = f32::from_bits(values[5] as usize as u32);
    let info_log = one_line(&info_log, 2000);
    match loaded {
        Ok(()) => Ok((
            module,
            ModuleReport {
                image,
                load_seconds,
                jit_wall_ms: if jit_wall_ms.is_finite() {
                    jit_wall_ms
                } else {
                    0.0
                },
                info_log,
                cubin_refused: None,
            },
        )),
        Err(e) => {
            let log = one_line(&error_log, 2000);
            let log = if log.is_empty() { info_log } else { log };
            let what = format!("loading the AES kernels ({image})");
            Err(GpuError::driver(&what, e).with_log(&log))
        }
    }
}

impl Device {
    /// The device `ordinal` with the image `choice` loaded, opened on first use, then cached.
    pub(crate) fn get(ordinal: usize, choice: ImageChoice) -> Result<Arc<Device>, GpuError> {
        type Cache = Mutex<HashMap<(usize, ImageChoice), Arc<Device>>>;
        static DEVICES: OnceLock<Cache> = OnceLock::new();
        let info = probe_device(ordinal)?;
        if info.compute_capability.0 < 8 {
            return Err(GpuError::Unsupported(format!(
                "{} has compute capability {}.{}, the kernels are built for 8.0 (Ampere) and newer",
                info.name, info.compute_capability.0, info.compute_capability.1
            )));
        }
        let mut devices = DEVICES
            .get_or_init(Default::default)
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some(device) = devices.get(&(ordinal, choice)) {
            return Ok(device.clone());
        }
        let device = guard("loading the AES kernels", || Device::open(info, choice))?;
        let device = Arc::new(device);
        devices.insert((ordinal, choice), device.clone());
        Ok(device)
    }

    fn open(info: DeviceInfo, choice: ImageChoice) -> Result<Device, GpuError> {
        let dev = result::device::get(info.ordinal as i32)
            .map_err(|e| GpuError::driver("opening the device", e))?;
        // SAFETY: `dev` came from cuDeviceGet; the primary context is retained for the life
        // of the process (never released: the device is cached forever).
        let ctx = unsafe { result::primary_ctx::retain(dev) }
            .map_err(|e| GpuError::driver("creating the CUDA context", e))?;
        // SAFETY: `ctx` is the valid context just retained.
        unsafe { result::ctx::set_current(ctx) }
            .map_err(|e| GpuError::driver("binding the CUDA context", e))?;
        let (major, minor) = info.compute_capability;
        let wanted = match choice {
            ImageChoice::Auto => KernelImage::for_capability(major, minor),
            ImageChoice::Ptx => KernelImage::Ptx,
        };
        let (module, report) = match load_module(wanted) {
            Ok(loaded) => loaded,
            // A cubin the driver refuses (not out of memory): the PTX still may load.
            Err(e) if wanted != KernelImage::Ptx && !matches!(e, GpuError::OutOfMemory(_)) => {
                // Loud: the PTX costs a JIT of seconds per cold start, and the cause (an old
                // driver, a damaged image) is worth knowing; the report keeps it too.
                let refused = format!(
                    "{e} (driver CUDA {}; the kernels need R550 / CUDA 12.4 or newer)",
                    info.driver_cuda()
                );
                eprintln!(
                    "paraes-gpu: warning: the driver refused the {wanted}, so the PTX is \
                     JIT-compiled instead (seconds per cold start): {refused}"
                );
                let (module, mut report) = load_module(KernelImage::Ptx)
                    .map_err(|ptx| ptx.with_log(&format!("after the {wanted} failed: {e}")))?;
                report.cubin_refused = Some(refused);
                (module, report)
            }
            Err(e) => return Err(e),
        };
        let mut kernels = HashMap::new();
        for name in kernel_names() {
            let cname = CString::new(name).expect("no NUL in kernel names");
            // SAFETY: `module` was just loaded and is never unloaded.
            let func = unsafe { result::module::get_function(module, cname) }
                .map_err(|e| GpuError::driver("finding an AES kernel in the module", e))?;
            // A hint (the driver may ignore it): prefer shared memory over L1, so that
            // more 32-72 KiB thread blocks fit on an SM. Failure is harmless.
            // SAFETY: `func` is a valid function of the loaded module.
            let _ = unsafe {
                result::function::set_function_attribute(
                    func,
                    sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT,
                    100,
                )
            };
            let shared_bytes = dynamic_shared_bytes(name);
            let usable = if shared_bytes > 0 {
                // More than 48 KiB of dynamic shared memory must be opted into per function.
                // SAFETY: as above; the value is a byte count.
                unsafe {
                    result::function::set_function_attribute(
                        func,
                        sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                        shared_bytes as i32,
                    )
                }
                .map_err(|e| {
                    format!(
                        "{name} needs {} KiB of shared memory per block, which this GPU refuses ({e:?})",
                        shared_bytes >> 10
                    )
                })
            } else {
                Ok(())
            };
            let kernel = usable.map(|()| Kernel {
                func,
                shared_bytes,
                max_threads: max_threads(name),
                gcm: name.ends_with("_gcm"),
            });
            kernels.insert(name.to_string(), kernel);
        }
        Ok(Device {
            info,
            ctx,
            kernels,
            module: report,
        })
    }

    /// Makes the device's context current on the calling thread (every operation does this
    /// first: the pipeline may call from any thread).
    pub(crate) fn bind(&self) -> Result<(), GpuError> {
        // SAFETY: `ctx` is a retained primary context that is never released.
        unsafe { result::ctx::set_current(self.ctx) }
            .map_err(|e| GpuError::driver("binding the CUDA context", e))
    }

    /// The kernel for `rounds` (10, 12, 14), `kind` and `variant`, or why it cannot run here.
    pub(crate) fn kernel(
        &self,
        rounds: usize,
        kind: KernelKind,
        variant: KernelVariant,
    ) -> Result<Kernel, GpuError> {
        // 10, 12, 14 rounds: AES-128, -192, -256.
        let name = variant.kernel_name(128 + 32 * (rounds - 10), kind);
        match self.kernels.get(&name) {
            Some(Ok(kernel)) => Ok(*kernel),
            Some(Err(why)) => Err(GpuError::BadOption(format!(
                "kernel variant {variant}: {why}"
            ))),
            None => Err(GpuError::Internal(format!(
                "looking up kernel {name}: not in the module"
            ))),
        }
    }

    /// Registers per thread of a kernel (`CU_FUNC_ATTRIBUTE_NUM_REGS`).
    pub(crate) fn registers(&self, kernel: &Kernel) -> Result<u32, GpuError> {
        self.bind()?;
        // SAFETY: `func` is a valid function of the loaded module.
        unsafe {
            result::function::get_function_attribute(
                kernel.func,
                sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_NUM_REGS,
            )
        }
        .map(|n| n.max(0) as u32)
        .map_err(|e| GpuError::driver("querying kernel registers", e))
    }

    /// Thread blocks of `threads` threads of `kernel` that fit on one SM at once.
    pub(crate) fn resident_per_sm(&self, kernel: &Kernel, threads: u32) -> Result<u32, GpuError> {
        self.bind()?;
        // SAFETY: `func` is a valid function of the loaded module; the context is current.
        unsafe {
            result::occupancy::max_active_block_per_multiprocessor(
                kernel.func,
                threads as i32,
                kernel.shared_bytes as usize,
            )
        }
        .map(|n| n.max(1) as u32)
        .map_err(|e| GpuError::driver("querying kernel occupancy", e))
    }

    /// Enqueues one kernel launch on `stream`. `counter` is the 128-bit counter of the
    /// launch's block 0 (Stream counters) or, for a `_gcm` kernel, its record and its block
    /// within the record, and `gcm` the nonce and stride, which a `_gcm` kernel needs and no
    /// other takes.
    ///
    /// # Safety
    ///
    /// `output`, and `input` unless the kernel is a keystream kernel (then it may be 0), must
    /// be allocations of this device holding at least `16 * nblocks` bytes that stay
    /// allocated, and are not used by another stream, until `stream` has run the launch: the
    /// kernel reads and writes them with no check the host can see.
    #[allow(clippy::too_many_arguments)]
    pub(crate) unsafe fn launch(
        &self,
        kernel: &Kernel,
        grid: u32,
        threads: u32,
        stream: &Stream,
        input: sys::CUdeviceptr,
        output: sys::CUdeviceptr,
        nblocks: u64,
        counter: (u64, u64),
        keys: &RoundKeyWords,
        gcm: Option<&GcmLayout>,
    ) -> Result<(), GpuError> {
        if kernel.gcm != gcm.is_some() {
            return Err(GpuError::Internal(format!(
                "launching a kernel that {} GCM chunk counters {} them",
                if kernel.gcm { "takes" } else { "does not take" },
                if gcm.is_some() { "with" } else { "without" }
            )));
        }
        let mut input = input;
        let mut output = output;
        let mut nblocks = nblocks;
        let (mut hi, mut lo) = counter;
        let mut keys = *keys;
        let mut layout = gcm.copied().unwrap_or_default();
        let mut params: [*mut c_void; 7] = [
            (&mut input as *mut sys::CUdeviceptr).cast(),
            (&mut output as *mut sys::CUdeviceptr).cast(),
            (&mut nblocks as *mut u64).cast(),
            (&mut hi as *mut u64).cast(),
            (&mut lo as *mut u64).cast(),
            (&mut keys as *mut RoundKeyWords).cast(),
            (&mut layout as *mut GcmLayout).cast(),
        ];
        let count = if kernel.gcm { 7 } else { 6 };
        // SAFETY: the first six parameters match the kernels' common signature in
        // kernels/aes.cu (u64 pointers, three u64, a 240-byte struct of u32), and a `_gcm`
        // kernel (only it gets the seventh) takes a 16-byte struct of u32 more; all live until
        // cuLaunchKernel returns, which copies them; the caller guarantees the device buffers'
        // extent and lifetime; `func` belongs to this device's module and was opted into the
        // dynamic shared memory it is launched with (Device::open).
        let launched = unsafe {
            result::launch_kernel(
                kernel.func,
                (grid, 1, 1),
                (threads, 1, 1),
                kernel.shared_bytes,
                stream.raw,
                &mut params[..count],
            )
        };
        keys.wipe();
        launched.map_err(|e| GpuError::driver("launching the AES kernel", e))
    }
}

/// A CUDA stream (non-blocking with respect to the legacy default stream).
pub(crate) struct Stream {
    device: Arc<Device>,
    raw: sys::CUstream,
}

// SAFETY: a stream handle may be used from any thread with its context current.
unsafe impl Send for Stream {}

impl Stream {
    pub(crate) fn new(device: &Arc<Device>) -> Result<Stream, GpuError> {
        device.bind()?;
        let raw = result::stream::create(result::stream::StreamKind::NonBlocking)
            .map_err(|e| GpuError::driver("creating a CUDA stream", e))?;
        Ok(Stream {
            device: device.clone(),
            raw,
        })
    }

    /// Waits for everything enqueued so far.
    pub(crate) fn synchronize(&self) -> Result<(), GpuError> {
        self.device.bind()?;
        // SAFETY: `raw` is a live stream of this context.
        unsafe { result::stream::synchronize(self.raw) }
            .map_err(|e| GpuError::driver("waiting for the GPU", e))
    }

    /// Enqueues a copy of the first `len` bytes of pinned `src` to device `dst` at `dst_at`.
    pub(crate) fn copy_to_device(
        &self,
        dst: &DeviceBuffer,
        dst_at: usize,
        src: &PinnedBuffer,
        len: usize,
    ) -> Result<(), GpuError> {
        assert!(len <= src.len && dst_at + len <= dst.len);
        // SAFETY: both buffers hold at least `len` bytes and outlive the copy (the engine
        // synchronizes the stream before touching or freeing them); the source is pinned.
        unsafe {
            sys::cuMemcpyHtoDAsync_v2(
                dst.ptr + dst_at as u64,
                src.ptr as *const c_void,
                len,
                self.raw,
            )
        }
        .result()
        .map_err(|e| GpuError::driver("copying to the GPU", e))
    }

    /// Enqueues a copy of `len` bytes from device `src` to pinned `dst`.
    pub(crate) fn copy_to_host(
        &self,
        dst: &PinnedBuffer,
        src: &DeviceBuffer,
        len: usize,
    ) -> Result<(), GpuError> {
        assert!(len <= src.len && len <= dst.len);
        // SAFETY: as in copy_to_device; the host side is written only by the DMA until the
        // engine synchronizes the stream.
        unsafe { sys::cuMemcpyDtoHAsync_v2(dst.ptr as *mut c_void, src.ptr, len, self.raw) }
            .result()
            .map_err(|e| GpuError::driver("copying from the GPU", e))
    }

    /// Enqueues a device-to-device copy of `len` bytes.
    pub(crate) fn copy_on_device(
        &self,
        dst: &DeviceBuffer,
        src: &DeviceBuffer,
        len: usize,
    ) -> Result<(), GpuError> {
        assert!(len <= src.len && len <= dst.len);
        // SAFETY: both device buffers hold `len` bytes and outlive the copy.
        unsafe { result::memcpy_dtod_async(dst.ptr, src.ptr, len, self.raw) }
            .map_err(|e| GpuError::driver("copying on the GPU", e))
    }

    /// Makes later work on this stream wait until `event` (recorded on another stream) is done.
    pub(crate) fn wait(&self, event: &Event) -> Result<(), GpuError> {
        // SAFETY: both handles are live and belong to the same context.
        unsafe { sys::cuStreamWaitEvent(self.raw, event.raw, 0) }
            .result()
            .map_err(|e| GpuError::driver("ordering two streams", e))
    }

    /// Records `event` on this stream.
    pub(crate) fn record(&self, event: &Event) -> Result<(), GpuError> {
        // SAFETY: both handles are live and belong to the same context.
        unsafe { result::event::record(event.raw, self.raw) }
            .map_err(|e| GpuError::driver("recording an event", e))
    }
}

impl Drop for Stream {
    fn drop(&mut self) {
        if self.device.bind().is_ok() {
            // SAFETY: the stream is live; destroying waits for nothing but releases the
            // handle once its work is done (the engine synchronized it already).
            let _ = unsafe { result::stream::destroy(self.raw) };
        }
    }
}

/// A CUDA event, for timing or (blocking-sync) waiting.
pub(crate) struct Event {
    device: Arc<Device>,
    raw: sys::CUevent,
}

// SAFETY: an event handle may be used from any thread with its context current.
unsafe impl Send for Event {}

impl Event {
    /// A timing event.
    pub(crate) fn new(device: &Arc<Device>) -> Result<Event, GpuError> {
        Event::with_flags(device, sys::CUevent_flags::CU_EVENT_DEFAULT as u32)
    }

    /// An event whose synchronisation puts the waiting thread to sleep instead of spinning
    /// (and records no time, which makes it cheaper).
    pub(crate) fn blocking(device: &Arc<Device>) -> Result<Event, GpuError> {
        Event::with_flags(
            device,
            sys::CUevent_flags::CU_EVENT_BLOCKING_SYNC as u32
                | sys::CUevent_flags::CU_EVENT_DISABLE_TIMING as u32,
        )
    }

    fn with_flags(device: &Arc<Device>, flags: u32) -> Result<Event, GpuError> {
        device.bind()?;
        let mut raw: sys::CUevent = std::ptr::null_mut();
        // SAFETY: cuEventCreate writes one handle through a valid pointer; the flags are a
        // combination of CUevent_flags values; the context is current.
        unsafe { sys::cuEventCreate(&mut raw, flags) }
            .result()
            .map_err(|e| GpuError::driver("creating an event", e))?;
        Ok(Event {
            device: device.clone(),
            raw,
        })
    }

    /// Waits until the work recorded before this event is done.
    pub(crate) fn synchronize(&self) -> Result<(), GpuError> {
        self.device.bind()?;
        // SAFETY: the event is live.
        unsafe { result::event::synchronize(self.raw) }
            .map_err(|e| GpuError::driver("waiting for the GPU", e))
    }

    /// Seconds from `self` to `end` (both recorded and complete).
    pub(crate) fn seconds_until(&self, end: &Event) -> Result<f64, GpuError> {
        // SAFETY: both events are live; cuEventSynchronize waits for `end` to complete.
        unsafe { result::event::synchronize(end.raw) }
            .map_err(|e| GpuError::driver("waiting for an event", e))?;
        // SAFETY: both events were recorded and have completed.
        let ms = unsafe { result::event::elapsed(self.raw, end.raw) }
            .map_err(|e| GpuError::driver("reading an event timer", e))?;
        Ok(f64::from(ms) / 1e3)
    }
}

impl Drop for Event {
    fn drop(&mut self) {
        if self.device.bind().is_ok() {
            // SAFETY: the event is live and not used after this.
            let _ = unsafe { result::event::destroy(self.raw) };
        }
    }
}

/// Device memory.
pub(crate) struct DeviceBuffer {
    device: Arc<Device>,
    pub(crate) ptr: sys::CUdeviceptr,
    pub(crate) len: usize,
}

// SAFETY: a device pointer is a plain address valid in its context from any thread.
unsafe impl Send for DeviceBuffer {}

impl DeviceBuffer {
    pub(crate) fn new(device: &Arc<Device>, len: usize) -> Result<DeviceBuffer, GpuError> {
        device.bind()?;
        // SAFETY: plain allocation in the current context; the contents start undefined
        // and are only read after a copy or a kernel has written them.
        let ptr = unsafe { result::malloc_sync(len.max(16)) }.map_err(|e| {
            GpuError::driver(&format!("allocating {} MiB on the GPU", len >> 20), e)
        })?;
        Ok(DeviceBuffer {
            device: device.clone(),
            ptr,
            len,
        })
    }
}

impl Drop for DeviceBuffer {
    fn drop(&mut self) {
        if self.device.bind().is_ok() {
            // SAFETY: `ptr` came from cuMemAlloc and holds len.max(16) bytes; every stream
            // using it was synchronized. The bytes (plaintext, keystream) are cleared before
            // the memory goes back to the driver.
            unsafe {
                let _ = result::memset_d8_sync(self.ptr, 0, self.len.max(16));
                let _ = result::free_sync(self.ptr);
            }
        }
    }
}

/// Page-locked host memory (DMA-able, so copies run at full bus speed and asynchronously).
pub(crate) struct PinnedBuffer {
    device: Arc<Device>,
    ptr: *mut u8,
    pub(crate) len: usize,
}

// SAFETY: the memory is owned by this value; access goes through &self / &mut self.
unsafe impl Send for PinnedBuffer {}

impl PinnedBuffer {
    pub(crate) fn new(device: &Arc<Device>, len: usize) -> Result<PinnedBuffer, GpuError> {
        device.bind()?;
        // SAFETY: plain page-locked allocation (no write-combining: the host reads it back).
        let ptr = unsafe { result::malloc_host(len.max(16), 0) }.map_err(|e| {
            GpuError::driver(
                &format!("allocating {} MiB of pinned host memory", len >> 20),
                e,
            )
        })?;
        let ptr: *mut u8 = ptr.cast();
        // SAFETY: `ptr` points at len.max(16) writable bytes just allocated; zeroing them
        // once makes every later &[u8] view initialised memory.
        unsafe { ptr.write_bytes(0, len.max(16)) };
        Ok(PinnedBuffer {
            device: device.clone(),
            ptr,
            len,
        })
    }

    /// The bytes.
    ///
    /// # Safety
    ///
    /// No asynchronous copy to or from this buffer may be in flight on any stream, for as
    /// long as the slice lives: the device writes and reads the memory by DMA, unseen by the
    /// borrow checker (the engine synchronizes first, in `Slot::finish` and per staging copy).
    pub(crate) unsafe fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: `ptr` points at `len` bytes allocated above and owned by self; no DMA is
        // in flight by the caller's contract; the borrow of self prevents aliasing.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) }
    }
}

impl Drop for PinnedBuffer {
    fn drop(&mut self) {
        // Clear the bytes (plaintext, keystream) before the memory goes back.
        // SAFETY: every user waits for its copies before letting go of the buffer (a
        // finished piece, or the engine's error path, synchronizes the streams).
        unsafe { self.as_mut_slice() }.fill(0);
        std::sync::atomic::compiler_fence(std::sync::atomic::Ordering::SeqCst);
        if self.device.bind().is_ok() {
            // SAFETY: `ptr` came from cuMemHostAlloc and no copy uses it any more.
            let _ = unsafe { result::free_host(self.ptr.cast()) };
        }
    }
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
