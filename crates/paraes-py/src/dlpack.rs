//! DLPack both ways for `paraes.cuda`, in its two layouts: unversioned (dmlc/dlpack v0.8
//! `DLManagedTensor`, "dltensor" capsules) and versioned (DLPack 1.x `DLManagedTensorVersioned`,
//! "dltensor_versioned" capsules, whose flags can say the tensor is read-only or a copy). A
//! producer is asked for a versioned tensor (`__dlpack__(max_version=(1, 0))`, with `copy=False`
//! for work in place; the call without them for producers that refuse the keywords), and either
//! capsule is consumed: renamed "used_…", its
//! deleter called once when paraes is done with the memory (a versioned tensor of another major
//! version is refused, and released at once). A `DeviceBuffer` is exported as a versioned
//! capsule when its consumer gives `max_version` of major 1 or more, else an unversioned one;
//! either keeps the buffer alive until the consumer's deleter runs.

use std::ffi::{c_void, CStr};
use std::ptr::addr_of;

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::PyDict;

/// `DLDeviceType::kDLCUDA`: memory of a CUDA device.
pub const KDL_CUDA: i32 = 2;
/// `DLDeviceType::kDLCUDAManaged`: CUDA managed (unified) memory, usable from the device.
pub const KDL_CUDA_MANAGED: i32 = 13;
/// `DLDataTypeCode::kDLUInt`.
const KDL_UINT: u8 = 1;
/// The DLPack version paraes reads and writes in versioned tensors (1.0: the layout of 1.x).
const DLPACK_VERSION: DlPackVersion = DlPackVersion { major: 1, minor: 0 };
/// `DLPACK_FLAG_BITMASK_READ_ONLY`: the producer's memory must not be written.
const FLAG_READ_ONLY: u64 = 1 << 0;
/// `DLPACK_FLAG_BITMASK_IS_COPIED`: the tensor is a copy the producer made, freed by its deleter
/// (writing it leaves the producer's array as it was).
const FLAG_IS_COPIED: u64 = 1 << 1;

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

/// DLPack 0.x's managed tensor ("dltensor" capsules).
#[repr(C)]
struct DlManagedTensor {
    dl_tensor: DlTensor,
    manager_ctx: *mut c_void,
    deleter: Option<unsafe extern "C" fn(*mut DlManagedTensor)>,
}

#[repr(C)]
#[derive(Clone, Copy)]
struct DlPackVersion {
    major: u32,
    minor: u32,
}

/// DLPack 1.x's managed tensor ("dltensor_versioned" capsules). Whatever the major version,
/// `version` and `deleter` stay where they are (the spec), so a tensor of another major
/// version can still be released.
#[repr(C)]
struct DlManagedTensorVersioned {
    version: DlPackVersion,
    manager_ctx: *mut c_void,
    deleter: Option<unsafe extern "C" fn(*mut DlManagedTensorVersioned)>,
    flags: u64,
    dl_tensor: DlTensor,
}

/// What paraes does with either layout of managed tensor, so that consuming and exporting are
/// written once for both.
trait ManagedTensor: Sized {
    /// The capsule name of an unconsumed tensor, and of one a consumer took.
    const NAME: &'static CStr;
    const USED_NAME: &'static CStr;

    /// A tensor with no manager context yet, released by `deleter`.
    fn new(dl_tensor: DlTensor, deleter: unsafe extern "C" fn(*mut Self)) -> Self;

    /// The tensor's version (None: unversioned).
    ///
    /// # Safety
    /// `managed` points to a live tensor of this layout, or of a versioned one of another major
    /// version (only fields every major version keeps are read).
    unsafe fn version(managed: *const Self) -> Option<DlPackVersion>;

    /// The tensor's deleter.
    ///
    /// # Safety
    /// As `version`.
    unsafe fn deleter(managed: *const Self) -> Option<unsafe extern "C" fn(*mut Self)>;

    fn dl_tensor(&self) -> &DlTensor;
    fn dl_tensor_mut(&mut self) -> &mut DlTensor;
    fn set_manager_ctx(&mut self, manager_ctx: *mut c_void);
    /// The `DLPACK_FLAG_BITMASK_…` flags the producer gives (0 where the layout has none).
    fn flags(&self) -> u64;
}

