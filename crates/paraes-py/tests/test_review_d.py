"""Hostile review (session 12, reviewer D): failing tests for what the Python binding gets wrong.
Each test says what it shows; none needs a GPU, the CLI or a network.
"""

import paraes


def test_aes_ctr_past_byte_2_64_is_the_128_bit_counter_on_every_path():
    """aes_ctr documents a 128-bit big-endian counter from `offset`: stream byte p uses counter
    block iv + p // 16, so a call at offset 16*m equals a call at offset 0 from iv + m. A buffer
    of 512 KiB or more runs on the engine's threads, and each thread's slice is placed with
    `Job::advanced` (offset + bytes in u64, unchecked): a stream that crosses byte 2^64 wraps
    to offset 0, so a release build XORs the slices past 2^64 with the keystream of the
    stream's START (a two-time pad with the bytes encrypted at offset 0 under the same key and
    IV), and a debug build panics in a pool thread (PanicException, a BaseException). A buffer
    under 512 KiB, on the calling thread, gets the 128-bit counter right: the result depends on
    the buffer's size."""
    key, iv = bytes(range(16)), bytes(16)
    n = 1 << 20  # threaded (>= 512 KiB)
    m = 2**60 - 1  # offset = 16 * m = 2^64 - 16: the stream crosses byte 2^64 after 16 bytes
    shifted_iv = m.to_bytes(16, "big")
    want = paraes.aes_ctr(key, shifted_iv, bytes(n))
    # The calling-thread path agrees with the contract...
    assert paraes.aes_ctr(key, iv, bytes(1 << 16), offset=16 * m) == want[: 1 << 16]
    # ...the threaded one does not.
    got = paraes.aes_ctr(key, iv, bytes(n), offset=16 * m)
    assert got == want
    buf = bytearray(n)
    paraes.aes_ctr_inplace(key, iv, buf, offset=16 * m)
    assert bytes(buf) == want


# --- paraes.cuda: a consumed DLPack tensor released while work on it is still queued -----------

_COPY_FREED_EARLY = r'''
import ctypes, os, sys
sys.path.insert(0, sys.argv[1])
import paraes, paraes.cuda
from conftest import seeded
from test_cuda_arrays import IS_COPIED, Producer, device_bytes

CHUNK = 16 * 1024
key, salt = seeded(32, 70), seeded(24, 71)
data = seeded(2 * CHUNK + 3, 72)
base = device_bytes(data)
expected = paraes.cuda.seal(base, key=key, salt=salt).to_bytes()


class FreeingCopier(Producer):
    """A DLPack 1.x producer that exports a copy (IS_COPIED) and, as such a producer must,
    frees that copy in its deleter (Producer's deleter counts its calls in `deleted`)."""

    def __init__(self, base):
        self.copy = None
        super().__init__(base, version=None, dlpack_version=(1, 0), flags=IS_COPIED)

    @property
    def deleted(self):
        return self._deleted

    @deleted.setter
    def deleted(self, n):
        self._deleted = n
        if n:
            self.copy = None  # the copy's DeviceBuffer zeroes and frees its memory

    def _dlpack(self, stream=None, **kw):
        original = self.base
        self.base = self.copy = device_bytes(original.to_bytes())
        try:
            return super()._dlpack(stream, **kw)
        finally:
            self.base = original


cuda = ctypes.CDLL(os.environ.get("PARAES_CUDA_STANDIN") or "libcuda.so.1")
handle = ctypes.c_void_p()
assert cuda.cuStreamCreate(ctypes.byref(handle), 1) == 0
src = FreeingCopier(base)
sealed = paraes.cuda.seal(src, key=key, salt=salt, stream=handle.value)
# The seal is only enqueued on the caller's stream, but the deleter already ran.
print("deleter ran before the queued seal:", src.deleted == 1, flush=True)
# Whatever waits for paraes' own stream (here a call without stream=) runs the copy's zeroing
# and free queued there; a GPU runs both streams at once anyway.
paraes.cuda.seal(base, key=key, salt=salt)
got = sealed.to_bytes()
sys.exit(0 if got == expected else 1)
'''


def test_a_dlpack_copy_is_not_released_while_work_on_the_callers_stream_still_reads_it(cuda_driver):
    """cuda_arrays.rs `cuda_records`, out of place with stream=: the work is only enqueued on the
    caller's stream (work.finish() waits for paraes' own stream only), then `drop(array)` runs
    the DLPack deleter. For a producer that exported a copy (IS_COPIED; out of place paraes
    asks with copy unset, so a producer may copy), the deleter frees the only memory the queued
    kernel reads: a use-after-free on the device. The stand-in (lazy streams, checked frees)
    aborts: "cuMemFreeAsync freeing memory that queued work (not yet waited for) still uses".
    Run in a child process, since the stand-in aborts the process."""
    import os
    import subprocess
    import sys

    tests = os.path.dirname(os.path.abspath(__file__))
    proc = subprocess.run([sys.executable, "-c", _COPY_FREED_EARLY, tests],
                          capture_output=True, timeout=600)
    assert proc.returncode == 0, (
        f"status {proc.returncode}: {proc.stdout.decode()} {proc.stderr.decode()[-600:]}")


