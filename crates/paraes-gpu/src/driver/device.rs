//! One GPU as the engine sees it: cudarc's context for the device, the kernels' module loaded
//! with the JIT's logs, and [`Kernel`], whose launch checks that its operands hold what the
//! kernel will touch. The raw driver calls of this file are the ones cudarc's safe layer
//! cannot make (see the parent module): the module load and what hangs off its handles.

use std::collections::HashMap;
use std::ffi::{c_void, CString};
use std::sync::{Arc, Mutex, OnceLock};

use cudarc::driver::{result, sys, CudaContext, DevicePtr, DevicePtrMut};

use super::memory::{DeviceBuffer, Stream};
use super::{guard, probe_device, DeviceInfo};
use crate::error::GpuError;
use crate::image::{one_line, ImageChoice, KernelImage, ModuleReport};
use crate::kernels::KernelKind;
use crate::plan::{GcmLayout, RoundKeyWords};
use crate::variant::{dynamic_shared_bytes, max_threads, KernelVariant};

mod records;

pub(crate) use records::{GcmKeys, RecordsKind, RecordsLaunch};

/// One device: its primary context and one loaded module of the kernels. Made once per
/// (device, image choice) and kept for the life of the process.
pub(crate) struct Device {
    pub(crate) info: DeviceInfo,
    ctx: Arc<CudaContext>,
    /// Every kernel of the module, by entry-point name; `Err` says why one cannot run here
    /// (a PAIR kernel's shared memory refused).
    kernels: HashMap<String, Result<Kernel, String>>,
    /// What loading the module took and said.
    pub(crate) module: ModuleReport,
}

/// The loaded module. Raw because cudarc's `CudaContext::load_module` passes no JIT options
/// (so neither the JIT's logs nor its wall time), and a `CudaModule` cannot be made from a
/// handle loaded otherwise. It holds its context, so it cannot outlive it, and every
/// [`Kernel`] holds it, so no function handle outlives the module.
struct Module {
    ctx: Arc<CudaContext>,
    raw: sys::CUmodule,
}

// SAFETY: a CUmodule handle may be used from any thread with its context current (every use
// binds the context first); this value only unloads it, once, on drop.
unsafe impl Send for Module {}
// SAFETY: as above; the handle is never changed after the load.
unsafe impl Sync for Module {}

impl Drop for Module {
    fn drop(&mut self) {
        if self.ctx.bind_to_thread().is_ok() {
            // SAFETY: `raw` was loaded in this context and nothing uses it any more: every
            // Kernel (the only holder of its functions) holds this Module.
            let _ = unsafe { result::module::unload(self.raw) };
        }
    }
}

/// One kernel of the loaded module, with what a launch needs to know about it.
#[derive(Clone)]
pub(crate) struct Kernel {
    module: Arc<Module>,
    func: sys::CUfunction,
    /// The entry point (for messages).
    name: Arc<str>,
    /// Dynamic shared memory to pass at launch (PAIR kernels).
    shared_bytes: u32,
    /// What its launches are checked against.
    shape: Shape,
    /// Writes keystream and never reads its input (a `ctr_keystream` kernel).
    keystream: bool,
}

/// What a kernel relies on about its launch without checking it: the block size it was
/// compiled for, whether it takes GCM chunk counters, and operands that hold every block.
#[derive(Clone, Copy, Debug)]
struct Shape {
    /// The most threads per block it was compiled for.
    max_threads: u32,
    /// Takes GCM chunk counters (a `_gcm` kernel: one parameter more, `GcmLayout`).
    gcm: bool,
}

impl Shape {
    /// Why `launch` with operands of these sizes (`input` where one is passed) would break
    /// what the kernel relies on, if it would.
    fn check(self, launch: &Launch<'_>, input: Option<usize>, output: usize) -> Result<(), String> {
        if self.gcm != launch.gcm.is_some() {
            return Err(format!(
                "it {} GCM chunk counters and was given {}",
                if self.gcm { "takes" } else { "does not take" },
                if launch.gcm.is_some() { "some" } else { "none" }
            ));
        }
        if launch.grid == 0 || launch.threads == 0 || launch.threads > self.max_threads {
            return Err(format!(
                "{} blocks of {} threads (at most {} threads per block)",
                launch.grid, launch.threads, self.max_threads
            ));
        }
        let Some(bytes) = launch.nblocks.checked_mul(16) else {
            return Err(format!("{} blocks", launch.nblocks));
        };
        for (what, len) in [("input", input), ("output", Some(output))] {
            if let Some(len) = len.filter(|&len| (len as u64) < bytes) {
                return Err(format!(
                    "its {what} holds {len} bytes, {} blocks need {bytes}",
                    launch.nblocks
                ));
            }
        }
        Ok(())
    }
}

