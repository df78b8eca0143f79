//! Any Python object's buffer (bytes, bytearray, memoryview, numpy arrays: any C-contiguous
//! buffer), exported and read as its bytes, for every call that takes data or key bytes.
//!
//! A buffer's export is held for as long as the [`Exported`] lives: while it is exported, its
//! owner cannot resize or free it (a `bytearray` raises `BufferError`), so the memory stays
//! valid while the GIL is released.

use pyo3::buffer::PyUntypedBuffer;
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;

/// An exported buffer of any object that has one, read as its bytes.
pub struct Exported {
    buffer: PyUntypedBuffer,
}

impl Exported {
    /// Exports `obj`'s buffer; refuses non-contiguous buffers (a strided numpy view).
    pub fn new(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<Self> {
        let buffer = PyUntypedBuffer::get(obj).map_err(|_| {
            PyTypeError::new_err(format!(
                "{what} must be a bytes-like object (bytes, bytearray, memoryview, a numpy array...), not {}",
                obj.get_type().name().map(|n| n.to_string()).unwrap_or_default()
            ))
        })?;
        if !buffer.is_c_contiguous() {
            return Err(PyValueError::new_err(format!(
                "{what} is not a contiguous buffer: pass a contiguous copy (numpy: np.ascontiguousarray)"
            )));
        }
        Ok(Exported { buffer })
    }

    pub fn len(&self) -> usize {
        self.buffer.len_bytes()
    }

    pub fn readonly(&self) -> bool {
        self.buffer.readonly()
    }

    /// The buffer's bytes.
    pub fn bytes(&self) -> &[u8] {
        let len = self.len();
        if len == 0 {
            return &[];
        }
        // SAFETY: a contiguous buffer of `len` bytes at `buf_ptr`, valid while the export
        // (`self`) lives: its owner may not resize or free it meanwhile.
        unsafe { std::slice::from_raw_parts(self.buffer.buf_ptr().cast::<u8>(), len) }
    }

    /// The buffer's bytes to change in place; refused for a read-only buffer.
    pub fn bytes_mut(&mut self, what: &str) -> PyResult<&mut [u8]> {
        if self.readonly() {
            return Err(PyTypeError::new_err(format!(
                "{what} is read-only (bytes, or a read-only memoryview): pass a writable buffer such as a bytearray, or use the function that returns new bytes"
            )));
        }
        let len = self.len();
        if len == 0 {
            return Ok(&mut []);
        }
        // SAFETY: a writable contiguous buffer of `len` bytes, valid while the export lives
        // (as in `bytes`); this exclusive borrow of the export is the only Rust view of it.
        Ok(unsafe { std::slice::from_raw_parts_mut(self.buffer.buf_ptr().cast::<u8>(), len) })
    }
}
