//! DLPack (dmlc/dlpack v0.8 `DLManagedTensor`, the Python spec's "dltensor" capsules) both ways
//! for `paraes.cuda`: a producer's capsule consumed (renamed "used_dltensor", its deleter called
//! once when paraes is done with the memory), and a `DeviceBuffer` exported as a capsule that
//! keeps the buffer alive until the consumer's deleter runs.

use std::ffi::{c_char, c_void, CStr};

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::ffi;
use pyo3::prelude::*;

/// The capsule names of the DLPack Python spec (unversioned tensors).
const DLTENSOR: &CStr = c"dltensor";
const USED_DLTENSOR: &CStr = c"used_dltensor";
/// `DLDeviceType::kDLCUDA`: memory of a CUDA device.
pub const KDL_CUDA: i32 = 2;
/// `DLDeviceType::kDLCUDAManaged`: CUDA managed (unified) memory, usable from the device.
pub const KDL_CUDA_MANAGED: i32 = 13;
/// `DLDataTypeCode::kDLUInt`.
const KDL_UINT: u8 = 1;

#[repr(C)]
#[derive(Clone, Copy)]
struct DlDevice {
    device_type: i32,
    device_id: i32,
}

#[repr(C)]
#[derive(Clone, Copy)]
struct DlDataType {
    code: u8,
    bits: u8,
    lanes: u16,
}

#[repr(C)]
struct DlTensor {
    data: *mut c_void,
    device: DlDevice,
    ndim: i32,
    dtype: DlDataType,
    shape: *mut i64,
    strides: *mut i64,
    byte_offset: u64,
}

#[repr(C)]
struct DlManagedTensor {
    dl_tensor: DlTensor,
    manager_ctx: *mut c_void,
    deleter: Option<unsafe extern "C" fn(*mut DlManagedTensor)>,
}

/// The bytes a consumed capsule describes; its deleter runs when this is dropped.
pub struct Consumed {
    managed: *mut DlManagedTensor,
    /// The device address of the first byte (`data + byte_offset`).
    pub address: u64,
    /// Bytes: itemsize x element count.
    pub len: usize,
}

impl Drop for Consumed {
    fn drop(&mut self) {
        // SAFETY: `managed` came from a "dltensor" capsule that this value took over (renamed
        // "used_dltensor"), so this is the one call of its deleter the spec gives the consumer.
        unsafe {
            if let Some(deleter) = (*self.managed).deleter {
                deleter(self.managed);
            }
        }
    }
}

/// Takes over the tensor of the "dltensor" capsule `capsule`: renames it "used_dltensor" (so
/// the producer's capsule destructor no longer frees it) and checks it is C-contiguous bytes of
/// device 0 (`ok_device` says which device types). The deleter runs when the result is dropped,
/// also when the checks refuse it.
pub fn consume(capsule: &Bound<'_, PyAny>) -> PyResult<Consumed> {
    let raw = capsule.as_ptr();
    // SAFETY: `raw` is a live object (borrowed from `capsule`); IsValid accepts any object.
    if unsafe { ffi::PyCapsule_IsValid(raw, DLTENSOR.as_ptr()) } != 1 {
        return Err(PyTypeError::new_err(
            "__dlpack__() did not return an unused \"dltensor\" capsule: pass a fresh array, \
             each capsule can be consumed only once",
        ));
    }
    // SAFETY: a valid capsule of that name (checked above) holds a DLManagedTensor.
    let managed = unsafe { ffi::PyCapsule_GetPointer(raw, DLTENSOR.as_ptr()) }.cast();
    // SAFETY: as above; renaming marks it consumed, as the spec asks of a consumer.
    if unsafe { ffi::PyCapsule_SetName(raw, USED_DLTENSOR.as_ptr()) } != 0 {
        return Err(PyErr::fetch(capsule.py()));
    }
    let mut consumed = Consumed {
        managed,
        address: 0,
        len: 0,
    };
    // SAFETY: the producer keeps the tensor, its shape and strides valid until its deleter.
    let tensor = unsafe { &(*consumed.managed).dl_tensor };
    describe(tensor).map(|(address, len)| {
        consumed.address = address;
        consumed.len = len;
        consumed
    })
}

