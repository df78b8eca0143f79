"""paraes.cuda: encryption straight in GPU memory (issue 38).

Containers
----------
``load(path, keys=..., identities=..., passphrase=...)`` reads a container made by
``paraes enc`` (or ``paraes.encrypt_file``) and returns a ``DeviceBuffer`` holding its
plaintext on device 0; the plaintext is decrypted on the GPU and never exists in host memory.
Keys, identities and passphrases are taken as ``paraes.decrypt_file`` takes them.
``save(buffer, path, keys=..., recipients=..., passphrase=..., replace=False)`` is the reverse:
the buffer is sealed on the device and only ciphertext comes to the host. A container that was
tampered with raises ``paraes.AuthenticationError`` and no buffer is returned; the partial
plaintext is zeroed on the device. Buffers are zeroed before their memory is freed.

Any GPU array: ``seal`` and ``open``
------------------------------------
``seal(obj, key=..., salt=...)`` and ``open(obj, key=..., salt=...)`` work on the bytes of any
C-contiguous array in GPU memory (device 0) that offers ``__cuda_array_interface__`` (versions
2 and 3: CuPy, Numba, PyTorch) or DLPack (``__dlpack__``/``__dlpack_device__``: PyTorch, CuPy,
JAX), viewed as bytes (item size x element count, from ``data + byte_offset``); nothing is
copied to the host. Where an object offers both, DLPack is used: its producer makes the bytes
ready on the stream paraes works on, which a CUDA Array Interface v2 (PyTorch's) cannot say;
the interface's read-only flag is still honoured. ``__dlpack__`` is called with
``max_version=(1, 0)``, and ``copy=False`` for ``inplace=True`` (again without them if the
producer raises ``TypeError``): a DLPack 1.x (versioned) tensor can say it is read-only, or a
copy the producer made (which in-place work refuses: it would leave the array as it was). A
capsule of either kind is consumed once (renamed ``used_dltensor`` or
``used_dltensor_versioned``) and its deleter is called when paraes is done with the memory; a
versioned tensor of a major version other than 1 is refused. Through the CUDA Array Interface
alone, a v2 producer's pending work is not waited for: synchronize it
first, or pass its stream as ``stream=``.

The layout is Cobblestone (C2SP chunked encryption, format v3's body): the plaintext in
16 KiB chunks, each sealed with AES-GCM into a record of its ciphertext and 16-byte tag, the
last chunk always shorter than 16 KiB (empty when the plaintext is whole chunks), so ``n``
bytes seal into ``sealed_len(n) = n + 16 * (n // 16384 + 1)`` bytes. ``key`` is the message's
input key: 16 bytes (Cobblestone-128) or 32 bytes (Cobblestone-256) of uniformly random data;
``salt`` is 24 bytes, fresh and random for every message sealed under a key
(``os.urandom(24)``); ``context`` (default empty) is bound into the keys. The records are
exactly what follows the 56-byte ``salt || commitment`` prefix of the message that
pyca/cryptography's ``Cobblestone*Encryptor`` or ``paraes.seal_message`` make for the same
key, salt and context: keep the salt beside the records (it is not secret). ``first_chunk``
(default 0) and ``last`` (default True) seal or open part of a longer message: chunk ``k`` of
the array is the message's chunk ``first_chunk + k``, and a span that is not ``last`` holds
whole chunks (16 KiB of plaintext, 16400-byte records).

Out of place (default), ``seal``/``open`` return a new ``DeviceBuffer`` of the records or the
plaintext. With ``inplace=True`` they work in the array itself and return the bytes they leave
at its start: ``seal(obj, ..., inplace=True, length=n)`` seals the first ``n`` bytes into
records (the array must hold ``sealed_len(n)`` bytes); ``open(obj, ..., inplace=True)`` opens
all of it (or its first ``length`` bytes) into plaintext at its start and zeroes the rest of
the records' bytes. ``open`` verifies every tag before it writes any plaintext: records that
were changed raise ``paraes.AuthenticationError`` and leave the array (in place) or nothing
(out of place) as it was.

Refused with ``ValueError`` or ``TypeError``, saying what to do: arrays that are not
C-contiguous, in host memory (a DLPack device other than CUDA, an interface without a device
pointer), on a device other than 0, not starting on a 16-byte boundary (a view inside an
allocation: copy it), read-only for ``inplace=True`` (by the CUDA Array Interface's flag or
a versioned DLPack tensor's ``READ_ONLY`` flag; an unversioned DLPack tensor cannot say so),
a copy for ``inplace=True`` (a versioned DLPack tensor's ``IS_COPIED`` flag),
and lengths that are not records of the span. ``device=`` of
``load`` is 0; any other value (negative too) is a ``ValueError``.

Streams and when results may be read
------------------------------------
Every call takes ``stream=``:

* ``None`` (default): the work runs on paraes' own stream in the primary context of device 0
  (the one the CUDA runtime, PyTorch and CuPy use) and the call synchronizes it before it
  returns: a returned buffer, or an array changed in place, may be read at once from any
  stream. An input array is read only after its producer's work: a CUDA Array Interface v3
  ``stream`` is synchronized first, and ``__dlpack__`` is called with paraes' stream.
* a stream: an int ``CUstream`` handle (0 or 1: the legacy default stream, 2: per-thread), or
  an object with ``.cuda_stream`` (``torch.cuda.Stream``) or ``.ptr`` (``cupy.cuda.Stream``):
  the work is enqueued on that stream, after what is already there, and the call returns
  without waiting for it (``open`` still waits for the tags' verdicts, ``load`` and ``save``
  for every piece of the file). Results may be read by later work on that stream, or by anyone
  after it is synchronized. Keep the input unchanged, and the stream alive, until then; out
  of place, the returned buffer holds the input (object and DLPack tensor) until the work is
  done, so a temporary may be passed straight in, and a buffer dropped while its work is
  queued waits for that work first; in place, keep the array alive yourself (it holds the
  result). A buffer made this way says so: its ``__cuda_array_interface__["stream"]`` is that
  stream (so read it through the interface only while the stream lives), and
  ``__dlpack__(stream=s)`` / ``to_bytes()`` / ``save`` wait for the point the call reached
  there (an event paraes recorded: the stream itself may be gone by then) unless ``s`` is that
  stream (or -1). ``__dlpack__(stream=...)`` of a DLPack input is called with this stream.

``DeviceBuffer`` offers ``__cuda_array_interface__`` (v3) and DLPack (``__dlpack__``,
``__dlpack_device__() == (2, 0)``, a one-dimensional uint8 tensor that keeps the buffer alive
until the consumer is done), so ``torch.from_dlpack(buf)`` and ``cupy.from_dlpack(buf)`` view
it without a copy. ``DeviceBuffer.to_bytes()`` COPIES the bytes to host memory: for tests and
small data.

Without an NVIDIA driver, the engine runs on the CUDA stand-in (the CPU) when the environment
variable ``PARAES_CUDA_STANDIN`` names it (the tests build it); otherwise calls raise
``paraes.Error`` saying that no driver was found.

Examples (not run in CI: no PyTorch there)::

    import os, torch, paraes, paraes.cuda

    weights = torch.from_dlpack(paraes.cuda.load("model.bin.paraes", keys=[key]))  # uint8, cuda:0
    t = torch.randn(1024, 1024, device="cuda")
    salt = os.urandom(24)
    sealed = paraes.cuda.seal(t, key=k32, salt=salt)            # DeviceBuffer of records
    back = torch.from_dlpack(paraes.cuda.open(sealed, key=k32, salt=salt)).view(torch.float32)
    assert torch.equal(back.view(1024, 1024), t)
"""

