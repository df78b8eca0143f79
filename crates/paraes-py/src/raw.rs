//! The raw primitives: AES-CTR and AES-ECB over any buffer (bytes, bytearray, memoryview, numpy
//! arrays: any C-contiguous buffer, taken as its bytes), into a new `bytes` or in place; bare
//! C2SP Cobblestone messages; and the small native helpers of `paraes.pyaes` (one AES block, and
//! pyaes's CTR with its `Counter` advanced in place).
//!
//! A buffer's export is held for the whole call: while it is exported, its owner cannot resize
//! or free it (a `bytearray` raises `BufferError`), so the memory stays valid while the GIL is
//! released. A writer that changes the bytes meanwhile from another thread only changes the
//! result, as with any C extension.

use std::ffi::c_char;

use paraes_core::aes::AesImpl;
use paraes_core::cobblestone::{self, MessageKeys, Variant};
use paraes_core::container::random_bytes;
use paraes_core::engine::{Direction, Engine, Job};
use paraes_core::pipeline::{self, Segment, Stages, StreamSpec};
use paraes_core::{ExpandedKey, Key};
use pyo3::exceptions::PyValueError;
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList, PyTuple};
use zeroize::Zeroizing;

use crate::buffer::Exported;
use crate::errors;
use crate::{DETACH_FROM, THREADED_FROM};

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(aes_ctr, m)?)?;
    m.add_function(wrap_pyfunction!(aes_ctr_inplace, m)?)?;
    m.add_function(wrap_pyfunction!(aes_ecb_encrypt, m)?)?;
    m.add_function(wrap_pyfunction!(aes_ecb_decrypt, m)?)?;
    m.add_function(wrap_pyfunction!(aes_ecb_encrypt_inplace, m)?)?;
    m.add_function(wrap_pyfunction!(aes_ecb_decrypt_inplace, m)?)?;
    m.add_function(wrap_pyfunction!(seal_message, m)?)?;
    m.add_function(wrap_pyfunction!(open_message, m)?)?;
    m.add_function(wrap_pyfunction!(pyaes_ctr, m)?)?;
    m.add_function(wrap_pyfunction!(xor, m)?)?;
    // recipe-example: python-function (its registration)
    m.add_function(wrap_pyfunction!(recipe_example, m)?)?;
    m.add_class::<BlockCipher>()?;
    m.add("DETACH_FROM", DETACH_FROM)?;
    Ok(())
}

/// A new `bytes` of `len` bytes and its memory, which only the caller may write until the
/// object is handed out.
fn fresh_bytes(py: Python<'_>, len: usize) -> PyResult<(Bound<'_, PyBytes>, &mut [u8])> {
    // SAFETY: with a null source, `PyBytes_FromStringAndSize` allocates a new object of `len`
    // bytes (only size 0 is a shared singleton, and nothing is written into it then); we hold
    // the only reference, and the slice is used before the object is returned to Python.
    unsafe {
        let ptr =
            ffi::PyBytes_FromStringAndSize(std::ptr::null::<c_char>(), len as ffi::Py_ssize_t);
        let obj = Bound::from_owned_ptr_or_err(py, ptr)?.cast_into_unchecked::<PyBytes>();
        if len == 0 {
            return Ok((obj, &mut []));
        }
        let data = ffi::PyBytes_AsString(ptr).cast::<u8>();
        Ok((obj, std::slice::from_raw_parts_mut(data, len)))
    }
}

/// A new `bytes` holding a copy of `src`, and its memory (see [`fresh_bytes`]).
fn bytes_copy<'py>(py: Python<'py>, src: &[u8]) -> PyResult<(Bound<'py, PyBytes>, &'py mut [u8])> {
    let (obj, out) = fresh_bytes(py, src.len())?;
    out.copy_from_slice(src);
    // SAFETY: the slice points into `obj`'s own storage, which lives as long as `obj`; the
    // caller keeps `obj` alive while it uses the slice (the lifetime is only widened to 'py
    // so both can be returned together).
    let out = unsafe { std::slice::from_raw_parts_mut(out.as_mut_ptr(), out.len()) };
    Ok((obj, out))
}

/// An AES key from a buffer (16, 24 or 32 bytes).
pub fn aes_key(obj: &Bound<'_, PyAny>) -> PyResult<Key> {
    let exported = Exported::new(obj, "the key")?;
    let bytes = Zeroizing::new(exported.bytes().to_vec());
    Key::new(&bytes).map_err(|e| PyValueError::new_err(e.to_string()))
}

