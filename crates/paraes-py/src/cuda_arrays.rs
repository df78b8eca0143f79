//! `paraes.cuda.seal` and `paraes.cuda.open` (issue 38 item 3): Cobblestone chunk records sealed
//! and opened in a caller's GPU memory, found through `__cuda_array_interface__` (v2, v3) or
//! DLPack and viewed as bytes, out of place (a new `DeviceBuffer`) or in place; and the
//! `stream=` argument every `paraes.cuda` call takes (None, a `CUstream` handle, or an object
//! with `.cuda_stream` or `.ptr`).

use paraes_core::cobblestone::{MessageKeys, Variant, SALT_LEN};
use paraes_gpu::{ChunkSpan, DeviceMemory, GpuEngine};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use zeroize::Zeroizing;

use crate::cuda::{device_error, gpu, DeviceBuffer, HeldInput};
use crate::cuda_streams::{borrow, WorkStream};
use crate::dlpack;
use crate::errors;

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(cuda_records, m)?)?;
    Ok(())
}

/// What says an array is read-only, in the in-place refusal.
const CAI_SAYS_READ_ONLY: &str = "its __cuda_array_interface__";
const DLPACK_SAYS_READ_ONLY: &str = "its DLPack tensor's READ_ONLY flag";

/// A caller's GPU array seen as bytes; a consumed DLPack tensor's deleter runs when it drops.
struct ArrayBytes {
    address: u64,
    len: usize,
    /// Why the array must not be written (what says so), if it must not.
    read_only: Option<&'static str>,
    /// The bytes are a copy the DLPack producer made (its IS_COPIED flag), not the array.
    copied: bool,
    _dlpack: Option<dlpack::Consumed>,
}

/// Finds the bytes of `obj` through DLPack (preferred: the producer makes them ready on the
/// consumer's stream, which a CUDA Array Interface v2 such as PyTorch's cannot say) or
/// `__cuda_array_interface__`, made ready for work on `work`. A DLPack array is read-only if its
/// versioned tensor's flags say so, or if it also has the interface and that says so; `inplace`:
/// its producer is asked for its own memory, not a copy (`copy=False`).
fn array_bytes(
    obj: &Bound<'_, PyAny>,
    engine: &GpuEngine,
    work: &WorkStream,
    inplace: bool,
) -> PyResult<ArrayBytes> {
    let cai = obj
        .getattr("__cuda_array_interface__")
        .ok()
        .and_then(|c| c.cast_into::<PyDict>().ok());
    if !(obj.hasattr("__dlpack__")? && obj.hasattr("__dlpack_device__")?) {
        return match cai {
            Some(cai) => cai_bytes(&cai, engine),
            None => Err(PyTypeError::new_err(format!(
                "a {} is not a GPU array: pass an object with __dlpack__ or \
                 __cuda_array_interface__ (a torch CUDA tensor, a CuPy array, a \
                 paraes.cuda.DeviceBuffer)",
                obj.get_type().name()?
            ))),
        };
    }
    let (kind, id): (i32, i64) = obj.call_method0("__dlpack_device__")?.extract()?;
    if kind != dlpack::KDL_CUDA && kind != dlpack::KDL_CUDA_MANAGED {
        return Err(PyValueError::new_err(format!(
            "the array lives on DLPack device type {kind} (2 is CUDA), not on the GPU: move it \
             there first (tensor.cuda(), cupy.asarray), or use paraes.seal_message for host bytes"
        )));
    }
    if id != 0 {
        return Err(dlpack::wrong_device(&id.to_string()));
    }
    // Fail closed: any true flag counts (1, numpy.bool_), and a data entry that cannot be
    // read is an error, not a writable array.
    let data = match &cai {
        Some(c) => c.get_item("data")?.filter(|d| !d.is_none()),
        None => None,
    };
    let cai_read_only = match data {
        Some(d) => d.get_item(1)?.is_truthy()?,
        None => false,
    };
    let kwargs = PyDict::new(obj.py());
    kwargs.set_item("stream", work.protocol_handle())?;
    let capsule = dlpack::capsule_of(obj, &kwargs, inplace.then_some(false))?;
    let consumed = dlpack::consume(&capsule)?;
    let read_only = if consumed.read_only {
        Some(DLPACK_SAYS_READ_ONLY)
    } else {
        cai_read_only.then_some(CAI_SAYS_READ_ONLY)
    };
    Ok(ArrayBytes {
        address: consumed.address,
        len: consumed.len,
        read_only,
        copied: consumed.copied,
        _dlpack: Some(consumed),
    })
}