/// The members of [`ManagedTensor`] that only read or write a field both layouts have under
/// the same name (`deleter`, `dl_tensor`, `manager_ctx`): written once, expanded in each impl.
macro_rules! same_named_fields {
    () => {
        unsafe fn deleter(managed: *const Self) -> Option<unsafe extern "C" fn(*mut Self)> {
            // SAFETY: the caller's contract: `managed` is a live tensor of this layout, or (a
            // versioned one) of another major version, which keeps `deleter` where 1.x does.
            unsafe { addr_of!((*managed).deleter).read() }
        }

        fn dl_tensor(&self) -> &DlTensor {
            &self.dl_tensor
        }

        fn dl_tensor_mut(&mut self) -> &mut DlTensor {
            &mut self.dl_tensor
        }

        fn set_manager_ctx(&mut self, manager_ctx: *mut c_void) {
            self.manager_ctx = manager_ctx;
        }
    };
}

impl ManagedTensor for DlManagedTensor {
    const NAME: &'static CStr = c"dltensor";
    const USED_NAME: &'static CStr = c"used_dltensor";

    fn new(dl_tensor: DlTensor, deleter: unsafe extern "C" fn(*mut Self)) -> Self {
        DlManagedTensor {
            dl_tensor,
            manager_ctx: std::ptr::null_mut(),
            deleter: Some(deleter),
        }
    }

    unsafe fn version(_: *const Self) -> Option<DlPackVersion> {
        None
    }

    same_named_fields!();

    fn flags(&self) -> u64 {
        0 // DLPack 0.x has no flags: its tensors are writable, and not copies.
    }
}

impl ManagedTensor for DlManagedTensorVersioned {
    const NAME: &'static CStr = c"dltensor_versioned";
    const USED_NAME: &'static CStr = c"used_dltensor_versioned";

    fn new(dl_tensor: DlTensor, deleter: unsafe extern "C" fn(*mut Self)) -> Self {
        DlManagedTensorVersioned {
            version: DLPACK_VERSION,
            manager_ctx: std::ptr::null_mut(),
            deleter: Some(deleter),
            flags: 0, // a DeviceBuffer is writable and exported without a copy
            dl_tensor,
        }
    }

    unsafe fn version(managed: *const Self) -> Option<DlPackVersion> {
        // SAFETY: the caller's contract; `version` is where every major version keeps it.
        Some(unsafe { addr_of!((*managed).version).read() })
    }

    same_named_fields!();

    fn flags(&self) -> u64 {
        self.flags
    }
}

/// The bytes a consumed capsule describes; its deleter runs when this is dropped.
pub struct Consumed {
    managed: *mut c_void,
    /// `release::<M>` of the layout `managed` has.
    release: unsafe fn(*mut c_void),
    /// The device address of the first byte (`data + byte_offset`).
    pub address: u64,
    /// Bytes: itemsize x element count.
    pub len: usize,
    /// The producer says the memory must not be written (a versioned tensor's flag).
    pub read_only: bool,
    /// The producer says the memory is a copy it made, not its array (a versioned tensor's
    /// flag): what is written there is lost when the deleter frees it.
    pub copied: bool,
}

impl Drop for Consumed {
    fn drop(&mut self) {
        // SAFETY: `managed` came from a capsule that this value took over (renamed "used_…"),
        // and `release` was chosen for its layout; this is the one release the spec gives the
        // consumer.
        unsafe { (self.release)(self.managed) }
    }
}

/// Calls the deleter of the tensor `managed` of layout `M`.
///
/// # Safety
/// `managed` is a tensor of layout `M` (any major version, if versioned) that the caller owns
/// and releases here, once.
unsafe fn release<M: ManagedTensor>(managed: *mut c_void) {
    let managed = managed.cast::<M>();
    // SAFETY: the caller's contract; the spec makes calling the deleter safe whatever the
    // tensor's major version.
    unsafe {
        if let Some(deleter) = M::deleter(managed) {
            deleter(managed);
        }
    }
}

