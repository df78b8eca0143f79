//! `paraes.cuda` (issue 38, first slice): a v3 container decrypted straight into device memory
//! (`cuda_load`), held by a `DeviceBuffer` that exposes `__cuda_array_interface__` (v3), its
//! length and device, and a copy to host bytes for tests. Runs on the GPU engine of paraes-gpu:
//! the NVIDIA driver, or the CUDA stand-in named by `PARAES_CUDA_STANDIN` (tests).

use std::path::PathBuf;
use std::sync::OnceLock;

use paraes_gpu::{DeviceMemory, DeviceMemoryError, GpuEngine, GpuEvent, GpuOptions, GpuStream};
use pyo3::exceptions::{PyBufferError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyTuple};

use crate::containers;
use crate::cuda_streams::WorkStream;
use crate::dlpack;
use crate::errors;
use crate::keys::{SealArgs, UnlockArgs};

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(cuda_load, m)?)?;
    m.add_function(wrap_pyfunction!(cuda_save, m)?)?;
    m.add_class::<DeviceBuffer>()?;
    Ok(())
}

/// The GPU engine of this process (device 0), started on first use.
pub(crate) fn gpu() -> PyResult<&'static GpuEngine> {
    static ENGINE: OnceLock<GpuEngine> = OnceLock::new();
    if let Some(engine) = ENGINE.get() {
        return Ok(engine);
    }
    let engine =
        GpuEngine::new(GpuOptions::default()).map_err(|e| errors::Error::new_err(e.to_string()))?;
    Ok(ENGINE.get_or_init(|| engine))
}

/// A device-memory error as a Python exception: tampering and bad containers as the file
/// API's `paraes.Error`, bad arguments as `ValueError`, file errors as the file API's.
pub(crate) fn device_error(e: DeviceMemoryError) -> PyErr {
    match e {
        DeviceMemoryError::Container { name, source } => errors::container(source, &name),
        DeviceMemoryError::File(e) => errors::file(e),
        DeviceMemoryError::Layout(text) => PyValueError::new_err(text),
        tampered @ DeviceMemoryError::Tampered { .. } => {
            errors::AuthenticationError::new_err(tampered.to_string())
        }
        other => errors::Error::new_err(other.to_string()),
    }
}

/// Bytes in device memory made by `paraes.cuda` (zeroed before they are freed). Work on it is
/// ordered on the engine's own stream, and every call that returns one has synchronized it:
/// its bytes may be read at once, from any stream. It may be used and released on any Python
/// thread (its memory is zeroed and freed wherever its last reference goes).
#[pyclass(module = "paraes._paraes")]
pub struct DeviceBuffer {
    memory: DeviceMemory,
    stream: GpuStream,
    /// The caller's stream its bytes were made on, if a call with `stream=` made them, and
    /// the point of that stream where they are whole (None: whole already). The event, not
    /// the stream, is waited for: the caller may destroy the stream once it has synchronized it.
    ready_on: Option<(usize, GpuEvent)>,
    /// The input the work on the caller's stream reads, kept until that work is done.
    /// Declared after `memory`: the fields drop in order, after [`Drop`] waited for the work.
    _input: Option<HeldInput>,
}

/// The input array of a call whose work was only queued on the caller's stream: the object
/// and its consumed DLPack tensor, whose deleter may free the memory that work still reads (a
/// temporary passed straight in has no other reference). Held by the buffer that work makes,
/// released when the buffer goes, after the work is done.
pub(crate) struct HeldInput {
    _object: Py<PyAny>,
    _dlpack: Option<dlpack::Consumed>,
}

impl HeldInput {
    pub(crate) fn new(object: Py<PyAny>, dlpack: Option<dlpack::Consumed>) -> Self {
        HeldInput {
            _object: object,
            _dlpack: dlpack,
        }
    }
}

// SAFETY: a `Consumed` is a pointer to a DLPack tensor whose deleter this value calls once when
// it drops; it is dropped only with its `DeviceBuffer`, a Python object, so under the GIL as
// every other consumed tensor here (and `Py<PyAny>` is `Send`).
unsafe impl Send for HeldInput {}
// SAFETY: nothing of it is read through a shared reference (pyclasses must be Sync); it is
// only dropped.
unsafe impl Sync for HeldInput {}