/// The address and byte length of a tensor, refused unless C-contiguous on CUDA device 0.
fn describe(t: &DlTensor) -> PyResult<(u64, usize)> {
    let device = (t.device.device_type, t.device.device_id);
    if device.0 != KDL_CUDA && device.0 != KDL_CUDA_MANAGED {
        return Err(PyValueError::new_err(format!(
            "the DLPack tensor lives on device type {} (2 is CUDA): paraes.cuda takes GPU memory; \
             move it to the GPU first (tensor.cuda()), or use paraes.seal_message for host bytes",
            device.0
        )));
    }
    if device.1 != 0 {
        return Err(wrong_device(&device.1.to_string()));
    }
    let bits = u64::from(t.dtype.bits) * u64::from(t.dtype.lanes);
    if bits == 0 || !bits.is_multiple_of(8) || t.ndim < 0 {
        return Err(PyValueError::new_err(format!(
            "a DLPack tensor of {bits}-bit elements: paraes.cuda takes whole bytes; view it as uint8"
        )));
    }
    let ndim = t.ndim as usize;
    if ndim > 0 && t.shape.is_null() {
        return Err(PyValueError::new_err(
            "the DLPack tensor has dimensions but no shape (a null shape pointer): fix the producer",
        ));
    }
    let shape: &[i64] = if ndim == 0 {
        &[]
    } else {
        // SAFETY: the producer gives `ndim` dimensions (spec), valid until its deleter.
        unsafe { std::slice::from_raw_parts(t.shape, ndim) }
    };
    let strides = (!t.strides.is_null() && ndim > 0)
        // SAFETY: as `shape`.
        .then(|| unsafe { std::slice::from_raw_parts(t.strides, ndim) });
    // A negative dimension is malformed, not empty (it would seal an empty message).
    let extents: Vec<u64> = shape
        .iter()
        .map(|&d| u64::try_from(d))
        .collect::<Result<_, _>>()
        .map_err(|_| {
            PyValueError::new_err(format!(
                "the DLPack tensor has a negative dimension (shape {shape:?}): fix the producer"
            ))
        })?;
    // DLPack strides count elements, not bytes.
    let strides: Option<Vec<i64>> = strides.map(<[i64]>::to_vec);
    check_contiguous(&extents, strides.as_deref(), 1)?;
    // Checked: wrapped (release builds) a huge shape could pass as a few bytes, or none.
    let too_large = || PyValueError::new_err("the DLPack tensor is larger than memory");
    let len = extents
        .iter()
        .try_fold(bits / 8, |n, &d| n.checked_mul(d))
        .and_then(|n| usize::try_from(n).ok())
        .ok_or_else(too_large)?;
    let address = (t.data as u64)
        .checked_add(t.byte_offset)
        .filter(|a| a.checked_add(len as u64).is_some())
        .ok_or_else(too_large)?;
    Ok((address, len))
}

/// Refuses strides (in units of `unit` bytes per stride step) that are not C-contiguous.
pub fn check_contiguous(shape: &[u64], strides: Option<&[i64]>, unit: i64) -> PyResult<()> {
    let Some(strides) = strides else {
        return Ok(());
    };
    if strides.len() != shape.len() {
        return Err(PyValueError::new_err(format!(
            "the array gives {} strides for {} dimensions: its producer describes it wrongly; \
             pass a contiguous copy made by the producing library",
            strides.len(),
            shape.len()
        )));
    }
    if shape.contains(&0) {
        return Ok(());
    }
    let mut expected = unit;
    for (&extent, &stride) in shape.iter().zip(strides).rev() {
        if extent != 1 && stride != expected {
            return Err(PyValueError::new_err(
                "the array is not C-contiguous (its strides skip or reorder elements): pass a \
                 contiguous copy (tensor.contiguous(), cupy.ascontiguousarray)",
            ));
        }
        expected = expected.saturating_mul(extent as i64);
    }
    Ok(())
}

