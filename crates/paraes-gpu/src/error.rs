//! GpuError: every way the GPU engine can fail, each a one-line message saying what to do.

use cudarc::driver::result::DriverError;
use cudarc::driver::sys::CUresult;
use paraes_core::EngineError;

/// Why the GPU engine could not start or could not finish a job.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum GpuError {
    /// `libcuda.so.1` could not be loaded.
    #[error("no CUDA driver found (libcuda.so.1 not loadable): install the NVIDIA driver")]
    NoDriver,
    /// The environment variable `PARAES_NO_GPU` is set (to a non-empty value other than 0).
    #[error("GPU use disabled by PARAES_NO_GPU: unset it to use the GPU")]
    Disabled,
    /// The driver is there but sees no device.
    #[error("no CUDA device ({0}): check `nvidia-smi`")]
    NoDevice(String),
    /// The requested device ordinal does not exist.
    #[error("there is no CUDA device {device} (the driver sees {count}): pick one below {count}")]
    BadDevice {
        /// The ordinal asked for.
        device: usize,
        /// How many devices the driver sees.
        count: usize,
    },
    /// The driver is too old for the kernels, or the GPU is older than compute capability
    /// 8.0 (the kernels are built for Ampere and newer). A GPU is there, so this is not
    /// "unavailable": `--backend auto` says why before it uses the CPU.
    #[error(
        "the CUDA driver cannot load the AES kernels ({0}): they need an NVIDIA driver \
         R550 (CUDA 12.4) or newer and a GPU of compute capability 8.0 or newer (Ampere, \
         Hopper, ...); update the driver"
    )]
    Unsupported(String),
    /// A panic inside the CUDA bindings (cudarc) or the engine: a bug, never "no GPU".
    #[error("internal error in the GPU engine while {0}: please report this bug")]
    Internal(String),
    /// Device or pinned host memory ran out. The engine's buffers are `streams x max_piece`
    /// of each kind, whatever the caller's buffer size, so smaller calls do not help.
    #[error(
        "out of GPU memory while {0}: free GPU memory (`nvidia-smi` lists what holds it) or \
         give the engine smaller pieces (PARAES_GPU_PIECE, in bytes)"
    )]
    OutOfMemory(String),
    /// A kernel could not be launched.
    #[error("the AES kernel failed to launch ({0}): please report this")]
    LaunchFailed(String),
    /// The device failed while working (illegal address, ECC error, Xid, fallen off the bus).
    #[error(
        "the GPU failed while working ({0}): no output was kept; check `nvidia-smi` and the \
         kernel log, then rerun"
    )]
    DeviceLost(String),
    /// Any other driver error.
    #[error("CUDA error while {0}")]
    Driver(String),
    /// An option is out of range.
    #[error("bad GPU option: {0}")]
    BadOption(String),
}

impl GpuError {
    /// Maps a driver error met while doing `what` to the error a user can act on.
    pub(crate) fn driver(what: &str, error: DriverError) -> GpuError {
        let detail = format!("{what}: {}", describe(error));
        match error.0 {
            CUresult::CUDA_ERROR_NO_DEVICE => GpuError::NoDevice(describe(error)),
            CUresult::CUDA_ERROR_OUT_OF_MEMORY => GpuError::OutOfMemory(detail),
            CUresult::CUDA_ERROR_UNSUPPORTED_PTX_VERSION
            | CUresult::CUDA_ERROR_INVALID_PTX
            | CUresult::CUDA_ERROR_NO_BINARY_FOR_GPU
            | CUresult::CUDA_ERROR_JIT_COMPILER_NOT_FOUND
            | CUresult::CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE => GpuError::Unsupported(detail),
            CUresult::CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES
            | CUresult::CUDA_ERROR_INVALID_VALUE
            | CUresult::CUDA_ERROR_INVALID_HANDLE
                if what.starts_with("launching") =>
            {
                GpuError::LaunchFailed(detail)
            }
            CUresult::CUDA_ERROR_LAUNCH_FAILED
            | CUresult::CUDA_ERROR_ILLEGAL_ADDRESS
            | CUresult::CUDA_ERROR_ILLEGAL_INSTRUCTION
            | CUresult::CUDA_ERROR_MISALIGNED_ADDRESS
            | CUresult::CUDA_ERROR_HARDWARE_STACK_ERROR
            | CUresult::CUDA_ERROR_ECC_UNCORRECTABLE
            | CUresult::CUDA_ERROR_LAUNCH_TIMEOUT
            | CUresult::CUDA_ERROR_DEVICE_UNAVAILABLE
            | CUresult::CUDA_ERROR_DEVICE_NOT_LICENSED
            | CUresult::CUDA_ERROR_CONTEXT_IS_DESTROYED
            | CUresult::CUDA_ERROR_DEINITIALIZED => GpuError::DeviceLost(detail),
            _ => GpuError::Driver(detail),
        }
    }