impl DeviceBuffer {
    /// A buffer of the engine's memory (`stream`: the engine's, which frees it), whose bytes
    /// are whole once the caller's stream `ready_on.0` reaches the point `ready_on.1` (None:
    /// already), holding `input` until then.
    pub(crate) fn new(
        memory: DeviceMemory,
        stream: GpuStream,
        ready_on: Option<(usize, GpuEvent)>,
        input: Option<HeldInput>,
    ) -> Self {
        DeviceBuffer {
            memory,
            stream,
            ready_on,
            _input: input,
        }
    }

    /// Waits until its bytes are whole, unless the consumer orders its work after
    /// `consumer` (the same stream as the one they are made on; -1: the consumer orders it).
    fn make_ready(&self, consumer: Option<i64>) -> PyResult<()> {
        let Some((made_on, ready)) = &self.ready_on else {
            return Ok(());
        };
        if consumer == Some(-1) || consumer == Some(*made_on as i64) {
            return Ok(());
        }
        ready
            .synchronize()
            .map_err(|e| errors::Error::new_err(e.to_string()))
    }
}

impl Drop for DeviceBuffer {
    /// Made on a caller's stream, the buffer first waits for that work (without the GIL: the
    /// stream's work may need it): its memory is zeroed on the engine's own stream and its
    /// input released only after the work that writes the one and reads the other is done.
    fn drop(&mut self) {
        if let Some((_, ready)) = &self.ready_on {
            // A failure here has no one to report to; the work then is no longer running.
            let _ = Python::attach(|py| py.detach(|| ready.synchronize()));
        }
    }
}

#[pymethods]
impl DeviceBuffer {
    /// Its length in bytes.
    #[getter]
    fn nbytes(&self) -> usize {
        self.memory.len()
    }

    /// The CUDA device it lives on (the engine's: 0).
    #[getter]
    fn device(&self) -> usize {
        0
    }

    /// A COPY of its bytes in host memory (for tests and small buffers: it brings plaintext
    /// to the host).
    fn to_bytes<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        self.make_ready(None)?;
        let mut out = vec![0u8; self.memory.len()];
        self.stream
            .synchronize()
            .map_err(DeviceMemoryError::from)
            .and_then(|()| self.memory.read_to_host(&self.stream, 0, &mut out))
            .map_err(device_error)?;
        Ok(PyBytes::new(py, &out))
    }

    /// Version 3 of the CUDA Array Interface: a one-dimensional C-contiguous array of bytes
    /// (`|u1`). `stream` is None when the bytes were whole when the buffer was returned (no
    /// `stream=`), else the caller's stream they are made on, to synchronize with (1: the
    /// legacy default stream).
    #[getter]
    fn __cuda_array_interface__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        d.set_item("shape", PyTuple::new(py, [self.memory.len()])?)?;
        d.set_item("typestr", "|u1")?;
        d.set_item("data", (self.memory.address(), false))?;
        d.set_item("strides", py.None())?;
        d.set_item("version", 3)?;
        d.set_item("stream", self.ready_on.as_ref().map(|(s, _)| *s))?;
        Ok(d)
    }

    /// DLPack's device of the buffer: (2, 0), kDLCUDA device 0.
    fn __dlpack_device__(&self) -> (i32, i32) {
        (dlpack::KDL_CUDA, 0)
    }

    /// A DLPack capsule of its bytes (one-dimensional uint8 on CUDA device 0) for
    /// `torch.from_dlpack` and the like; the buffer stays alive until the consumer's deleter
    /// runs. `stream`: the consumer's stream (DLPack's rule: the bytes are made safe to use
    /// there; -1: the consumer synchronizes). `max_version` of major 1 or more: a DLPack 1.0
    /// "dltensor_versioned" capsule (flags 0: writable, not a copy); None or major 0: an
    /// unversioned "dltensor" capsule.
    #[pyo3(signature = (*, stream = None, max_version = None, dl_device = None, copy = None))]
    fn __dlpack__<'py>(
        slf: &Bound<'py, Self>,
        stream: Option<i64>,
        max_version: Option<(u32, u32)>,
        dl_device: Option<(i32, i32)>,
        copy: Option<bool>,
    ) -> PyResult<Bound<'py, PyAny>> {
        if dl_device.is_some_and(|d| d != (dlpack::KDL_CUDA, 0)) {
            return Err(PyBufferError::new_err(
                "a paraes.cuda.DeviceBuffer lives on CUDA device 0 and cannot be exported to \
                 another device: copy it there with the consuming library",
            ));
        }
        if copy == Some(true) {
            return Err(PyBufferError::new_err(
                "a paraes.cuda.DeviceBuffer is exported without a copy: copy it with the \
                 consuming library",
            ));
        }
        let this = slf.borrow();
        this.make_ready(stream)?;
        let (address, len) = (this.memory.address(), this.memory.len());
        dlpack::export(slf.as_any(), address, len, max_version)
    }
}

