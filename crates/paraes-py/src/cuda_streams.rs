//! The `stream=` argument every `paraes.cuda` call takes (None: paraes' own stream, waited for
//! before the call returns; a `CUstream` handle, or an object with `.cuda_stream` (PyTorch) or
//! `.ptr` (CuPy): the caller's, borrowed and not waited for).

use paraes_gpu::{GpuEngine, GpuStream};
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;

use crate::errors;

/// Where the work of a call is ordered: paraes' own stream (synchronized before the call
/// returns) or the caller's (`handle`, borrowed; not synchronized).
pub struct WorkStream {
    pub stream: GpuStream,
    pub caller: Option<usize>,
}

impl WorkStream {
    /// `stream=` of a call: None, an int handle, or an object with `.cuda_stream` (PyTorch)
    /// or `.ptr` (CuPy).
    pub fn new(engine: &GpuEngine, stream: Option<&Bound<'_, PyAny>>) -> PyResult<WorkStream> {
        let Some(stream) = stream.filter(|s| !s.is_none()) else {
            return Ok(WorkStream {
                stream: engine.default_stream(),
                caller: None,
            });
        };
        let handle = if let Ok(h) = stream.getattr("cuda_stream") {
            h
        } else if let Ok(h) = stream.getattr("ptr") {
            h
        } else {
            stream.clone()
        };
        let handle: usize = handle.extract().map_err(|_| {
            PyTypeError::new_err(
                "stream= takes None, a CUstream handle (int >= 0), a torch.cuda.Stream or a \
                 cupy.cuda.Stream",
            )
        })?;
        // SAFETY: the documented contract of `stream=`: a live stream of device 0's primary
        // context that the caller keeps alive while the call's work may run.
        let borrowed = unsafe { borrow(engine, handle) };
        Ok(WorkStream {
            stream: borrowed,
            caller: Some(handle),
        })
    }

    /// The stream as DLPack's `__dlpack__(stream=)` and CAI's `stream` name it (1 for the
    /// legacy default stream, never 0).
    pub fn protocol_handle(&self) -> usize {
        match self.stream.handle() {
            0 => 1,
            h => h,
        }
    }

    /// Waits for the work unless it runs on the caller's stream.
    pub fn finish(&self) -> PyResult<()> {
        if self.caller.is_none() {
            self.stream
                .synchronize()
                .map_err(|e| errors::Error::new_err(e.to_string()))?;
        }
        Ok(())
    }
}

/// `engine.borrow_stream(handle)`, with the protocols' 1 (`CU_STREAM_LEGACY`) as 0 (the
/// same legacy default stream; the CUDA stand-in knows only 0).
///
/// # Safety
/// As [`GpuEngine::borrow_stream`].
pub unsafe fn borrow(engine: &GpuEngine, handle: usize) -> GpuStream {
    let handle = if handle == 1 { 0 } else { handle };
    // SAFETY: the caller's contract is borrow_stream's.
    unsafe { engine.borrow_stream(handle) }
}