/// The capsule of `obj.__dlpack__`, asked for a versioned tensor (`max_version=(1, 0)`) with
/// `kwargs` (the consumer's stream) and, unless None, `copy` (False: the producer's own memory
/// or an error, as for work in place); a producer that refuses those keywords with TypeError
/// (one older than DLPack 1.0) is asked again with `kwargs` alone. If that fails too, the first
/// TypeError is its error's cause.
pub fn capsule_of<'py>(
    obj: &Bound<'py, PyAny>,
    kwargs: &Bound<'py, PyDict>,
    copy: Option<bool>,
) -> PyResult<Bound<'py, PyAny>> {
    let py = obj.py();
    let versioned = kwargs.copy()?;
    versioned.set_item("max_version", (DLPACK_VERSION.major, DLPACK_VERSION.minor))?;
    if let Some(copy) = copy {
        versioned.set_item("copy", copy)?;
    }
    match obj.call_method("__dlpack__", (), Some(&versioned)) {
        Err(first) if first.is_instance_of::<PyTypeError>(py) => obj
            .call_method("__dlpack__", (), Some(kwargs))
            .inspect_err(|e| e.set_cause(py, Some(first))),
        result => result,
    }
}

/// Takes over the tensor of the "dltensor" or "dltensor_versioned" capsule `capsule`: renames
/// it "used_…" (so the producer's capsule destructor no longer frees it) and checks it is
/// C-contiguous bytes of device 0 (and, versioned, of DLPack 1.x). The deleter runs when the
/// result is dropped, also when the checks refuse it.
pub fn consume(capsule: &Bound<'_, PyAny>) -> PyResult<Consumed> {
    // SAFETY: `capsule` is a live object; IsValid accepts any object.
    let versioned = unsafe {
        ffi::PyCapsule_IsValid(capsule.as_ptr(), DlManagedTensorVersioned::NAME.as_ptr())
    } == 1;
    if versioned {
        consume_as::<DlManagedTensorVersioned>(capsule)
    } else {
        consume_as::<DlManagedTensor>(capsule)
    }
}