from __future__ import annotations

import os
from typing import Any, Optional

from . import _paraes

DeviceBuffer = _paraes.DeviceBuffer

__all__ = ["DeviceBuffer", "load", "save", "seal", "open", "sealed_len", "opened_len"]

CHUNK = 16 * 1024
TAG = 16


def _octets(name: str, value: Any) -> bytes:
    """The bytes of a bytes-like ``value``; anything else (an int would make ``bytes(n)``, n
    zero bytes: an all-zero key) is a ``TypeError``."""
    try:
        return bytes(memoryview(value))
    except TypeError:
        raise TypeError(f"{name}= takes bytes (or another bytes-like object), not "
                        f"{type(value).__name__}") from None


def sealed_len(plaintext_len: int, last: bool = True) -> int:
    """The record bytes that ``plaintext_len`` bytes seal into (``last=False``: whole chunks).
    A length that ``seal`` refuses (negative; not whole chunks unless ``last``) is a
    ``ValueError``."""
    if plaintext_len < 0 or (not last and plaintext_len % CHUNK):
        raise ValueError(f"{plaintext_len} bytes of plaintext: a length >= 0, whole 16 KiB "
                         "chunks unless last=True")
    chunks = plaintext_len // CHUNK + 1 if last else plaintext_len // CHUNK
    return plaintext_len + TAG * chunks