// SAFETY: a CUfunction handle of a loaded module may be used from any thread with its context
// current (every call binds it first); the module stays loaded while this value (which holds
// it) lives, and a Kernel is never changed after it is made.
unsafe impl Send for Kernel {}
// SAFETY: as above.
unsafe impl Sync for Kernel {}

/// Entry-point names of the embedded PTX (the same in both cubins; image.rs tests that).
fn kernel_names() -> impl Iterator<Item = &'static str> {
    crate::PTX
        .lines()
        .filter_map(|l| l.strip_prefix(".visible .entry "))
        .filter_map(|l| l.split('(').next())
}

/// Loads one image with `cuModuleLoadDataEx`, keeping the JIT's info and error logs and
/// wall time. On failure the error carries the error log. The context must be current.
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
    // LOG bytes as their size slots say and outlive the call; the caller made the context
    // current.
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
        // Retains the primary context and makes it current on this thread.
        let ctx = CudaContext::new(info.ordinal)
            .map_err(|e| GpuError::driver("creating the CUDA context", e))?;
        let (major, minor) = info.compute_capability;
        let wanted = match choice {
            ImageChoice::Auto => KernelImage::for_capability(major, minor),
            ImageChoice::Ptx => KernelImage::Ptx,
        };
        let (raw, report) = match load_module(wanted) {
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
                let (raw, mut report) = load_module(KernelImage::Ptx)
                    .map_err(|ptx| ptx.with_log(&format!("after the {wanted} failed: {e}")))?;
                report.cubin_refused = Some(refused);
                (raw, report)
            }
            Err(e) => return Err(e),
        };
        let module = Arc::new(Module {
            ctx: ctx.clone(),
            raw,
        });
        let mut kernels = HashMap::new();
        for name in kernel_names() {
            let kernel = Kernel::find(&module, name)?;
            kernels.insert(name.to_string(), kernel);
        }
        Ok(Device {
            info,
            ctx,
            kernels,
            module: report,
        })
    }

    /// The device's context (for the streams and pinned memory of [`super::memory`]).
    pub(crate) fn context(&self) -> &Arc<CudaContext> {
        &self.ctx
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
            Some(Ok(kernel)) => Ok(kernel.clone()),
            Some(Err(why)) => Err(GpuError::BadOption(format!(
                "kernel variant {variant}: {why}"
            ))),
            None => Err(GpuError::Internal(format!(
                "looking up kernel {name}: not in the module"
            ))),
        }
    }
}

/// What one launch does, besides the memory it works on ([`Operands`]).
pub(crate) struct Launch<'a> {
    /// Thread blocks.
    pub(crate) grid: u32,
    /// Threads per block.
    pub(crate) threads: u32,
    /// AES blocks to process: the kernel touches `16 * nblocks` bytes of each operand.
    pub(crate) nblocks: u64,
    /// The 128-bit counter of the launch's block 0 (Stream counters) or, for a `_gcm`
    /// kernel, its record and its block within the record.
    pub(crate) counter: (u64, u64),
    /// The round keys.
    pub(crate) keys: &'a RoundKeyWords,
    /// The nonce and stride: exactly the `_gcm` kernels take them.
    pub(crate) gcm: Option<&'a GcmLayout>,
}