/// Decrypts the v3 container `path` into new device memory (device 0) without its plaintext
/// ever being in host memory; keys, identities and passphrases as `decrypt_file` takes them.
/// Returns once every tag verified; a container that was tampered with raises
/// `paraes.AuthenticationError`
/// and no plaintext is returned.
#[pyfunction]
#[pyo3(signature = (path, *, keys = None, identities = None, passphrase = None, ssh_passphrase = None, max_kdf_mib = None, allow_unverified_slot = false, device = None, stream = None))]
#[allow(clippy::too_many_arguments)]
fn cuda_load(
    py: Python<'_>,
    path: PathBuf,
    keys: Option<&Bound<'_, PyAny>>,
    identities: Option<&Bound<'_, PyAny>>,
    passphrase: Option<&Bound<'_, PyAny>>,
    ssh_passphrase: Option<&Bound<'_, PyAny>>,
    max_kdf_mib: Option<u64>,
    allow_unverified_slot: bool,
    device: Option<&Bound<'_, PyAny>>,
    stream: Option<&Bound<'_, PyAny>>,
) -> PyResult<DeviceBuffer> {
    if let Some(device) = device.filter(|d| !d.eq(0).unwrap_or(false)) {
        return Err(dlpack::wrong_device(&device.repr()?.to_string()));
    }
    let args = UnlockArgs {
        keys,
        identities,
        passphrase,
        ssh_passphrase,
        max_kdf_mib,
        allow_unverified_slot,
    };
    let unlock = args.unlock()?;
    let engine = gpu()?;
    // Loading waits for every piece whatever the stream: the bytes are whole on return. A
    // caller's stream only orders the load after the caller's work there.
    let work = WorkStream::new(engine, stream)?;
    if work.caller.is_some() {
        work.stream
            .synchronize()
            .map_err(|e| errors::Error::new_err(e.to_string()))?;
    }
    let stream = engine.default_stream();
    let (memory, loaded) = py
        .detach(|| paraes_gpu::device_memory::load_container(engine, &path, &unlock, &stream))
        .map_err(device_error)?;
    if let Some(warning) = loaded.warning {
        errors::warn(&warning)?;
    }
    Ok(DeviceBuffer::new(memory, stream, None, None))
}

/// Seals all of `buffer` into a new v3 container `path` (`paraes dec` opens it) for keys,
/// recipients and a passphrase as `encrypt_file` takes them, with a `bits`-bit body key. The
/// plaintext is sealed on the device, after everything already on paraes' stream; only records
/// come to the host. `path` appears only when whole; an existing file is kept unless `replace`.
/// Returns the container's length in bytes.
#[pyfunction]
#[pyo3(signature = (buffer, path, *, keys = None, recipients = None, passphrase = None, bits = 256, replace = false, stream = None))]
#[allow(clippy::too_many_arguments)]
fn cuda_save(
    buffer: PyRef<'_, DeviceBuffer>,
    path: PathBuf,
    keys: Option<&Bound<'_, PyAny>>,
    recipients: Option<&Bound<'_, PyAny>>,
    passphrase: Option<&Bound<'_, PyAny>>,
    bits: u32,
    replace: bool,
    stream: Option<&Bound<'_, PyAny>>,
) -> PyResult<u64> {
    let key_size = containers::key_size(bits)?;
    let args = SealArgs {
        keys,
        recipients,
        passphrase,
    };
    args.files_read()?
        .refuse_as_output_path(&path)
        .map_err(errors::file)?;
    let recipients = args.recipients()?;
    let engine = gpu()?;
    let work = WorkStream::new(engine, stream)?;
    if work.caller.is_none() {
        buffer.make_ready(None)?;
    }
    let saved = paraes_gpu::device_memory::save_container(
        engine,
        &buffer.memory,
        &path,
        replace,
        (key_size, &recipients),
        &work.stream,
    )
    .map_err(device_error)?;
    for warning in &saved.warnings {
        errors::warn(warning)?;
    }
    Ok(saved.container_len)
}