def opened_len(records_len: int, last: bool = True) -> int:
    """The plaintext bytes that ``records_len`` bytes of records open into. A length that
    ``open`` refuses (negative; a last record shorter than its tag; not whole records unless
    ``last``) is a ``ValueError``."""
    tail = records_len % (CHUNK + TAG)
    if records_len < 0 or (tail < TAG if last else tail):
        raise ValueError(f"{records_len} bytes are not chunk records: whole 16400-byte records, "
                         "then (last=True) a final one of 16 to 16399 bytes")
    chunks = records_len // (CHUNK + TAG) + (1 if last else 0)
    return records_len - TAG * chunks


def load(
    path: "str | os.PathLike[str]",
    *,
    keys: Any = None,
    identities: Any = None,
    passphrase: Any = None,
    ssh_passphrase: Any = None,
    max_kdf_mib: Optional[int] = None,
    allow_unverified_slot: bool = False,
    device: int = 0,
    stream: Any = None,
) -> DeviceBuffer:
    """The plaintext of the v3 container ``path`` in new memory on ``device`` (0 only). With
    ``stream=``, the load starts after the work already on that stream; the bytes are whole
    when it returns either way."""
    return _paraes.cuda_load(
        os.fspath(path),
        keys=keys,
        identities=identities,
        passphrase=passphrase,
        ssh_passphrase=ssh_passphrase,
        max_kdf_mib=max_kdf_mib,
        allow_unverified_slot=allow_unverified_slot,
        device=device,
        stream=stream,
    )


def save(
    buffer: DeviceBuffer,
    path: "str | os.PathLike[str]",
    *,
    keys: Any = None,
    recipients: Any = None,
    passphrase: Any = None,
    bits: int = 256,
    replace: bool = False,
    stream: Any = None,
) -> int:
    """Seals all of ``buffer`` on the device into a new v3 container ``path`` (``paraes dec``
    opens it), for keys, recipients and a passphrase as ``paraes.encrypt_file`` takes them.
    Only ciphertext comes to the host; ``path`` appears only when whole, and an existing file
    is kept unless ``replace``. With ``stream=``, the buffer is read after the work already on
    that stream. Returns the container's length in bytes."""
    return _paraes.cuda_save(buffer, os.fspath(path), keys=keys, recipients=recipients,
                             passphrase=passphrase, bits=bits, replace=replace, stream=stream)


def _records(obj: Any, seal: bool, key: bytes, salt: bytes, context: bytes, **options: Any):
    """seal() and open(): the keys as bytes (an int is refused, never n zero bytes)."""
    return _paraes.cuda_records(obj, seal=seal, key=_octets("key", key),
                                salt=_octets("salt", salt), context=_octets("context", context),
                                **options)


def seal(obj: Any, *, key: bytes, salt: bytes, context: bytes = b"", first_chunk: int = 0,
         last: bool = True, inplace: bool = False, length: Optional[int] = None,
         stream: Any = None) -> "DeviceBuffer | int":
    """The bytes of the GPU array ``obj`` sealed as Cobblestone chunk records (module docs):
    a new ``DeviceBuffer``, or with ``inplace=True`` (and ``length=``, the plaintext bytes at
    its start) in ``obj`` itself, returning the record bytes."""
    return _records(obj, True, key, salt, context, first_chunk=first_chunk, last=last,
                    inplace=inplace, length=length, stream=stream)


def open(obj: Any, *, key: bytes, salt: bytes, context: bytes = b"", first_chunk: int = 0,
         last: bool = True, inplace: bool = False, length: Optional[int] = None,
         stream: Any = None) -> "DeviceBuffer | int":
    """The Cobblestone chunk records in the GPU array ``obj`` opened, every tag verified
    before any plaintext is written (``paraes.AuthenticationError`` otherwise): a new
    ``DeviceBuffer``, or with ``inplace=True`` in ``obj`` itself, returning the plaintext
    bytes at its start."""
    return _records(obj, False, key, salt, context, first_chunk=first_chunk, last=last,
                    inplace=inplace, length=length, stream=stream)
