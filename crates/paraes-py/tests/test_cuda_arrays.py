"""paraes.cuda.seal/open over any GPU array (issue 38 item 3) and DeviceBuffer as a DLPack
producer, on the CUDA stand-in where there is no NVIDIA driver (conftest's cuda_driver).

`Producer` stands in for CuPy and PyTorch: it exposes device memory (a DeviceBuffer loaded by
paraes.cuda.load, so its bytes are known) through __cuda_array_interface__ v2 and v3 and through
DLPack capsules built here with ctypes, counting its deleter's calls. `consume` is a ctypes
DLPack consumer, standing in for torch.from_dlpack.
"""

import ctypes
import os

import numpy as np
import pytest
from cryptography.cobblestone import (
    Cobblestone128Decryptor,
    Cobblestone128Encryptor,
    Cobblestone256Decryptor,
    Cobblestone256Encryptor,
)

import paraes
import paraes.cuda

from conftest import seeded

CHUNK = 16 * 1024
SIZES = [0, 1, CHUNK - 1, CHUNK, CHUNK + 1, 3 * CHUNK + 5]


@pytest.fixture(scope="module", autouse=True)
def driver(cuda_driver):
    return cuda_driver


# --- DLPack in ctypes -------------------------------------------------------------------------

class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", DLDevice), ("ndim", ctypes.c_int32),
                ("dtype", DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


class DLManagedTensor(ctypes.Structure):
    pass


DELETER = ctypes.CFUNCTYPE(None, ctypes.POINTER(DLManagedTensor))
DLManagedTensor._fields_ = [("dl_tensor", DLTensor), ("manager_ctx", ctypes.c_void_p),
                            ("deleter", DELETER)]


class DLPackVersion(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32)]


class DLManagedTensorVersioned(ctypes.Structure):  # DLPack 1.x
    pass


DELETER_VERSIONED = ctypes.CFUNCTYPE(None, ctypes.POINTER(DLManagedTensorVersioned))
DLManagedTensorVersioned._fields_ = [("version", DLPackVersion), ("manager_ctx", ctypes.c_void_p),
                                     ("deleter", DELETER_VERSIONED), ("flags", ctypes.c_uint64),
                                     ("dl_tensor", DLTensor)]
READ_ONLY, IS_COPIED = 1 << 0, 1 << 1

api = ctypes.pythonapi
api.PyCapsule_New.restype = ctypes.py_object
api.PyCapsule_New.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
api.PyCapsule_GetName.restype = ctypes.c_char_p
api.PyCapsule_GetName.argtypes = [ctypes.py_object]
api.PyCapsule_IsValid.restype = ctypes.c_int
api.PyCapsule_IsValid.argtypes = [ctypes.py_object, ctypes.c_char_p]
api.PyCapsule_GetPointer.restype = ctypes.c_void_p
api.PyCapsule_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
api.PyCapsule_SetName.restype = ctypes.c_int
api.PyCapsule_SetName.argtypes = [ctypes.py_object, ctypes.c_char_p]
DLTENSOR = b"dltensor"
LAYOUTS = {b"dltensor": DLManagedTensor, b"dltensor_versioned": DLManagedTensorVersioned}


