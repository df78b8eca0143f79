"""DLPack edge cases of paraes.cuda, as consumer and producer: a producer's copy refused for
work in place (and copy=False asked for), a tensor of another major version read no further than
its version, the retry without max_version keeping the first error, and an exported tensor
released after Python finalized. Producers and the ctypes layouts are test_cuda_arrays'.
"""

import os

import paraes
import paraes.cuda
import pytest

from conftest import seeded
from test_cuda_arrays import (  # noqa: F401 (driver: the module's CUDA fixture, autouse)
    IS_COPIED, READ_ONLY, Producer, api, device_bytes, driver, pyca_records)


class CopyingProducer(Producer):
    """A DLPack 1.x producer that has to copy: each __dlpack__ exports a fresh device copy of
    its array, flagged IS_COPIED as the array API requires (the copy is kept, not freed, so a
    write to it can be seen). `honours_copy`: copy=False raises BufferError, as the array API
    asks; otherwise it copies whatever copy= says."""

    def __init__(self, base, honours_copy, **kw):
        super().__init__(base, version=None, dlpack_version=(1, 0), flags=IS_COPIED, **kw)
        self.honours_copy, self.copies = honours_copy, []

    def _dlpack(self, stream=None, **kw):
        if self.honours_copy and kw.get("copy") is False:
            self.asked.append(kw)
            raise BufferError("this array can only be exported as a copy")
        original = self.base
        self.base = device_bytes(original.to_bytes())
        self.copies.append(self.base)
        try:
            return super()._dlpack(stream, **kw)
        finally:
            self.base = original


def test_in_place_work_on_a_copy_the_producer_made_is_refused():
    """A producer asked without copy= may export a copy (flagged IS_COPIED): in place, paraes
    sealed the copy, its deleter freed it, and the call returned the record count while the
    caller's array stayed plaintext."""
    key = seeded(16, 60)
    n = 100
    data = seeded(n, 62)
    salt, records, _ = pyca_records(128, key, data)
    room = paraes.cuda.sealed_len(n) - n
    base = device_bytes(data, room)
    for call, kw in ((paraes.cuda.seal, dict(length=n)), (paraes.cuda.open, {})):
        src = CopyingProducer(base, honours_copy=False)
        with pytest.raises(ValueError, match=r"a copy .*IS_COPIED.*inplace=False"):
            call(src, key=key, salt=salt, inplace=True, **kw)
        assert src.asked == [{"max_version": (1, 0), "copy": False}]
        assert src.deleted == 1
        assert src.copies[0].to_bytes() == data + bytes(room)  # the copy was not written either
        assert base.to_bytes() == data + bytes(room)
        # A producer that honours copy=False refuses to export the copy.
        src = CopyingProducer(base, honours_copy=True)
        with pytest.raises(BufferError, match="only be exported as a copy"):
            call(src, key=key, salt=salt, inplace=True, **kw)
        assert src.copies == [] and base.to_bytes() == data + bytes(room)
    # Out of place a copy is fine, and paraes leaves copy= to the producer.
    src = CopyingProducer(device_bytes(data), honours_copy=True)
    assert paraes.cuda.seal(src, key=key, salt=salt).to_bytes() == records
    assert src.asked == [{"max_version": (1, 0)}] and src.deleted == 1


def test_a_tensor_of_another_major_version_is_not_read_past_its_deleter():
    """Only the version (and the deleter) of a DLPack 2.x tensor is read: its device, shape and
    flags may be laid out otherwise, so no check of them may come first."""
    key, salt = seeded(32, 63), seeded(24, 64)
    base = device_bytes(seeded(4096, 65))
    for body in (dict(dlpack_device=(1, 0)), dict(null_shape=True), dict(shape=(-1,)),
                 dict(flags=READ_ONLY | IS_COPIED)):
        src = Producer(base, version=None, dlpack_version=(2, 0), **body)
        if "dlpack_device" in body:  # __dlpack_device__ says CUDA, the tensor says otherwise
            src._dlpack_device = lambda: (2, 0)
        with pytest.raises(ValueError, match=r"DLPack 2\.0 tensor"):
            paraes.cuda.seal(src, key=key, salt=salt, inplace=True, length=16)
        assert src.deleted == 1
        assert api.PyCapsule_GetName(src.capsules[0]) == b"used_dltensor_versioned"


def test_when_the_retry_without_max_version_fails_too_the_first_error_is_its_cause():
    """The TypeError of the call with max_version= was dropped: only the retry's error showed."""

    class TakesNothing:
        def __dlpack__(self):
            raise AssertionError("not called without arguments")

        def __dlpack_device__(self):
            return (2, 0)

    with pytest.raises(TypeError, match="stream") as raised:
        paraes.cuda.seal(TakesNothing(), key=seeded(16, 66), salt=seeded(24, 67))
    assert isinstance(raised.value.__cause__, TypeError)
    assert "max_version" in str(raised.value.__cause__)


LATE_HOLDER = r"""
#include <stdlib.h>
/* A consumer that keeps a DLPack tensor in a C static and releases it at exit(), after
   Py_Finalize (as a C++ static's destructor would). */
static void *held;
static void (*held_deleter)(void *);
static void release_late(void) { held_deleter(held); }
extern "C" void hold(void *managed, void (*deleter)(void *)) {
    held = managed;
    held_deleter = deleter;
    atexit(release_late);
}
"""

LATE_CONSUMER = r"""
import ctypes, sys
sys.path.insert(0, sys.argv[2])
from test_cuda_arrays import DLManagedTensorVersioned, api, device_bytes
buf = device_bytes(b"x" * 64)
capsule = buf.__dlpack__(max_version=(1, 0))
managed = api.PyCapsule_GetPointer(capsule, b"dltensor_versioned")
assert api.PyCapsule_SetName(capsule, b"used_dltensor_versioned") == 0
deleter = ctypes.cast(DLManagedTensorVersioned.from_address(managed).deleter, ctypes.c_void_p)
ctypes.CDLL(sys.argv[1]).hold(ctypes.c_void_p(managed), deleter)
print("held", flush=True)
"""


def test_a_consumer_may_release_an_exported_tensor_after_python_finalized(tmp_path):
    """The export's deleter attached to Python to release the buffer: run after Py_Finalize,
    pyo3 panicked inside an extern "C" function and the process aborted (status 134). Now the
    buffer's reference is leaked when Python is gone, as the DLPack Python spec's example
    deleter does."""
    import subprocess
    import sys

    source, lib = tmp_path / "hold.cpp", tmp_path / "libhold.so"
    source.write_text(LATE_HOLDER)
    cxx = os.environ.get("CXX", "c++")
    built = subprocess.run([cxx, "-shared", "-fPIC", "-o", str(lib), str(source)],
                           capture_output=True)
    assert built.returncode == 0, f"{cxx} could not build the holder: {built.stderr.decode()}"
    tests = os.path.dirname(os.path.abspath(__file__))
    run = subprocess.run([sys.executable, "-c", LATE_CONSUMER, str(lib), tests],
                         capture_output=True, timeout=120)
    assert (run.returncode, run.stdout) == (0, b"held\n"), run.stderr.decode(errors="replace")