/// A 16-byte counter block from a buffer.
fn counter_block(obj: &Bound<'_, PyAny>) -> PyResult<[u8; 16]> {
    let exported = Exported::new(obj, "the IV")?;
    exported.bytes().try_into().map_err(|_| {
        PyValueError::new_err(format!(
            "the IV (initial counter block) is 16 bytes, not {}",
            exported.len()
        ))
    })
}

/// Runs `job` over `buf` on the engine, without the GIL when the buffer is large.
fn run_job(py: Python<'_>, job: &Job<'_>, buf: &mut [u8]) -> PyResult<()> {
    let engine = crate::engine()?;
    let result = if buf.len() >= DETACH_FROM {
        py.detach(|| engine.process(job, buf))
    } else {
        engine.process(job, buf)
    };
    result.map_err(|e| PyValueError::new_err(e.to_string()))
}

/// AES-CTR of `data` under `key` from counter block `iv` (a 128-bit big-endian counter, as NIST
/// SP 800-38A and OpenSSL: block i uses iv + i), starting `offset` bytes into the stream.
/// Returns new bytes; encryption and decryption are the same operation.
#[pyfunction]
#[pyo3(signature = (key, iv, data, *, offset = 0))]
fn aes_ctr<'py>(
    py: Python<'py>,
    key: &Bound<'_, PyAny>,
    iv: &Bound<'_, PyAny>,
    data: &Bound<'_, PyAny>,
    offset: u64,
) -> PyResult<Bound<'py, PyBytes>> {
    let key = aes_key(key)?.expand();
    let iv = counter_block(iv)?;
    let input = Exported::new(data, "data")?;
    let (out, buf) = bytes_copy(py, input.bytes())?;
    run_job(py, &Job::ctr(&key, iv, offset), buf)?;
    Ok(out)
}

/// AES-CTR in place over a writable buffer (see `aes_ctr`).
#[pyfunction]
#[pyo3(signature = (key, iv, buffer, *, offset = 0))]
fn aes_ctr_inplace(
    py: Python<'_>,
    key: &Bound<'_, PyAny>,
    iv: &Bound<'_, PyAny>,
    buffer: &Bound<'_, PyAny>,
    offset: u64,
) -> PyResult<()> {
    let key = aes_key(key)?.expand();
    let iv = counter_block(iv)?;
    let mut exported = Exported::new(buffer, "buffer")?;
    run_job(
        py,
        &Job::ctr(&key, iv, offset),
        exported.bytes_mut("buffer")?,
    )
}

fn ecb<'py>(
    py: Python<'py>,
    key: &Bound<'_, PyAny>,
    data: &Bound<'_, PyAny>,
    direction: Direction,
) -> PyResult<Bound<'py, PyBytes>> {
    let key = aes_key(key)?.expand();
    let input = Exported::new(data, "data")?;
    let (out, buf) = bytes_copy(py, input.bytes())?;
    run_job(py, &Job::ecb(&key, direction), buf)?;
    Ok(out)
}

fn ecb_inplace(
    py: Python<'_>,
    key: &Bound<'_, PyAny>,
    buffer: &Bound<'_, PyAny>,
    direction: Direction,
) -> PyResult<()> {
    let key = aes_key(key)?.expand();
    let mut exported = Exported::new(buffer, "buffer")?;
    run_job(
        py,
        &Job::ecb(&key, direction),
        exported.bytes_mut("buffer")?,
    )
}

/// AES-ECB encryption of whole 16-byte blocks (no padding). Returns new bytes.
#[pyfunction]
fn aes_ecb_encrypt<'py>(
    py: Python<'py>,
    key: &Bound<'_, PyAny>,
    data: &Bound<'_, PyAny>,
) -> PyResult<Bound<'py, PyBytes>> {
    ecb(py, key, data, Direction::Encrypt)
}

/// AES-ECB decryption of whole 16-byte blocks (no padding). Returns new bytes.
#[pyfunction]
fn aes_ecb_decrypt<'py>(
    py: Python<'py>,
    key: &Bound<'_, PyAny>,
    data: &Bound<'_, PyAny>,
) -> PyResult<Bound<'py, PyBytes>> {
    ecb(py, key, data, Direction::Decrypt)
}