/// The bytes a CUDA Array Interface (v2 or v3) dict describes; a v3 producer stream is
/// synchronized before paraes uses them, as the interface asks of a consumer.
fn cai_bytes(cai: &Bound<'_, PyDict>, engine: &GpuEngine) -> PyResult<ArrayBytes> {
    let get = |k: &str| cai.get_item(k);
    let version: i64 = get("version")?
        .map(|v| v.extract())
        .transpose()?
        .unwrap_or(0);
    if !(2..=3).contains(&version) {
        return Err(PyValueError::new_err(format!(
            "__cuda_array_interface__ version {version}: paraes.cuda reads versions 2 and 3; \
             upgrade the producing library"
        )));
    }
    if get("mask")?.is_some_and(|m| !m.is_none()) {
        return Err(PyValueError::new_err(
            "a masked CUDA array: pass the array without a mask",
        ));
    }
    let shape: Vec<u64> = get("shape")?
        .ok_or_else(|| PyValueError::new_err("__cuda_array_interface__ has no shape"))?
        .extract()?;
    let typestr: String = get("typestr")?
        .ok_or_else(|| PyValueError::new_err("__cuda_array_interface__ has no typestr"))?
        .extract()?;
    let itemsize: u64 = typestr
        .get(2..)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| PyValueError::new_err(format!("typestr {typestr:?} names no item size")))?;
    let data = get("data")?.filter(|d| !d.is_none());
    let (address, read_only): (u64, bool) = match data {
        Some(d) => d.extract()?,
        None => (0, false),
    };
    let strides: Option<Vec<i64>> = get("strides")?
        .filter(|s| !s.is_none())
        .map(|s| s.extract())
        .transpose()?;
    dlpack::check_contiguous(&shape, strides.as_deref(), itemsize as i64)?;
    let len = shape
        .iter()
        .try_fold(itemsize, |n, &d| n.checked_mul(d))
        .and_then(|n| usize::try_from(n).ok())
        .ok_or_else(|| PyValueError::new_err("the CUDA array is larger than memory"))?;
    if address == 0 && len > 0 {
        return Err(PyValueError::new_err(
            "__cuda_array_interface__ gives no device pointer: pass an array in GPU memory",
        ));
    }
    if version >= 3 {
        if let Some(stream) = get("stream")?.filter(|s| !s.is_none()) {
            let handle: usize = stream.extract()?;
            if handle == 0 {
                return Err(PyValueError::new_err(
                    "__cuda_array_interface__ stream 0 is not allowed by the interface (1 is the \
                     legacy default stream): fix the producer",
                ));
            }
            // SAFETY: the interface's contract: the producer's stream is live while its array
            // is being consumed.
            let producer = unsafe { borrow(engine, handle) };
            producer
                .synchronize()
                .map_err(|e| errors::Error::new_err(e.to_string()))?;
        }
    }
    Ok(ArrayBytes {
        address,
        len,
        read_only: read_only.then_some(CAI_SAYS_READ_ONLY),
        copied: false,
        _dlpack: None,
    })
}

/// A Cobblestone key, salt and context as the message's keys.
fn message_keys(key: &[u8], salt: &[u8], context: &[u8]) -> PyResult<MessageKeys> {
    let variant = match key.len() {
        16 => Variant::Cobblestone128,
        32 => Variant::Cobblestone256,
        n => {
            return Err(PyValueError::new_err(format!(
                "key= is 16 bytes (Cobblestone-128) or 32 bytes (Cobblestone-256) of uniformly \
                 random data, not {n} bytes"
            )))
        }
    };
    let salt: &[u8; SALT_LEN] = salt.try_into().map_err(|_| {
        PyValueError::new_err(format!(
            "salt= is {SALT_LEN} bytes (fresh and random for every message: os.urandom(24)), not {}",
            salt.len()
        ))
    })?;
    MessageKeys::derive(variant, key, salt, context).map_err(errors::message)
}