/// `consume` of a capsule that holds a tensor of layout `M` (refused unless it is named so).
fn consume_as<M: ManagedTensor>(capsule: &Bound<'_, PyAny>) -> PyResult<Consumed> {
    let raw = capsule.as_ptr();
    // SAFETY: `raw` is a live object (borrowed from `capsule`); IsValid accepts any object.
    if unsafe { ffi::PyCapsule_IsValid(raw, M::NAME.as_ptr()) } != 1 {
        return Err(PyTypeError::new_err(
            "__dlpack__() did not return an unused \"dltensor\" or \"dltensor_versioned\" \
             capsule: pass a fresh array, each capsule can be consumed only once",
        ));
    }
    // SAFETY: a valid capsule of that name (checked above) holds a tensor of layout M.
    let managed = unsafe { ffi::PyCapsule_GetPointer(raw, M::NAME.as_ptr()) }.cast::<M>();
    // SAFETY: as above; renaming marks it consumed, as the spec asks of a consumer.
    if unsafe { ffi::PyCapsule_SetName(raw, M::USED_NAME.as_ptr()) } != 0 {
        return Err(PyErr::fetch(capsule.py()));
    }
    let mut consumed = Consumed {
        managed: managed.cast(),
        release: release::<M>,
        address: 0,
        len: 0,
        read_only: false,
        copied: false,
    };
    // SAFETY: the producer keeps the tensor valid until its deleter; only the version is read
    // before it is known to be of a layout paraes reads.
    if let Some(version) = unsafe { M::version(managed) } {
        if version.major != DLPACK_VERSION.major {
            return Err(PyValueError::new_err(format!(
                "a DLPack {}.{} tensor: paraes.cuda reads DLPack 1.x tensors (and unversioned \
                 ones); pass an array from a library that exports DLPack 1.x, or upgrade paraes",
                version.major, version.minor
            )));
        }
    }
    // SAFETY: the producer keeps the tensor, its shape and strides valid until its deleter, and
    // its layout is M's (checked above); paraes only reads it.
    let tensor = unsafe { &*managed };
    consumed.read_only = tensor.flags() & FLAG_READ_ONLY != 0;
    consumed.copied = tensor.flags() & FLAG_IS_COPIED != 0;
    describe(tensor.dl_tensor()).map(|(address, len)| {
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

/// An exported tensor: the managed tensor (of layout `M`) first, so its address is the
/// context's.
#[repr(C)]
struct Export<M> {
    managed: M,
    shape: [i64; 1],
    /// `[1]`: newer dlpack.h allows NULL strides (C-contiguous) only for 0 dimensions.
    strides: [i64; 1],
    /// A strong reference to the exported object, released by the deleter.
    owner: *mut ffi::PyObject,
}

/// The exported tensor's deleter: releases the owner and frees the tensor. A consumer may run
/// it after Python finalized (a C++ static released at exit): then the owner is leaked, as the
/// DLPack Python spec's example deleter does, since attaching would panic (an abort in an
/// extern "C" function) and there is no interpreter left to free it in.
///
/// # Safety
/// `managed` is the tensor of an `Export<M>` made by `export_as`, released here once.
unsafe extern "C" fn export_deleter<M: ManagedTensor>(managed: *mut M) {
    // SAFETY: `managed` is the first field of a boxed Export<M> made by `export_as` (repr(C)),
    // and this deleter runs once (by the consumer, or by the capsule's destructor if
    // unconsumed).
    let export = unsafe { Box::from_raw(managed.cast::<Export<M>>()) };
    let owner = export.owner;
    // None (Python is not initialized, or finalizing): the owner is leaked.
    let _released = Python::try_attach(|_| {
        // SAFETY: `owner` is the strong reference `export_as` took; the thread is attached.
        unsafe { ffi::Py_DecRef(owner) }
    });
}

/// The capsule's destructor: frees the tensor unless a consumer took it (renamed it).
///
/// # Safety
/// Called by Python on a capsule made by `export_as::<M>`.
unsafe extern "C" fn capsule_destructor<M: ManagedTensor>(capsule: *mut ffi::PyObject) {
    // SAFETY: called by Python with the GIL held on the capsule being destroyed; still named
    // M::NAME, it holds the Export<M> that `export_as` made and no consumer took.
    unsafe {
        if ffi::PyCapsule_IsValid(capsule, M::NAME.as_ptr()) == 1 {
            let managed = ffi::PyCapsule_GetPointer(capsule, M::NAME.as_ptr());
            export_deleter::<M>(managed.cast());
        }
    }
}

/// A capsule of `len` bytes at `address` on CUDA device 0 (one-dimensional uint8), holding a
/// strong reference to `owner` until the consumer's deleter runs: "dltensor_versioned" (DLPack
/// 1.0) when the consumer's `max_version` has major version 1 or more, else "dltensor".
pub fn export<'py>(
    owner: &Bound<'py, PyAny>,
    address: u64,
    len: usize,
    max_version: Option<(u32, u32)>,
) -> PyResult<Bound<'py, PyAny>> {
    match max_version {
        Some((major, _)) if major >= DLPACK_VERSION.major => {
            export_as::<DlManagedTensorVersioned>(owner, address, len)
        }
        _ => export_as::<DlManagedTensor>(owner, address, len),
    }
}

/// `export` in the capsule of layout `M`.
fn export_as<'py, M: ManagedTensor>(
    owner: &Bound<'py, PyAny>,
    address: u64,
    len: usize,
) -> PyResult<Bound<'py, PyAny>> {
    let dl_tensor = DlTensor {
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
    };
    let export = Box::new(Export {
        managed: M::new(dl_tensor, export_deleter::<M>),
        shape: [len as i64],
        strides: [1],
        owner: owner.clone().into_ptr(),
    });
    let raw = Box::into_raw(export);
    // SAFETY: `raw` is a live, uniquely owned Export; its shape and strides fields live as long
    // as it does.
    unsafe {
        let dl_tensor = (*raw).managed.dl_tensor_mut();
        dl_tensor.shape = (*raw).shape.as_mut_ptr();
        dl_tensor.strides = (*raw).strides.as_mut_ptr();
        (*raw).managed.set_manager_ctx(raw.cast());
    }
    // SAFETY: a static name; on failure the tensor is freed by its own deleter.
    let capsule =
        unsafe { ffi::PyCapsule_New(raw.cast(), M::NAME.as_ptr(), Some(capsule_destructor::<M>)) };
    if capsule.is_null() {
        // SAFETY: the capsule was not made, so nothing else owns `raw`.
        unsafe { export_deleter::<M>(raw.cast()) };
        return Err(PyErr::fetch(owner.py()));
    }
    // SAFETY: a new reference, just made.
    Ok(unsafe { Bound::from_owned_ptr(owner.py(), capsule) })
}