/// AES-ECB encryption in place over a writable buffer of whole blocks.
#[pyfunction]
fn aes_ecb_encrypt_inplace(
    py: Python<'_>,
    key: &Bound<'_, PyAny>,
    buffer: &Bound<'_, PyAny>,
) -> PyResult<()> {
    ecb_inplace(py, key, buffer, Direction::Encrypt)
}

/// AES-ECB decryption in place over a writable buffer of whole blocks.
#[pyfunction]
fn aes_ecb_decrypt_inplace(
    py: Python<'_>,
    key: &Bound<'_, PyAny>,
    buffer: &Bound<'_, PyAny>,
) -> PyResult<()> {
    ecb_inplace(py, key, buffer, Direction::Decrypt)
}

/// The Cobblestone variant of a message key: 16 bytes for -128, 32 for -256.
fn message_key(key: &Bound<'_, PyAny>) -> PyResult<(Variant, Zeroizing<Vec<u8>>)> {
    let exported = Exported::new(key, "the key")?;
    let bytes = Zeroizing::new(exported.bytes().to_vec());
    let variant = match bytes.len() {
        16 => Variant::Cobblestone128,
        32 => Variant::Cobblestone256,
        n => {
            return Err(PyValueError::new_err(format!(
                "a Cobblestone key is 16 bytes (Cobblestone-128) or 32 bytes (Cobblestone-256) of uniformly random data, not {n} bytes"
            )))
        }
    };
    Ok((variant, bytes))
}

/// Seals `plaintext` as one bare C2SP chunked-encryption message (Cobblestone-128 for a 16-byte
/// key, -256 for a 32-byte one) with a fresh random salt: what pyca/cryptography's
/// `Cobblestone*Encryptor(key, context)` makes, and `paraes enc --format cobblestone`.
#[pyfunction]
#[pyo3(signature = (key, plaintext, *, context = None))]
fn seal_message<'py>(
    py: Python<'py>,
    key: &Bound<'_, PyAny>,
    plaintext: &Bound<'_, PyAny>,
    context: Option<&Bound<'_, PyAny>>,
) -> PyResult<Bound<'py, PyBytes>> {
    let (variant, key) = message_key(key)?;
    let context = message_context(context)?;
    let input = Exported::new(plaintext, "plaintext")?;
    let data = input.bytes();
    let mut salt = [0u8; cobblestone::SALT_LEN];
    random_bytes(&mut salt).map_err(|e| errors::Error::new_err(e.to_string()))?;
    if data.len() < THREADED_FROM {
        let sealed =
            cobblestone::seal(variant, &key, &salt, &context, data).map_err(errors::message)?;
        return Ok(PyBytes::new(py, &sealed));
    }
    let keys = MessageKeys::derive(variant, &key, &salt, &context).map_err(errors::message)?;
    let (out, buf) = fresh_bytes(py, cobblestone::sealed_len(data.len() as u64) as usize)?;
    let (prefix, records) = buf.split_at_mut(cobblestone::PREFIX_LEN);
    prefix[..cobblestone::SALT_LEN].copy_from_slice(&salt);
    prefix[cobblestone::SALT_LEN..].copy_from_slice(keys.commitment());
    let names = ("the plaintext", "the message");
    run_message(py, &keys, Direction::Encrypt, data, records, names)?;
    Ok(out)
}

/// Opens a bare C2SP chunked-encryption message: checks the key commitment, then every chunk,
/// before any plaintext is returned.
#[pyfunction]
#[pyo3(signature = (key, message, *, context = None))]
fn open_message<'py>(
    py: Python<'py>,
    key: &Bound<'_, PyAny>,
    message: &Bound<'_, PyAny>,
    context: Option<&Bound<'_, PyAny>>,
) -> PyResult<Bound<'py, PyBytes>> {
    let (variant, key) = message_key(key)?;
    let context = message_context(context)?;
    let input = Exported::new(message, "message")?;
    let data = input.bytes();
    if data.len() < THREADED_FROM {
        let opened = cobblestone::open(variant, &key, &context, data).map_err(errors::message)?;
        return Ok(PyBytes::new(py, &opened));
    }
    let (prefix, records) = data.split_at(cobblestone::PREFIX_LEN);
    let salt: &[u8; cobblestone::SALT_LEN] = prefix[..cobblestone::SALT_LEN]
        .try_into()
        .expect("24 bytes");
    let keys = MessageKeys::derive(variant, &key, salt, &context).map_err(errors::message)?;
    if !keys.commits_to(&prefix[cobblestone::SALT_LEN..]) {
        return Err(errors::message(
            cobblestone::CobblestoneError::CommitmentMismatch,
        ));
    }
    let Some((chunks, last_len)) = cobblestone::chunk_count(records.len() as u64) else {
        return Err(errors::message(cobblestone::CobblestoneError::Truncated));
    };
    let plaintext_len = (chunks - 1) * cobblestone::CHUNK_LEN as u64 + last_len;
    let (out, buf) = fresh_bytes(py, plaintext_len as usize)?;
    let names = ("the message", "the plaintext");
    run_message(py, &keys, Direction::Decrypt, records, buf, names)?;
    Ok(out)
}