class Producer:
    """Bytes of `base` (a DeviceBuffer) from `offset`, as `dtype` items of `shape`, with
    `strides` in bytes (None: C-contiguous), over CAI `version` (None: no CAI) and DLPack
    (`dlpack_device` its device tuple; None: no DLPack). `dlpack_version` (major, minor): a
    DLPack 1.x producer, whose capsules are versioned when the consumer gives max_version,
    with `flags`; `legacy`: a pre-1.0 `__dlpack__` that takes no max_version (TypeError)."""

    def __init__(self, base, offset=0, shape=None, dtype=np.uint8, strides=None, version=3,
                 readonly=False, dlpack_device=(2, 0), cai_stream=None, lanes=1,
                 null_shape=False, dlpack_version=None, flags=0, legacy=False):
        self.base, self.offset, self.dtype = base, offset, np.dtype(dtype)
        self.shape = shape if shape is not None else ((base.nbytes - offset) // self.dtype.itemsize,)
        self.strides, self.version, self.readonly = strides, version, readonly
        self.dlpack_device, self.cai_stream, self.lanes = dlpack_device, cai_stream, lanes
        self.null_shape, self.dlpack_version, self.flags = null_shape, dlpack_version, flags
        self.legacy, self.asked = legacy, []  # the keywords of each __dlpack__ call
        self.deleted, self.capsules, self.streams_asked, self._keep = 0, [], [], []

    def __getattr__(self, name):
        if name == "__cuda_array_interface__" and self.version is not None:
            d = {"shape": tuple(self.shape), "typestr": self.dtype.str,
                 "data": (self.base.__cuda_array_interface__["data"][0] + self.offset,
                          self.readonly),
                 "strides": self.strides, "version": self.version}
            if self.version >= 3:
                d["stream"] = self.cai_stream
            return d
        if name in ("__dlpack__", "__dlpack_device__") and self.dlpack_device is not None:
            return getattr(self, "_" + name.strip("_"))
        raise AttributeError(name)

    def _dlpack_device(self):
        return self.dlpack_device

    def _dlpack(self, stream=None, **kw):
        self.asked.append(kw)
        if self.legacy and kw:
            raise TypeError(f"__dlpack__() got an unexpected keyword argument {next(iter(kw))!r}")
        self.streams_asked.append(stream)
        ndim = len(self.shape)
        shape = (ctypes.c_int64 * ndim)(*self.shape)
        strides = None
        if self.strides is not None:
            strides = (ctypes.c_int64 * ndim)(*[s // self.dtype.itemsize for s in self.strides])
        versioned = self.dlpack_version is not None and kw.get("max_version") is not None
        m = DLManagedTensorVersioned() if versioned else DLManagedTensor()
        if versioned:
            m.version, m.flags = DLPackVersion(*self.dlpack_version), self.flags
        base_ptr = self.base.__cuda_array_interface__["data"][0]
        m.dl_tensor = DLTensor(base_ptr, DLDevice(*self.dlpack_device), ndim,
                               DLDataType({"u": 1, "i": 0, "f": 2}[self.dtype.kind],
                                          self.dtype.itemsize * 8, self.lanes),
                               None if self.null_shape else shape, strides, self.offset)

        def deleter(_ptr):
            self.deleted += 1
        m.deleter = (DELETER_VERSIONED if versioned else DELETER)(deleter)
        self._keep.append((m, shape, strides, m.deleter))
        name = b"dltensor_versioned" if versioned else DLTENSOR
        capsule = api.PyCapsule_New(ctypes.addressof(m), name, None)
        self.capsules.append(capsule)
        return capsule


def device_bytes(data, room=0):
    """A DeviceBuffer holding `data` then `room` zero bytes (loaded from a container)."""
    import tempfile
    key = paraes.generate_key()
    with tempfile.TemporaryDirectory() as d:
        src = os.path.join(d, "p")
        with open(src, "wb") as f:
            f.write(data + bytes(room))
        paraes.encrypt_file(src, os.path.join(d, "c"), keys=[key])
        return paraes.cuda.load(os.path.join(d, "c"), keys=[key])


def pyca_records(bits, key, data, context=b""):
    """(salt, records) of pyca's Cobblestone message of `data`."""
    enc = (Cobblestone128Encryptor if bits == 128 else Cobblestone256Encryptor)(key, context)
    message = enc.update(data) + enc.finalize()
    return message[:24], message[56:], message[:56]


# --- seal and open ----------------------------------------------------------------------------

@pytest.mark.parametrize("bits", [128, 256])
@pytest.mark.parametrize("protocol", ["cai2", "cai3", "dlpack"])
def test_seal_gives_pycas_records_and_open_round_trips(bits, protocol):
    key = seeded(bits // 8, bits)
    for n in SIZES:
        data = seeded(n, n + 7)
        context = b"ctx" if n % 2 else b""
        salt, records, prefix = pyca_records(bits, key, data, context)
        base = device_bytes(data)
        version = {"cai2": 2, "cai3": 3, "dlpack": None}[protocol]
        src = Producer(base, version=version, dlpack_device=None if version else (2, 0))
        sealed = paraes.cuda.seal(src, key=key, salt=salt, context=context)
        assert isinstance(sealed, paraes.cuda.DeviceBuffer)
        assert sealed.nbytes == paraes.cuda.sealed_len(n) == len(records)
        assert sealed.to_bytes() == records, (protocol, n)
        dec = (Cobblestone128Decryptor if bits == 128 else Cobblestone256Decryptor)(key, context)
        assert dec.update(prefix + sealed.to_bytes()) + dec.finalize() == data
        if protocol == "dlpack":
            assert src.deleted == 1 and len(src.capsules) == 1
            assert api.PyCapsule_GetName(src.capsules[0]) == b"used_dltensor"
        opened = paraes.cuda.open(Producer(sealed, version=version,
                                           dlpack_device=None if version else (2, 0)), key=key, salt=salt,
                                  context=context)
        assert opened.to_bytes() == data and opened.nbytes == paraes.cuda.opened_len(len(records))
        assert base.to_bytes() == data  # out of place leaves the input as it was


def test_items_offsets_and_spans():
    key = seeded(32, 1)
    data = seeded(4 * CHUNK + 64, 2)
    base = device_bytes(data)
    salt, records, _ = pyca_records(256, key, data[32:])
    for version in (2, 3, None):
        # float32 items of a 2-D shape from byte 32 (DLPack's byte_offset, CAI's pointer).
        n = (len(data) - 32) // 4
        src = Producer(base, offset=32, shape=(n // 8, 8), dtype=np.float32, version=version,
                       dlpack_device=None if version else (2, 0))
        assert paraes.cuda.seal(src, key=key, salt=salt).to_bytes() == records
    # Whole chunks 1..2 of a longer message, then its last span from chunk 3.
    whole = data[:4 * CHUNK]
    salt, records, _ = pyca_records(256, key, whole)
    middle = paraes.cuda.seal(Producer(device_bytes(whole[CHUNK:3 * CHUNK])), key=key, salt=salt,
                              first_chunk=1, last=False)
    assert middle.to_bytes() == records[CHUNK + 16:3 * (CHUNK + 16)]
    tail = paraes.cuda.seal(Producer(device_bytes(whole[3 * CHUNK:])), key=key, salt=salt,
                            first_chunk=3)
    assert tail.to_bytes() == records[3 * (CHUNK + 16):]
    assert paraes.cuda.open(middle, key=key, salt=salt, first_chunk=1,
                            last=False).to_bytes() == whole[CHUNK:3 * CHUNK]
    with pytest.raises(paraes.AuthenticationError):
        paraes.cuda.open(middle, key=key, salt=salt, first_chunk=2, last=False)


@pytest.mark.parametrize("protocol", [3, None])
def test_in_place_round_trip_and_tampering_leaves_the_buffer(protocol):
    key = seeded(16, 3)
    for n in (0, 5, CHUNK, 2 * CHUNK + 9):
        data = seeded(n, n)
        salt, records, _ = pyca_records(128, key, data)
        room = paraes.cuda.sealed_len(n) - n
        base = device_bytes(data, room)
        only = dict(version=protocol, dlpack_device=None if protocol else (2, 0))
        src = Producer(base, **only)
        assert paraes.cuda.seal(src, key=key, salt=salt, inplace=True, length=n) == len(records)
        assert base.to_bytes() == records
        if n:
            bad = bytearray(records)
            bad[len(bad) // 2] ^= 1
            tampered = device_bytes(bytes(bad))
            with pytest.raises(paraes.AuthenticationError, match="left as it was"):
                paraes.cuda.open(Producer(tampered, **only), key=key, salt=salt,
                                 inplace=True)
            assert tampered.to_bytes() == bytes(bad)
            wrong = seeded(16, 4)
            with pytest.raises(paraes.AuthenticationError):
                paraes.cuda.open(src, key=wrong, salt=salt, inplace=True)
            assert base.to_bytes() == records
        assert paraes.cuda.open(Producer(base, **only), key=key, salt=salt,
                                inplace=True) == n
        assert base.to_bytes() == data + bytes(room)


def test_refusals_say_what_to_do():
    key, salt = seeded(32, 5), seeded(24, 6)
    base = device_bytes(seeded(4096, 7))
    kw = dict(key=key, salt=salt)
    cases = [
        (Producer(base, shape=(32, 64), strides=(1, 32)), ValueError, "not C-contiguous"),
        (Producer(base, shape=(32, 64), strides=(1, 32), version=None), ValueError,
         "not C-contiguous"),
        (Producer(base, offset=8), ValueError, "16-byte boundary"),
        (Producer(base, offset=8, version=None), ValueError, "16-byte boundary"),
        (Producer(base, version=None, dlpack_device=(1, 0)), ValueError, "device type 1"),
        (Producer(base, version=None, dlpack_device=(2, 1)), ValueError, "device 0 only"),
        (Producer(base, version=1, dlpack_device=None), ValueError, "versions 2 and 3"),
        (np.zeros(16, np.uint8), ValueError, "device type 1"),
        (b"host bytes", TypeError, "not a GPU array"),
    ]
    for obj, exc, text in cases:
        with pytest.raises(exc, match=text):
            paraes.cuda.seal(obj, **kw)
    no_pointer = Producer(base, dlpack_device=None)
    no_pointer.base = type("Null", (), {"__cuda_array_interface__": {"data": (0, False)}})()
    with pytest.raises(ValueError, match="no device pointer"):
        paraes.cuda.seal(no_pointer, **kw)
    for dlpack_device in (None, (2, 0)):  # DLPack takes the flag from the interface too
        with pytest.raises(ValueError, match="read-only"):
            paraes.cuda.open(Producer(base, readonly=True, dlpack_device=dlpack_device),
                             inplace=True, **kw)
    with pytest.raises(ValueError, match="needs length="):
        paraes.cuda.seal(Producer(base), inplace=True, **kw)
    with pytest.raises(ValueError, match="needs"):
        paraes.cuda.seal(Producer(base), inplace=True, length=4096, **kw)
    with pytest.raises(ValueError, match="no final chunk"):
        paraes.cuda.open(Producer(base, shape=(8,)), **kw)
    with pytest.raises(ValueError, match="16 bytes .* or 32 bytes"):
        paraes.cuda.seal(base, key=seeded(24, 1), salt=salt)
    with pytest.raises(ValueError, match="salt= is 24 bytes"):
        paraes.cuda.seal(base, key=key, salt=b"short")
    # A refused DLPack tensor is still released, once.
    bad = Producer(base, offset=8, version=None)
    with pytest.raises(ValueError):
        paraes.cuda.seal(bad, **kw)
    assert bad.deleted == 1


@pytest.mark.parametrize("dlpack_version", [None, (1, 0)])
def test_malformed_dlpack_tensors_are_refused_not_read_as_other_bytes(dlpack_version):
    """A negative dimension or 0-bit elements were read as an empty tensor, a shape whose
    product wraps 2^64 as a few bytes (or none), and a byte_offset that wraps the address as
    memory before the array: each sealed something other than the array, silently. The same
    checks for versioned (DLPack 1.x) tensors."""
    key, salt = seeded(32, 20), seeded(24, 21)
    base = device_bytes(seeded(4096, 22))
    cases = [
        (dict(shape=(-1,)), "negative dimension"),
        (dict(shape=(4, -16)), "negative dimension"),
        (dict(shape=(2 ** 32, 2 ** 32)), "larger than memory"),
        (dict(shape=(2 ** 62, 4)), "larger than memory"),
        (dict(offset=2 ** 64 - 16, shape=(16,)), "larger than memory"),
        (dict(lanes=0), "0-bit"),
        (dict(null_shape=True), "no shape"),
    ]
    cases.append((dict(shape=(32, 64), strides=(1, 32)), "not C-contiguous"))
    used = b"used_dltensor_versioned" if dlpack_version else b"used_dltensor"
    for fields, text in cases:
        src = Producer(base, version=None, dlpack_version=dlpack_version, **fields)
        with pytest.raises(ValueError, match=text):
            paraes.cuda.seal(src, key=key, salt=salt)
        assert src.deleted == 1  # refused, and still released once
        assert api.PyCapsule_GetName(src.capsules[0]) == used


# --- DLPack 1.x (versioned) producers ---------------------------------------------------------

def test_a_versioned_producer_is_asked_for_and_consumed():
    """paraes asked only for unversioned tensors (no max_version) and refused
    "dltensor_versioned" capsules: a DLPack 1.x tensor could not say it was read-only."""
    key = seeded(32, 50)
    n = 2 * CHUNK + 3
    data = seeded(n, 51)
    salt, records, _ = pyca_records(256, key, data)
    for dlpack_version in ((1, 0), (1, 3)):  # a later minor version keeps the layout
        src = Producer(device_bytes(data), version=None, dlpack_version=dlpack_version)
        assert paraes.cuda.seal(src, key=key, salt=salt).to_bytes() == records
        assert [kw.get("max_version") for kw in src.asked] == [(1, 0)]
        assert src.deleted == 1 and len(src.capsules) == 1
        assert api.PyCapsule_GetName(src.capsules[0]) == b"used_dltensor_versioned"
    # In place, writable (flags without READ_ONLY), and asked for no copy (copy=False).
    room = paraes.cuda.sealed_len(n) - n
    base = device_bytes(data, room)
    src = Producer(base, version=None, dlpack_version=(1, 0))
    assert paraes.cuda.seal(src, key=key, salt=salt, inplace=True, length=n) == len(records)
    assert src.asked[-1].get("copy") is False
    assert base.to_bytes() == records and src.deleted == 1
    assert api.PyCapsule_GetName(src.capsules[0]) == b"used_dltensor_versioned"
    back = Producer(base, version=None, dlpack_version=(1, 0))
    assert paraes.cuda.open(back, key=key, salt=salt, inplace=True) == n
    assert base.to_bytes() == data + bytes(room) and back.deleted == 1


def test_a_read_only_versioned_tensor_is_refused_in_place_and_read_out_of_place():
    """Only __cuda_array_interface__ could say an array was read-only: an object offering
    DLPack alone was written in place whatever its producer said."""
    key = seeded(16, 52)
    n = 100
    data = seeded(n, 53)
    salt, records, _ = pyca_records(128, key, data)
    room = paraes.cuda.sealed_len(n) - n
    base = device_bytes(data, room)
    read_only = dict(version=None, dlpack_version=(1, 0), flags=READ_ONLY | IS_COPIED)
    src = Producer(base, **read_only)
    with pytest.raises(ValueError, match="read-only .*READ_ONLY flag says so.*inplace=False"):
        paraes.cuda.seal(src, key=key, salt=salt, inplace=True, length=n)
    assert src.deleted == 1
    assert base.to_bytes() == data + bytes(room)
    sealed = device_bytes(records)
    src = Producer(sealed, **read_only)
    with pytest.raises(ValueError, match="read-only .*READ_ONLY flag says so"):
        paraes.cuda.open(src, key=key, salt=salt, inplace=True)
    assert src.deleted == 1
    assert sealed.to_bytes() == records
    # Out of place only reads it.
    assert paraes.cuda.seal(Producer(device_bytes(data), **read_only), key=key,
                            salt=salt).to_bytes() == records
    assert paraes.cuda.open(Producer(sealed, **read_only), key=key,
                            salt=salt).to_bytes() == data


def test_a_producer_older_than_dlpack_1_is_asked_again_without_max_version():
    key = seeded(32, 54)
    data = seeded(CHUNK + 9, 55)
    salt, records, _ = pyca_records(256, key, data)
    src = Producer(device_bytes(data), version=None, legacy=True)
    assert paraes.cuda.seal(src, key=key, salt=salt).to_bytes() == records
    assert [set(kw) for kw in src.asked] == [{"max_version"}, set()]  # then stream= alone
    assert src.deleted == 1 and len(src.capsules) == 1
    assert api.PyCapsule_GetName(src.capsules[0]) == b"used_dltensor"


def test_a_versioned_tensor_of_another_major_version_is_refused_and_released():
    key, salt = seeded(32, 56), seeded(24, 57)
    base = device_bytes(seeded(4096, 58))
    src = Producer(base, version=None, dlpack_version=(2, 0))
    with pytest.raises(ValueError, match=r"DLPack 2\.0 tensor: paraes.cuda reads DLPack 1\.x"):
        paraes.cuda.seal(src, key=key, salt=salt)
    assert src.deleted == 1  # the spec: the consumer still calls its deleter
    assert api.PyCapsule_GetName(src.capsules[0]) == b"used_dltensor_versioned"


def test_cai_strides_must_match_the_shape():
    key, salt = seeded(32, 23), seeded(24, 24)
    base = device_bytes(seeded(4096, 25))
    src = Producer(base, shape=(32, 128), strides=(1,), dlpack_device=None)
    with pytest.raises(ValueError, match="1 strides for 2 dimensions"):
        paraes.cuda.seal(src, key=key, salt=salt)


def test_keys_salts_and_contexts_must_be_bytes_not_ints():
    """bytes(32) is 32 zero bytes: an int key= sealed under an all-zero key, silently."""
    key, salt = seeded(32, 26), seeded(24, 27)
    base = device_bytes(seeded(100, 28))
    for call in (paraes.cuda.seal, paraes.cuda.open):
        for bad in (dict(key=32, salt=salt), dict(key=key, salt=24),
                    dict(key=key, salt=salt, context=3)):
            with pytest.raises(TypeError, match="takes bytes"):
                call(base, **bad)
    # bytes-like objects other than bytes still work.
    sealed = paraes.cuda.seal(base, key=bytearray(key), salt=memoryview(salt),
                              context=bytearray(b"c"))
    assert paraes.cuda.open(sealed, key=key, salt=salt, context=b"c").to_bytes() == seeded(100, 28)


def test_a_readonly_flag_that_is_not_a_bool_still_protects_the_array():
    """With DLPack preferred, the interface's flag was read only if it was exactly a bool:
    (ptr, 1) made a read-only array writable in place."""
    key, salt = seeded(16, 30), seeded(24, 31)
    n = 100
    data = seeded(n, 32)
    room = paraes.cuda.sealed_len(n) - n
    base = device_bytes(data, room)
    for readonly in (1, np.True_):
        with pytest.raises(ValueError, match="read-only"):
            paraes.cuda.seal(Producer(base, readonly=readonly), key=key, salt=salt,
                             inplace=True, length=n)
    assert base.to_bytes() == data + bytes(room)


def test_an_address_range_past_the_end_of_the_address_space_is_refused():
    class Wraps:
        __cuda_array_interface__ = {"shape": (32,), "typestr": "|u1",
                                    "data": (2 ** 64 - 16, False), "version": 2}

    with pytest.raises(ValueError, match="past the end of the address space"):
        paraes.cuda.seal(Wraps(), key=seeded(16, 33), salt=seeded(24, 34))


def test_sealed_and_opened_len_refuse_what_seal_and_open_refuse():
    """They returned numbers for lengths the calls refuse: opened_len(5) was -11, sealed_len(-1)
    was -1, sealed_len(5, last=False) 21 (a span that is not last holds whole chunks)."""
    for f, args in ((paraes.cuda.sealed_len, (-1,)), (paraes.cuda.sealed_len, (5, False)),
                    (paraes.cuda.opened_len, (5,)), (paraes.cuda.opened_len, (-16,)),
                    (paraes.cuda.opened_len, (CHUNK + 16 + 3,)),
                    (paraes.cuda.opened_len, (CHUNK + 16 + 16, False))):
        with pytest.raises(ValueError):
            f(*args)
    assert paraes.cuda.sealed_len(0) == 16
    assert paraes.cuda.sealed_len(CHUNK, last=False) == CHUNK + 16
    assert paraes.cuda.sealed_len(0, last=False) == 0 and paraes.cuda.opened_len(0, last=False) == 0
    for n in SIZES + [2 * CHUNK]:
        assert paraes.cuda.opened_len(paraes.cuda.sealed_len(n)) == n
    assert paraes.cuda.opened_len(2 * (CHUNK + 16), last=False) == 2 * CHUNK


def test_streams():
    key, salt = seeded(32, 8), seeded(24, 9)
    data = seeded(CHUNK + 3, 10)
    base = device_bytes(data)
    records = paraes.cuda.seal(base, key=key, salt=salt).to_bytes()

    class TorchLike:
        cuda_stream = 0

    class CupyLike:
        ptr = 0

    # The legacy default stream (0 or 1) by int, .cuda_stream and .ptr (the stand-in has no
    # per-thread stream 2; a stream of its own is the next test's).
    for stream in (0, 1, TorchLike(), CupyLike()):
        src = Producer(base, version=None)
        out = paraes.cuda.seal(src, key=key, salt=salt, stream=stream)
        assert src.streams_asked == [1]  # DLPack's name of the legacy default stream
        assert out.__cuda_array_interface__["stream"] == 1
        assert out.to_bytes() == records
        assert paraes.cuda.open(out, key=key, salt=salt, stream=stream).to_bytes() == data
    own = Producer(base, version=None)
    paraes.cuda.seal(own, key=key, salt=salt)
    assert own.streams_asked[0] not in (None, 0)  # paraes' own stream, by handle
    # A CAI v3 producer's stream is synchronized first; stream 0 is not allowed by the spec.
    assert paraes.cuda.seal(Producer(base, cai_stream=1, dlpack_device=None), key=key, salt=salt).to_bytes() == records
    with pytest.raises(ValueError, match="stream 0"):
        paraes.cuda.seal(Producer(base, cai_stream=0, dlpack_device=None), key=key, salt=salt)
    with pytest.raises(TypeError, match="stream= takes"):
        paraes.cuda.seal(base, key=key, salt=salt, stream="s")
    # load and save take stream= too (the legacy default stream here).
    import tempfile
    k = paraes.generate_key()
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "c.paraes")
        assert paraes.cuda.save(base, path, keys=[k], stream=TorchLike()) > len(data)
        loaded = paraes.cuda.load(path, keys=[k], stream=0)
        assert loaded.to_bytes() == data
        assert loaded.__cuda_array_interface__["stream"] is None  # whole on return


# --- DeviceBuffer as a DLPack producer -------------------------------------------------------

def consume(capsule, name=DLTENSOR):
    """A ctypes DLPack consumer of a `name` capsule ("dltensor" or "dltensor_versioned"): the
    tensor's fields (and a versioned one's version and flags), then its deleter (renamed
    first)."""
    assert api.PyCapsule_GetName(capsule) == name and api.PyCapsule_IsValid(capsule, name) == 1
    ptr = api.PyCapsule_GetPointer(capsule, name)
    assert api.PyCapsule_SetName(capsule, b"used_" + name) == 0
    m = LAYOUTS[name].from_address(ptr)
    t = m.dl_tensor
    fields = dict(data=t.data or 0, device=(t.device.device_type, t.device.device_id),
                  ndim=t.ndim, dtype=(t.dtype.code, t.dtype.bits, t.dtype.lanes),
                  shape=t.shape[0], strides=t.strides[0] if t.strides else None,
                  byte_offset=t.byte_offset)
    if name != DLTENSOR:
        fields.update(version=(m.version.major, m.version.minor), flags=m.flags)
    return fields, (lambda: m.deleter(ctypes.pointer(m)))


@pytest.mark.parametrize("max_version, name", [
    (None, DLTENSOR), ((0, 8), DLTENSOR),
    ((1, 0), b"dltensor_versioned"), ((2, 1), b"dltensor_versioned")])
def test_device_buffer_exports_the_capsule_max_version_asks_for_and_stays_alive(max_version,
                                                                                 name):
    """Versioned (DLPack 1.0) for a max_version of major 1 or more: it was unversioned whatever
    max_version, so a DLPack 1.x consumer could not tell whether it may write the bytes."""
    import gc
    import sys

    data = seeded(CHUNK + 1, 11)
    buf = device_bytes(data)
    assert buf.__dlpack_device__() == (2, 0)
    address = buf.__cuda_array_interface__["data"][0]
    refs = sys.getrefcount(buf)
    capsule = buf.__dlpack__(stream=None, max_version=max_version)
    assert sys.getrefcount(buf) == refs + 1  # the capsule holds the buffer
    fields, delete = consume(capsule, name)
    # Strides [1]: newer dlpack.h allows NULL strides only for ndim 0.
    expected = dict(data=address, device=(2, 0), ndim=1, dtype=(1, 8, 1), shape=len(data),
                    strides=1, byte_offset=0)
    if name != DLTENSOR:
        expected.update(version=(1, 0), flags=0)  # writable, not a copy
    assert fields == expected
    del capsule
    gc.collect()
    assert sys.getrefcount(buf) == refs + 1  # consumed: alive until the deleter runs
    delete()
    assert sys.getrefcount(buf) == refs
    # An unconsumed capsule releases the buffer when it goes.
    capsule = buf.__dlpack__(max_version=max_version)
    assert api.PyCapsule_GetName(capsule) == name
    del capsule
    assert sys.getrefcount(buf) == refs
    # paraes consumes its own capsules too (DLPack path when no CAI is offered).

    class OnlyDlpack:
        def __dlpack__(self, stream=None, max_version=None):
            self.asked = max_version
            return buf.__dlpack__(stream=stream, max_version=max_version)

        def __dlpack_device__(self):
            return buf.__dlpack_device__()

    key, salt = seeded(16, 1), seeded(24, 2)
    src = OnlyDlpack()
    sealed = paraes.cuda.seal(src, key=key, salt=salt)
    assert src.asked == (1, 0)
    assert paraes.cuda.open(sealed, key=key, salt=salt).to_bytes() == data
    assert sys.getrefcount(buf) == refs


def test_device_buffer_refuses_copies_and_other_devices():
    buf = device_bytes(seeded(64, 11))
    with pytest.raises(BufferError, match="without a copy: copy it with the consuming library"):
        buf.__dlpack__(copy=True)
    with pytest.raises(BufferError, match="exported to another device"):
        buf.__dlpack__(dl_device=(1, 0))
    with pytest.raises((RuntimeError, BufferError, TypeError, ValueError)):
        np.from_dlpack(buf)  # NumPy takes host memory only


def test_a_callers_stream_orders_the_work_and_results_are_read_after_it():
    """A stream made through the driver itself (the stand-in runs streams lazily: work enqueued
    there runs only when something waits for it, so a result read before its stream was
    synchronized would be stale zeros, not the records)."""
    key, salt = seeded(32, 12), seeded(24, 13)
    data = seeded(2 * CHUNK + 1, 14)
    base = device_bytes(data)  # also makes the engine's context current on this thread
    expected = paraes.cuda.seal(base, key=key, salt=salt).to_bytes()
    path = os.environ.get("PARAES_CUDA_STANDIN")
    cuda = ctypes.CDLL(path or "libcuda.so.1")
    handle = ctypes.c_void_p()
    assert cuda.cuStreamCreate(ctypes.byref(handle), 1) == 0
    try:
        s = handle.value

        class TorchStream:
            cuda_stream = s

        sealed = paraes.cuda.seal(Producer(base), key=key, salt=salt, stream=TorchStream())
        assert sealed.__cuda_array_interface__["stream"] == s
        src = Producer(sealed, version=None)
        assert sealed.__dlpack__(stream=s) is not None  # same stream: no wait needed
        opened = paraes.cuda.open(src, key=key, salt=salt, stream=s)
        assert src.streams_asked == [s]
        assert sealed.to_bytes() == expected  # to_bytes synchronizes the caller's stream
        assert opened.to_bytes() == data
        # In place on the caller's stream, read by a CAI v3 consumer told of that stream.
        room = device_bytes(data, paraes.cuda.sealed_len(len(data)) - len(data))
        assert paraes.cuda.seal(Producer(room), key=key, salt=salt, inplace=True,
                                length=len(data), stream=s) == len(expected)
        again = paraes.cuda.open(Producer(room, cai_stream=s, dlpack_device=None), key=key, salt=salt)
        assert again.to_bytes() == data
        assert room.to_bytes() == expected
    finally:
        assert cuda.cuStreamDestroy_v2(handle) == 0


def test_a_buffer_made_on_a_callers_stream_outlives_that_stream():
    """The caller may destroy its stream once it has synchronized it; the buffer made there
    used to synchronize that stream handle again (to_bytes, __dlpack__, save): a destroyed
    stream (CUDA_ERROR_INVALID_HANDLE, or another stream that reused the handle)."""
    key, salt = seeded(32, 40), seeded(24, 41)
    data = seeded(CHUNK + 7, 42)
    base = device_bytes(data)
    expected = paraes.cuda.seal(base, key=key, salt=salt).to_bytes()
    cuda = ctypes.CDLL(os.environ.get("PARAES_CUDA_STANDIN") or "libcuda.so.1")
    handle = ctypes.c_void_p()
    assert cuda.cuStreamCreate(ctypes.byref(handle), 1) == 0
    sealed = paraes.cuda.seal(base, key=key, salt=salt, stream=handle.value)
    assert cuda.cuStreamSynchronize(handle) == 0
    assert cuda.cuStreamDestroy_v2(handle) == 0
    assert sealed.to_bytes() == expected
    capsule = sealed.__dlpack__(stream=None)
    fields, delete = consume(capsule)
    delete()
    assert paraes.cuda.open(sealed, key=key, salt=salt).to_bytes() == data