    /// The same error with `; JIT log: {log}` added to its detail (nothing when `log` is
    /// empty): a refused module load says what the driver's compiler said.
    pub(crate) fn with_log(self, log: &str) -> GpuError {
        if log.is_empty() {
            return self;
        }
        let add = |s: String| format!("{s}; JIT log: {log}");
        match self {
            GpuError::NoDevice(s) => GpuError::NoDevice(add(s)),
            GpuError::Unsupported(s) => GpuError::Unsupported(add(s)),
            GpuError::Internal(s) => GpuError::Internal(add(s)),
            GpuError::OutOfMemory(s) => GpuError::OutOfMemory(add(s)),
            GpuError::LaunchFailed(s) => GpuError::LaunchFailed(add(s)),
            GpuError::DeviceLost(s) => GpuError::DeviceLost(add(s)),
            GpuError::Driver(s) => GpuError::Driver(add(s)),
            GpuError::BadOption(s) => GpuError::BadOption(add(s)),
            other @ (GpuError::NoDriver | GpuError::Disabled | GpuError::BadDevice { .. }) => other,
        }
    }

    /// True only when there is no GPU to use here: no driver, no device, or GPU use
    /// disabled by `PARAES_NO_GPU`. `--backend auto` falls back to the CPU silently on these
    /// alone; every other error (a GPU too old, a driver too old, a device ordinal that does
    /// not exist, a failure while working, a bug) is reported, so a real problem is never
    /// hidden behind a quiet CPU run.
    pub fn is_unavailable(&self) -> bool {
        matches!(
            self,
            GpuError::NoDriver | GpuError::Disabled | GpuError::NoDevice(_)
        )
    }
}

impl From<GpuError> for EngineError {
    fn from(error: GpuError) -> Self {
        if error.is_unavailable() {
            EngineError::Unavailable(error.to_string())
        } else {
            // Typed across the seam: the CLI advises by the GPU error's kind.
            EngineError::Device {
                device: "GPU",
                source: Box::new(error),
            }
        }
    }
}

/// `CUDA_ERROR_X (text)` for a driver error (the driver is loaded whenever one exists).
fn describe(error: DriverError) -> String {
    let name = error
        .error_name()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|_| format!("{:?}", error.0));
    match error.error_string() {
        Ok(text) => format!("{name}: {}", text.to_string_lossy()),
        Err(_) => name,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_missing_driver_or_device_is_unavailable() {
        let unavailable = [
            GpuError::NoDriver,
            GpuError::Disabled,
            GpuError::NoDevice("none".into()),
        ];
        for e in unavailable {
            assert!(e.is_unavailable(), "{e}");
            assert!(matches!(EngineError::from(e), EngineError::Unavailable(_)));
        }
        let surfaced = [
            GpuError::BadDevice {
                device: 3,
                count: 1,
            },
            GpuError::Unsupported("x".into()),
            GpuError::Internal("x".into()),
            GpuError::OutOfMemory("x".into()),
            GpuError::LaunchFailed("x".into()),
            GpuError::DeviceLost("x".into()),
            GpuError::Driver("x".into()),
            GpuError::BadOption("x".into()),
        ];
        for e in surfaced {
            assert!(!e.is_unavailable(), "{e}");
            let engine = EngineError::from(e.clone());
            let source = std::error::Error::source(&engine)
                .and_then(|s| s.downcast_ref::<GpuError>())
                .expect("the GPU error is the engine error's source");
            assert_eq!(source, &e);
        }
    }

    #[test]
    fn a_jit_log_is_kept_in_the_message() {
        let e = GpuError::Unsupported(
            "loading the AES kernels (PTX (JIT)): CUDA_ERROR_INVALID_PTX".into(),
        )
        .with_log("ptxas fatal: bad .version");
        let text = e.to_string();
        assert!(
            text.contains("CUDA_ERROR_INVALID_PTX; JIT log: ptxas fatal: bad .version"),
            "{text}"
        );
        assert_eq!(
            GpuError::Driver("x".into()).with_log(""),
            GpuError::Driver("x".into())
        );
    }

    #[test]
    fn the_capability_text_matches_the_check() {
        let text = GpuError::Unsupported("x".into()).to_string();
        assert!(text.contains("compute capability 8.0"), "{text}");
        assert!(!text.contains("7.0"), "{text}");
        assert!(!text.contains('\n'));
    }
}