/// The `context` argument of `seal_message` and `open_message`: its bytes, or none.
fn message_context(context: Option<&Bound<'_, PyAny>>) -> PyResult<Vec<u8>> {
    match context {
        Some(c) => Ok(Exported::new(c, "the context")?.bytes().to_vec()),
        None => Ok(Vec::new()),
    }
}

/// Seals (`Direction::Encrypt`: plaintext in, chunk records out) or opens (records in,
/// plaintext out) a large message's body on the engine, threaded and without the GIL; `names`
/// are what an error calls the input and the output.
fn run_message(
    py: Python<'_>,
    keys: &MessageKeys,
    direction: Direction,
    mut input: &[u8],
    mut output: &mut [u8],
    names: (&str, &str),
) -> PyResult<()> {
    let cipher = keys.chunks();
    let engine = crate::engine()?;
    let spec = StreamSpec::message(engine, direction, &cipher, pipeline::DEFAULT_CHUNK_SIZE);
    py.detach(|| {
        pipeline::run_segment(
            &spec,
            Segment::WHOLE,
            Stages::Threaded,
            &mut input,
            &mut output,
            &|_| {},
        )
    })
    .map_err(|e| errors::pipeline(e, names.0, names.1))?;
    Ok(())
}

/// One AES key for `paraes.pyaes`: single blocks (pyaes's `AES`), and the key of its CTR.
#[pyclass(frozen, module = "paraes._paraes")]
pub struct BlockCipher {
    key: ExpandedKey,
    imp: AesImpl,
}

impl BlockCipher {
    fn block(&self, block: &[u8], direction: Direction) -> PyResult<[u8; 16]> {
        let mut out: [u8; 16] = block
            .try_into()
            .map_err(|_| PyValueError::new_err("wrong block length"))?;
        paraes_core::modes::apply(self.imp, &Job::ecb(&self.key, direction), &mut out)
            .map_err(|e| PyValueError::new_err(e.to_string()))?;
        Ok(out)
    }
}

#[pymethods]
impl BlockCipher {
    /// A cipher of `key` (16, 24 or 32 bytes).
    #[new]
    fn new(key: &Bound<'_, PyAny>) -> PyResult<Self> {
        Ok(BlockCipher {
            key: aes_key(key)?.expand(),
            imp: crate::engine()?.aes_impl(),
        })
    }

    /// Encrypts one 16-byte block.
    fn encrypt_block<'py>(&self, py: Python<'py>, block: &[u8]) -> PyResult<Bound<'py, PyBytes>> {
        Ok(PyBytes::new(py, &self.block(block, Direction::Encrypt)?))
    }

    /// Decrypts one 16-byte block.
    fn decrypt_block<'py>(&self, py: Python<'py>, block: &[u8]) -> PyResult<Bound<'py, PyBytes>> {
        Ok(PyBytes::new(py, &self.block(block, Direction::Decrypt)?))
    }
}

/// The bytes of `data`: a `bytes` object's own, or any buffer's.
enum Input<'a, 'py> {
    Bytes(&'a Bound<'py, PyBytes>),
    Buffer(Exported),
}

impl Input<'_, '_> {
    fn bytes(&self) -> &[u8] {
        match self {
            Input::Bytes(b) => b.as_bytes(),
            Input::Buffer(e) => e.bytes(),
        }
    }
}

fn input<'a, 'py>(data: &'a Bound<'py, PyAny>) -> PyResult<Input<'a, 'py>> {
    match data.cast::<PyBytes>() {
        Ok(bytes) => Ok(Input::Bytes(bytes)),
        Err(_) => Ok(Input::Buffer(Exported::new(data, "data")?)),
    }
}