/// `paraes.cuda.seal` (`seal=True`) and `paraes.cuda.open` (`seal=False`): the bytes of a GPU
/// array sealed as Cobblestone chunk records, or records opened with every tag verified first
/// (cuda.py documents both).
#[pyfunction]
#[pyo3(signature = (obj, *, seal, key, salt, context = Vec::new(), first_chunk = 0, last = true, inplace = false, length = None, stream = None))]
#[allow(clippy::too_many_arguments)]
fn cuda_records(
    py: Python<'_>,
    obj: &Bound<'_, PyAny>,
    seal: bool,
    key: &Bound<'_, PyAny>,
    salt: Vec<u8>,
    context: Vec<u8>,
    first_chunk: u64,
    last: bool,
    inplace: bool,
    length: Option<usize>,
    stream: Option<&Bound<'_, PyAny>>,
) -> PyResult<Py<PyAny>> {
    // Extracted here, not by the signature: a later argument that fails to convert would
    // drop a signature-extracted Vec unwiped.
    let key = Zeroizing::new(key.extract::<Vec<u8>>()?);
    let keys = message_keys(&key, &salt, &context)?;
    let cipher = keys.chunks();
    let span = ChunkSpan {
        cipher: &cipher,
        first_index: first_chunk,
        last,
    };
    let engine = gpu()?;
    let work = WorkStream::new(engine, stream)?;
    let mut array = array_bytes(obj, engine, &work, inplace)?;
    // SAFETY: the protocols' contract: the producer keeps these bytes allocated while the
    // consumer uses them (the DLPack tensor until its deleter). Out of place with stream=, the
    // buffer the work makes holds the tensor and `obj` until that work is done; in place, the
    // caller keeps `obj` (which then holds the result) alive until its stream's work is done.
    let mut memory = unsafe { DeviceMemory::from_raw(&work.stream, array.address, array.len) }
        .map_err(device_error)?;
    if !inplace {
        if length.is_some() {
            return Err(PyValueError::new_err(
                "length= is for inplace=True: out of place, all of the array is sealed or opened",
            ));
        }
        let out_len = if seal {
            span.sealed_len(array.len)
        } else {
            span.opened_len(array.len)
        }
        .map_err(device_error)?;
        let own = engine.default_stream();
        let mut output = DeviceMemory::zeroed(&own, out_len)
            .map_err(|e| errors::Error::new_err(e.to_string()))?;
        py.detach(|| {
            if seal {
                engine.seal_device(&span, &memory, &mut output, &work.stream)
            } else {
                engine.open_device(&span, &memory, &mut output, &work.stream)
            }
        })
        .map_err(device_error)?;
        work.finish()?;
        // Work only queued on the caller's stream still reads the input: the buffer it makes
        // holds the input (object and DLPack tensor) until that work is done. (Released here,
        // a temporary passed straight in, or a copy the producer exported (IS_COPIED), was
        // freed by its deleter under the queued work.)
        let held = work
            .caller
            .is_some()
            .then(|| HeldInput::new(obj.clone().unbind(), array._dlpack.take()));
        drop(array);
        let ready_on = match work.caller {
            Some(_) => Some((
                work.protocol_handle(),
                work.stream
                    .record_event()
                    .map_err(|e| errors::Error::new_err(e.to_string()))?,
            )),
            None => None,
        };
        let buffer = DeviceBuffer::new(output, own, ready_on, held);
        return Ok(Py::new(py, buffer)?.into_any());
    }
    if let Some(says_so) = array.read_only {
        return Err(PyValueError::new_err(format!(
            "the array is read-only ({says_so} says so): seal or open it out of place \
             (inplace=False), or pass a writable array"
        )));
    }
    if array.copied {
        return Err(PyValueError::new_err(
            "the array's producer exported a copy of it (its DLPack tensor's IS_COPIED flag), \
             though asked for none (copy=False): work in place would seal or open the copy and \
             leave the array as it was; seal or open it out of place (inplace=False)",
        ));
    }
    let len = match (seal, length) {
        (_, Some(n)) => n,
        (false, None) => array.len,
        (true, None) => {
            return Err(PyValueError::new_err(
                "inplace=True sealing needs length=: the plaintext bytes at the array's start \
                 (the array must hold paraes.cuda.sealed_len(length) bytes)",
            ))
        }
    };
    let written = py
        .detach(|| {
            if seal {
                engine.seal_device_in_place(&span, &mut memory, len, &work.stream)
            } else {
                engine.open_device_in_place(&span, &mut memory, len, &work.stream)
            }
        })
        .map_err(device_error)?;
    work.finish()?;
    drop(array);
    Ok(written.into_pyobject(py)?.into_any().unbind())
}