/// The device memory a launch reads and writes; borrowed for the launch, so nothing on the
/// host side can free or reuse it meanwhile, and cudarc's events order it against every
/// other use on any stream.
pub(crate) enum Operands<'a> {
    /// Read and written in place (ECB and fused CTR, as the pipeline runs them).
    InPlace(&'a mut DeviceBuffer),
    /// Read from `input`, written to `output` (the timers).
    Separate {
        /// What the kernel reads (ignored by a keystream kernel).
        input: &'a DeviceBuffer,
        /// What the kernel writes.
        output: &'a mut DeviceBuffer,
    },
    /// Written only: keystream kernels, which read no input (passed a null pointer).
    Keystream(&'a mut DeviceBuffer),
}

impl Kernel {
    /// Looks `name` up in `module` and prepares it: the shared-memory carve-out hint, and the
    /// opt-in to more than 48 KiB of dynamic shared memory where it needs that (a refusal is
    /// kept as the `Err` the kernel map holds). The module's context must be current.
    fn find(module: &Arc<Module>, name: &str) -> Result<Result<Kernel, String>, GpuError> {
        let cname = CString::new(name).expect("no NUL in kernel names");
        // SAFETY: `module.raw` is loaded in the current context and stays loaded while any
        // Kernel made from it lives (each holds the Module).
        let func = unsafe { result::module::get_function(module.raw, cname) }
            .map_err(|e| GpuError::driver("finding an AES kernel in the module", e))?;
        // A hint (the driver may ignore it): prefer shared memory over L1, so that more
        // 32-72 KiB thread blocks fit on an SM. Failure is harmless.
        // SAFETY: `func` is a function of the loaded module; 100 is a valid percentage.
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
        Ok(usable.map(|()| Kernel {
            module: module.clone(),
            func,
            name: name.into(),
            shared_bytes,
            shape: Shape {
                max_threads: max_threads(name),
                gcm: name.ends_with("_gcm"),
            },
            keystream: name.contains("_keystream"),
        }))
    }

    /// Binds the module's context to the calling thread (before a raw call on `func`).
    fn bind(&self) -> Result<(), GpuError> {
        self.module
            .ctx
            .bind_to_thread()
            .map_err(|e| GpuError::driver("binding the CUDA context", e))
    }

    /// Its entry point's name in kernels/aes.cu.
    pub(crate) fn name(&self) -> &str {
        &self.name
    }

    /// The most threads per block it was compiled for.
    pub(crate) fn max_threads(&self) -> u32 {
        self.shape.max_threads
    }

    /// Registers per thread (`CU_FUNC_ATTRIBUTE_NUM_REGS`).
    pub(crate) fn registers(&self) -> Result<u32, GpuError> {
        self.bind()?;
        // SAFETY: `func` belongs to the module this Kernel holds; its context is current.
        unsafe {
            result::function::get_function_attribute(
                self.func,
                sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_NUM_REGS,
            )
        }
        .map(|n| n.max(0) as u32)
        .map_err(|e| GpuError::driver("querying kernel registers", e))
    }

    /// Thread blocks of `threads` threads that fit on one SM at once.
    pub(crate) fn resident_per_sm(&self, threads: u32) -> Result<u32, GpuError> {
        self.bind()?;
        // SAFETY: `func` belongs to the module this Kernel holds; its context is current.
        unsafe {
            result::occupancy::max_active_block_per_multiprocessor(
                self.func,
                threads as i32,
                self.shared_bytes as usize,
            )
        }
        .map(|n| n.max(1) as u32)
        .map_err(|e| GpuError::driver("querying kernel occupancy", e))
    }

    /// Enqueues one launch on `stream`, after checking what the kernel will rely on without a
    /// check of its own: the launch shape, the counters it takes, that every operand belongs
    /// to this kernel's context and holds the `16 * nblocks` bytes the kernel reads or
    /// writes, and that only a keystream kernel goes without an input. The operands are
    /// borrowed for the call, and their cudarc events make later uses (on any stream) and
    /// their release wait for the launch: so this is a safe function.
    pub(crate) fn launch(
        &self,
        stream: &Stream,
        launch: &Launch<'_>,
        operands: Operands<'_>,
    ) -> Result<(), GpuError> {
        let refuse = |why: String| {
            Err(GpuError::Internal(format!(
                "launching {} refused before the driver saw it: {why}",
                self.name
            )))
        };
        let ctx = stream.context();
        if self.module.ctx != *ctx {
            return refuse("its stream belongs to another context".into());
        }
        let (input, output): (Option<&DeviceBuffer>, &mut DeviceBuffer) = match operands {
            Operands::InPlace(data) => (None, data),
            Operands::Separate { input, output } => (Some(input), output),
            Operands::Keystream(output) => {
                if !self.keystream {
                    return refuse("it reads an input and was given none".into());
                }
                (None, output)
            }
        };
        if let Err(why) = self
            .shape
            .check(launch, input.map(DeviceBuffer::len), output.len())
        {
            return refuse(why);
        }
        if input.is_some_and(|b| b.context() != ctx) || output.context() != ctx {
            return refuse("an operand belongs to another context".into());
        }
        let in_place = input.is_none() && !self.keystream;
        let raw_stream = stream.cudarc();
        // The pointers come from cudarc: taking one makes `stream` wait for the buffer's
        // earlier writes (and reads, for the output), and the guards record this launch as
        // the buffer's latest read or write when they drop, after the launch is enqueued.
        let (output_ptr, _output_done) = output.slice_mut().device_ptr_mut(raw_stream);
        let (input_ptr, _input_done) = match input {
            Some(input) => {
                let (ptr, done) = input.slice().device_ptr(raw_stream);
                (ptr, Some(done))
            }
            None if in_place => (output_ptr, None),
            None => (0, None),
        };
        let mut input_ptr = input_ptr;
        let mut output_ptr = output_ptr;
        let mut nblocks = launch.nblocks;
        let (mut hi, mut lo) = launch.counter;
        let mut keys = *launch.keys;
        let mut layout = launch.gcm.copied().unwrap_or_default();
        let mut params: [*mut c_void; 7] = [
            (&mut input_ptr as *mut sys::CUdeviceptr).cast(),
            (&mut output_ptr as *mut sys::CUdeviceptr).cast(),
            (&mut nblocks as *mut u64).cast(),
            (&mut hi as *mut u64).cast(),
            (&mut lo as *mut u64).cast(),
            (&mut keys as *mut RoundKeyWords).cast(),
            (&mut layout as *mut GcmLayout).cast(),
        ];
        let count = if self.shape.gcm { 7 } else { 6 };
        // SAFETY: the first six parameters match the kernels' common signature in
        // kernels/aes.cu (two u64 pointers, three u64, a 240-byte struct of u32), and a `_gcm`
        // kernel (only it gets the seventh) takes a 16-byte struct of u32 more; all live until
        // cuLaunchKernel returns, which copies them. The pointers are of buffers in this
        // context holding at least the 16 * nblocks bytes the kernel touches (checked above;
        // a keystream kernel reads no input), borrowed for this call and kept alive until the
        // launch has run by cudarc's events (recorded when the guards above drop).
        let launched = unsafe {
            self.enqueue(
                stream,
                (launch.grid, launch.threads),
                &mut params[..count],
                "launching the AES kernel",
            )
        };
        keys.wipe();
        launched
    }

    /// Binds the context and enqueues the kernel on `stream` with `(grid, threads)` and
    /// `params` (and its dynamic shared memory), `what` naming it in an error: the one raw launch
    /// of both launch paths.
    ///
    /// # Safety
    /// `params` must match the kernel's signature in kernels/aes.cu and point at values that
    /// live until this returns; device pointers among them must be of buffers of this context
    /// that hold every byte the kernel touches and stay alive until the launch has run.
    unsafe fn enqueue(
        &self,
        stream: &Stream,
        (grid, threads): (u32, u32),
        params: &mut [*mut c_void],
        what: &str,
    ) -> Result<(), GpuError> {
        self.bind()?;
        // SAFETY: the caller's contract covers the parameters and the memory; `func` belongs
        // to the module this Kernel holds, whose context `bind` made current, and was opted
        // into the dynamic shared memory it is launched with (Kernel::find).
        unsafe {
            result::launch_kernel(
                self.func,
                (grid, 1, 1),
                (threads, 1, 1),
                self.shared_bytes,
                stream.cudarc().cu_stream(),
                params,
            )
        }
        .map_err(|e| GpuError::driver(what, e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_launch_is_refused_unless_its_operands_hold_every_block() {
        let keys = RoundKeyWords { w: [0; 60] };
        let layout = GcmLayout::default();
        let stream = Shape {
            max_threads: 512,
            gcm: false,
        };
        let gcm = Shape {
            max_threads: 256,
            gcm: true,
        };
        let launch = |grid, threads, nblocks, gcm| Launch {
            grid,
            threads,
            nblocks,
            counter: (0, 0),
            keys: &keys,
            gcm,
        };
        let ok = launch(4, 256, 100, None);
        assert_eq!(stream.check(&ok, None, 1600), Ok(()));
        assert_eq!(stream.check(&ok, Some(1600), 4096), Ok(()));
        let refusals = [
            (
                stream,
                launch(4, 256, 100, None),
                None,
                1599,
                "output holds 1599",
            ),
            (
                stream,
                launch(4, 256, 100, None),
                Some(16),
                1600,
                "input holds 16",
            ),
            (
                stream,
                launch(4, 256, 100, Some(&layout)),
                None,
                1600,
                "does not take GCM",
            ),
            (gcm, launch(4, 256, 100, None), None, 1600, "takes GCM"),
            (
                gcm,
                launch(4, 512, 100, Some(&layout)),
                None,
                1600,
                "at most 256",
            ),
            (stream, launch(0, 256, 100, None), None, 1600, "0 blocks of"),
            (stream, launch(4, 0, 100, None), None, 1600, "0 threads"),
            (
                stream,
                launch(4, 32, u64::MAX / 8, None),
                None,
                1600,
                "blocks",
            ),
        ];
        for (shape, launch, input, output, why) in refusals {
            let refused = shape.check(&launch, input, output).unwrap_err();
            assert!(refused.contains(why), "{refused:?} should say {why:?}");
        }
        assert_eq!(
            gcm.check(&launch(1, 256, 1, Some(&layout)), None, 16),
            Ok(())
        );
    }
}