/// `data` XOR the first `len(data)` bytes of `keystream` (which must be at least as long).
#[pyfunction]
fn xor<'py>(
    py: Python<'py>,
    data: &Bound<'_, PyAny>,
    keystream: &Bound<'_, PyAny>,
) -> PyResult<Bound<'py, PyBytes>> {
    let data = input(data)?;
    let keystream = input(keystream)?;
    let (data, keystream) = (data.bytes(), keystream.bytes());
    if keystream.len() < data.len() {
        return Err(PyValueError::new_err(
            "the keystream is shorter than the data",
        ));
    }
    let (out, buf) = fresh_bytes(py, data.len())?;
    for ((o, d), k) in buf.iter_mut().zip(data).zip(keystream) {
        *o = d ^ k;
    }
    Ok(out)
}

/// The value of a pyaes `Counter`'s `_counter` list, if it is the list of 16 byte values the
/// `Counter` class keeps (anything else goes through pyaes's own semantics in Python).
fn counter_value(list: &Bound<'_, PyList>) -> Option<[u8; 16]> {
    if list.len() != 16 {
        return None;
    }
    let mut value = [0u8; 16];
    for (i, byte) in value.iter_mut().enumerate() {
        *byte = list.get_item(i).ok()?.extract::<u8>().ok()?;
    }
    Some(value)
}

/// pyaes's CTR step, for the exact `paraes.pyaes.Counter` type: XORs `data` with the keystream
/// left over from earlier calls (`leftover`) and then with whole keystream blocks of the
/// counter's values, advancing the counter once per block in place, as pyaes does (a new list
/// when it wraps past 2^128 - 1, as pyaes's `increment` makes one). Returns the output and the
/// keystream left over, or `None` when the counter's list is not 16 byte values.
#[pyfunction]
fn pyaes_ctr<'py>(
    py: Python<'py>,
    cipher: &BlockCipher,
    counter: &Bound<'py, PyAny>,
    leftover: &Bound<'py, PyBytes>,
    data: &Bound<'py, PyAny>,
) -> PyResult<Option<Bound<'py, PyTuple>>> {
    let input = input(data)?;
    let data = input.bytes();
    let left = leftover.as_bytes();
    let (n, l) = (data.len(), left.len());
    if n <= l {
        let (out, buf) = fresh_bytes(py, n)?;
        for ((o, d), k) in buf.iter_mut().zip(data).zip(left) {
            *o = d ^ k;
        }
        let rest = PyBytes::new(py, &left[n..]);
        return Ok(Some(PyTuple::new(py, [out.into_any(), rest.into_any()])?));
    }
    let attr = pyo3::intern!(py, "_counter");
    let list_obj = counter.getattr(attr)?;
    let Ok(list) = list_obj.cast::<PyList>() else {
        return Ok(None);
    };
    let Some(value) = counter_value(list) else {
        return Ok(None);
    };
    let start = u128::from_be_bytes(value);
    let fresh = n - l;
    let blocks = fresh.div_ceil(16) as u128;
    let (out, buf) = bytes_copy(py, data)?;
    for (o, k) in buf.iter_mut().zip(left) {
        *o ^= k;
    }
    let job = Job::ctr(&cipher.key, value, 0);
    let tail = &mut buf[l..];
    if tail.len() >= DETACH_FROM {
        let engine = crate::engine()?;
        py.detach(|| engine.process(&job, tail))
    } else {
        paraes_core::modes::apply(cipher.imp, &job, tail)
    }
    .map_err(|e| PyValueError::new_err(e.to_string()))?;
    let used = fresh % 16;
    let rest = if used == 0 {
        PyBytes::new(py, &[])
    } else {
        let last = start.wrapping_add(blocks - 1).to_be_bytes();
        let keystream = cipher.block(&last, Direction::Encrypt)?;
        PyBytes::new(py, &keystream[used..])
    };
    let (next, wrapped) = start.overflowing_add(blocks);
    let next = next.to_be_bytes();
    if wrapped {
        counter.setattr(attr, PyList::new(py, next)?)?;
    } else {
        for (i, (old, new)) in value.iter().zip(next).enumerate() {
            if *old != new {
                list.set_item(i, new)?;
            }
        }
    }
    Ok(Some(PyTuple::new(py, [out.into_any(), rest.into_any()])?))
}

/// The worked example of ARCHITECTURE.md's recipe for a Python function (test-only by name:
/// underscored and not exported by the package): how many 16-byte AES blocks `length` bytes
/// span.
// recipe-example: python-function (the function)
#[pyfunction]
#[pyo3(name = "_recipe_example")]
fn recipe_example(length: u64) -> u64 {
    length.div_ceil(16)
}