_TEMPORARY_FREED_EARLY = r'''
import ctypes, os, sys
sys.path.insert(0, sys.argv[1])
import paraes, paraes.cuda
from conftest import seeded
from test_cuda_arrays import device_bytes

CHUNK = 16 * 1024
key, salt = seeded(32, 70), seeded(24, 71)
data = seeded(2 * CHUNK + 3, 72)
expected = paraes.cuda.seal(device_bytes(data), key=key, salt=salt).to_bytes()
cuda = ctypes.CDLL(os.environ.get("PARAES_CUDA_STANDIN") or "libcuda.so.1")
handle = ctypes.c_void_p()
assert cuda.cuStreamCreate(ctypes.byref(handle), 1) == 0
# A temporary as the input: the call's DLPack capsule holds its only reference.
sealed = paraes.cuda.seal(device_bytes(data), key=key, salt=salt, stream=handle.value)
# Whatever waits for paraes' own stream runs what is queued there (the temporary's zeroing and
# free, when it was released at the call's end).
paraes.cuda.seal(device_bytes(data), key=key, salt=salt)
opened = paraes.cuda.open(sealed, key=key, salt=salt, stream=handle.value)
del sealed  # its work is queued: the buffer waits for it before it goes
got = opened.to_bytes()
sys.exit(0 if got == data else 1)
'''


def test_a_temporary_input_lives_until_the_work_on_the_callers_stream_is_done(cuda_driver):
    """cuda_arrays.rs `cuda_records`, out of place with stream=: the input's DLPack capsule was
    released as the call returned, with the work only queued on the caller's stream. A
    temporary passed straight in (`seal(device_bytes(...), stream=s)`, or a tensor made in the
    call's argument list) then had no other reference: its memory was zeroed and freed under
    the queued work (the stand-in aborts: "cuMemFreeAsync freeing memory that queued work (not
    yet waited for) still uses"). The buffer the work makes now holds the input until the work
    is done, and a buffer dropped while its work is queued waits for it. Found by the review of
    the device session's PyTorch script (2026-11-29)."""
    import os
    import subprocess
    import sys

    tests = os.path.dirname(os.path.abspath(__file__))
    proc = subprocess.run([sys.executable, "-c", _TEMPORARY_FREED_EARLY, tests],
                          capture_output=True, timeout=600)
    assert proc.returncode == 0, (
        f"status {proc.returncode}: {proc.stdout.decode()} {proc.stderr.decode()[-600:]}")


# --- a FIFO input with no writer: the call cannot be interrupted -------------------------------

def test_a_call_blocked_on_a_fifo_input_can_be_interrupted(tmp_path):
    """encrypt_file/decrypt_file open a FIFO input inside `py.detach` (files.rs open_input):
    with no writer the open blocks, Rust's std retries it on EINTR, and no Python signal
    handler runs, so Ctrl-C (SIGINT) does nothing: the process hangs until killed. Python's own
    open() of the same FIFO raises KeyboardInterrupt."""
    import os
    import signal
    import subprocess
    import sys
    import time

    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    calls = {
        "open()": f"open({str(fifo)!r}, 'rb')",
        "encrypt_file": f"import paraes; paraes.encrypt_file({str(fifo)!r}, {str(tmp_path / 'o1')!r}, keys=[bytes(32)])",
        "decrypt_file": f"import paraes; paraes.decrypt_file({str(fifo)!r}, {str(tmp_path / 'o2')!r}, keys=[bytes(32)])",
    }
    hung = []
    for name, code in calls.items():
        p = subprocess.Popen([sys.executable, "-c", code], stderr=subprocess.PIPE,
                             preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
        time.sleep(1.5)
        p.send_signal(signal.SIGINT)
        try:
            p.wait(5)
        except subprocess.TimeoutExpired:
            hung.append(name)
            p.kill()
            p.wait()
    assert hung == [], f"still blocked 5 s after SIGINT: {hung}"


# --- secrets: generate_identity leaves a plain copy of the identity's text behind --------------

def test_generate_identity_leaves_no_copy_of_the_secret_in_the_native_heap():
    """keys.rs `generate_identity`: `identity.to_secret_text().to_string()` copies the text out
    of its `Zeroizing<String>` (which paraes-core builds "so that an identity's text leaves no
    copy behind") into a plain String that is freed unwiped once PyO3 has made the Python str.
    Python's own small objects live in pymalloc's mmap'd arenas, so the C heap (`[heap]`, where
    the Rust allocator's small blocks go) should hold no copy once the str is gone. Linux only
    (/proc/self/mem)."""
    import gc
    import re

    def copies_in_c_heap(needle):
        n = 0
        with open("/proc/self/maps") as maps, open("/proc/self/mem", "rb", 0) as mem:
            for line in maps:
                if not line.rstrip().endswith("[heap]"):
                    continue
                a, b = (int(x, 16) for x in re.match(r"([0-9a-f]+)-([0-9a-f]+)", line).groups())
                mem.seek(a)
                n += mem.read(b - a).count(needle)
        return n

    identity, _ = paraes.generate_identity()
    needle = identity.encode()[-40:]  # the secret part's last 40 characters
    del identity
    gc.collect()
    assert copies_in_c_heap(needle) == 0