/// The error for any device but 0.
pub fn wrong_device(device: &str) -> PyErr {
    PyValueError::new_err(format!(
        "device {device}: paraes.cuda runs on device 0 only; select another GPU with \
         CUDA_VISIBLE_DEVICES"
    ))
}

/// An exported tensor: the DLManagedTensor first, so its address is the context's.
#[repr(C)]
struct Export {
    managed: DlManagedTensor,
    shape: [i64; 1],
    /// A strong reference to the exported object, released by the deleter.
    owner: *mut ffi::PyObject,
}

/// The exported tensor's deleter: releases the owner and frees the tensor.
unsafe extern "C" fn export_deleter(managed: *mut DlManagedTensor) {
    // SAFETY: `managed` is the first field of a boxed Export made by `export` (repr(C)), and
    // this deleter runs once (by the consumer, or by the capsule's destructor if unconsumed).
    let export = unsafe { Box::from_raw(managed.cast::<Export>()) };
    Python::attach(|_| {
        // SAFETY: `owner` is the strong reference `export` took; the GIL is held.
        unsafe { ffi::Py_DecRef(export.owner) }
    });
}

/// The capsule's destructor: frees the tensor unless a consumer took it (renamed it).
unsafe extern "C" fn capsule_destructor(capsule: *mut ffi::PyObject) {
    // SAFETY: called by Python with the GIL held on the capsule being destroyed.
    unsafe {
        if ffi::PyCapsule_IsValid(capsule, DLTENSOR.as_ptr()) == 1 {
            let managed = ffi::PyCapsule_GetPointer(capsule, DLTENSOR.as_ptr());
            export_deleter(managed.cast());
        }
    }
}

/// A "dltensor" capsule of `len` bytes at `address` on CUDA device 0 (one-dimensional uint8),
/// holding a strong reference to `owner` until the consumer's deleter runs.
pub fn export<'py>(
    owner: &Bound<'py, PyAny>,
    address: u64,
    len: usize,
) -> PyResult<Bound<'py, PyAny>> {
    let export = Box::new(Export {
        managed: DlManagedTensor {
            dl_tensor: DlTensor {
                data: std::ptr::without_provenance_mut(address as usize),
                device: DlDevice {
                    device_type: KDL_CUDA,
                    device_id: 0,
                },
                ndim: 1,
                dtype: DlDataType {
                    code: KDL_UINT,
                    bits: 8,
                    lanes: 1,
                },
                shape: std::ptr::null_mut(),
                strides: std::ptr::null_mut(),
                byte_offset: 0,
            },
            manager_ctx: std::ptr::null_mut(),
            deleter: Some(export_deleter),
        },
        shape: [len as i64],
        owner: owner.clone().into_ptr(),
    });
    let raw = Box::into_raw(export);
    // SAFETY: `raw` is a live, uniquely owned Export; its shape field lives as long as it does.
    unsafe {
        (*raw).managed.dl_tensor.shape = (*raw).shape.as_mut_ptr();
        (*raw).managed.manager_ctx = raw.cast();
    }
    let name: *const c_char = DLTENSOR.as_ptr();
    // SAFETY: a static name; on failure the tensor is freed by its own deleter.
    let capsule = unsafe { ffi::PyCapsule_New(raw.cast(), name, Some(capsule_destructor)) };
    if capsule.is_null() {
        // SAFETY: the capsule was not made, so nothing else owns `raw`.
        unsafe { export_deleter(raw.cast()) };
        return Err(PyErr::fetch(owner.py()));
    }
    // SAFETY: a new reference, just made.
    Ok(unsafe { Bound::from_owned_ptr(owner.py(), capsule) })
}
