"""paraes for Python: the paraes container format, AES at engine speed, and a drop-in for pyaes.

Containers (format v3, byte-compatible with the ``paraes`` command line both ways)::

    import paraes
    key = paraes.generate_key()                       # 32 random bytes (or a key file's path)
    paraes.encrypt_file("data.csv", "data.csv.paraes", keys=[key])
    paraes.decrypt_file("data.csv.paraes", "copy.csv", keys=[key])
    with paraes.Reader("data.csv.paraes", keys=[key]) as r:
        r.seek(1 << 20); chunk = r.read(4096)          # random access, authenticated

Raw primitives over any buffer (bytes, bytearray, memoryview, numpy arrays): :func:`aes_ctr`,
:func:`aes_ecb_encrypt` and their ``_inplace`` forms; bare C2SP Cobblestone messages:
:func:`seal_message`, :func:`open_message` (what pyca/cryptography's ``cryptography.cobblestone``
reads and writes). ``paraes.pyaes`` is a drop-in for pyaes 1.6.1.

Calls that do real work release the GIL; buffers of 512 KiB and more are spread over every
core, smaller ones run on the calling thread. Errors are :class:`Error` (and its subclasses
:class:`AuthenticationError`, :class:`NoMatchingKeyError`), ``OSError`` for I/O, ``ValueError``
and ``TypeError`` for bad arguments, each with a one-line message.
"""

from __future__ import annotations

import io
import os
import warnings
from typing import Any, Iterable, Optional, Union

from . import _paraes
from ._paraes import (
    AuthenticationError,
    Error,
    NoMatchingKeyError,
    aes_ctr,
    aes_ctr_inplace,
    aes_ecb_decrypt,
    aes_ecb_decrypt_inplace,
    aes_ecb_encrypt,
    aes_ecb_encrypt_inplace,
    decrypt_file,
    encrypt_file,
    generate_identity,
    generate_key,
    implementation,
    open_message,
    recipient_of,
    seal_message,
    threads,
)

__all__ = [
    "AuthenticationError",
    "Error",
    "NoMatchingKeyError",
    "Reader",
    "Writer",
    "aes_ctr",
    "aes_ctr_inplace",
    "aes_ecb_decrypt",
    "aes_ecb_decrypt_inplace",
    "aes_ecb_encrypt",
    "aes_ecb_encrypt_inplace",
    "decrypt_file",
    "encrypt_file",
    "generate_identity",
    "generate_key",
    "implementation",
    "open_message",
    "recipient_of",
    "seal_message",
    "threads",
]

__version__ = "0.1.0"

StrPath = Union[str, "os.PathLike[str]"]
KeyArg = Union[bytes, bytearray, memoryview, StrPath]


class Writer(io.RawIOBase):
    """A binary stream that encrypts what is written to it into a container (format v3).

    ``dst`` is a path or a binary file object. A path gets the container only when
    :meth:`close` succeeds (it is written to an unnamed temporary file in its directory, mode
    0600, and linked into place, or where the file system cannot, to a hidden
    ``.NAME.XXXXXXXXXXXX.paraes-tmp`` that is renamed); an existing path is replaced only with
    ``overwrite=True``, and only if it is a regular file. Leaving a ``with`` block by an
    exception, calling :meth:`abort`, an error, or dropping the writer without closing it
    leaves a destination path untouched. A file object keeps what was already written to it
    (the header and every sealed chunk; with ``armor=True``, their text but a line not yet
    full): that is not a complete container, and it fails to decrypt as truncated; its ``write()`` must return how many bytes it took (``None``, a
    non-blocking stream's "nothing", is an error).

    One call at a time: a call made while another runs (from another thread, or from the file
    object's own ``write()``) raises ``RuntimeError``; :meth:`abort` and :attr:`closed` work at
    any time, from any thread (a call in progress then fails and discards the container).
    Keys, recipients and passphrase are as for :func:`encrypt_file`; ``armor=True`` writes the
    container as ASCII armor (as ``paraes enc -a``; its end line comes on :meth:`close`).
    """

    def __init__(
        self,
        dst: Union[StrPath, Any],
        *,
        keys: Iterable[KeyArg] = (),
        recipients: Iterable[Union[str, "os.PathLike[str]"]] = (),
        passphrase: Optional[Union[str, bytes]] = None,
        bits: int = 256,
        armor: bool = False,
        overwrite: bool = False,
    ) -> None:
        super().__init__()
        if not hasattr(dst, "write"):
            dst = os.fspath(dst)
        self._w = _paraes.Writer(
            dst,
            keys=list(keys),
            recipients=list(recipients),
            passphrase=passphrase,
            bits=bits,
            armor=armor,
            overwrite=overwrite,
        )

    def writable(self) -> bool:
        return True

    def write(self, b: Any) -> int:  # type: ignore[override]
        """Encrypts and writes ``b`` (any bytes-like object); returns ``len(b)`` in bytes."""
        if self.closed:
            raise ValueError("write to a closed paraes.Writer")
        return self._w.write(b)

    @property
    def closed(self) -> bool:
        """Whether the writer was closed or aborted, or discarded its container after an error."""
        w = getattr(self, "_w", None)  # absent when the constructor failed
        return w is None or w.closed or super().closed

    def close(self) -> None:
        """Seals the last chunk and commits the container (a path gets its name now)."""
        if super().closed:
            return
        w = getattr(self, "_w", None)  # absent when the constructor failed
        try:
            if w is not None:
                w.close()
        finally:
            # Still open only when another call was in progress (RuntimeError): nothing done.
            if w is None or w.closed:
                super().close()

    def abort(self) -> None:
        """Discards the container: a destination path is left as it was."""
        w = getattr(self, "_w", None)
        if w is not None:
            w.abort()
        super().close()

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        if exc_type is not None:
            self.abort()
        else:
            self.close()

    def __del__(self) -> None:
        w = getattr(self, "_w", None)
        if w is not None and not w.closed:
            warnings.warn(
                "paraes.Writer dropped without close(): the container was discarded",
                ResourceWarning,
                stacklevel=2,
            )
            w.abort()
        super().__del__()


class Reader(io.RawIOBase):
    """A readable, seekable binary stream of a container's plaintext.

    Each read authenticates and decrypts only the 16 KiB chunks it touches (the last chunk is
    checked when the reader opens, so :attr:`size` is authentic); a damaged chunk raises
    :class:`AuthenticationError` and returns none of its bytes. Wrap it in
    ``io.BufferedReader`` for line-oriented reading. Keys, identities, passphrase,
    ssh_passphrase, max_kdf_mib and allow_unverified_slot are as for :func:`decrypt_file`. An
    ASCII-armored container is read in order only: it raises ``ValueError`` here (decrypt it
    whole with :func:`decrypt_file`).
    """

    def __init__(
        self,
        src: StrPath,
        *,
        keys: Iterable[KeyArg] = (),
        identities: Iterable[Union[bytes, StrPath]] = (),
        passphrase: Optional[Union[str, bytes]] = None,
        ssh_passphrase: Optional[Union[str, bytes]] = None,
        max_kdf_mib: Optional[int] = None,
        allow_unverified_slot: bool = False,
    ) -> None:
        super().__init__()
        self._r = _paraes.Reader(
            os.fspath(src),
            keys=list(keys),
            identities=list(identities),
            passphrase=passphrase,
            ssh_passphrase=ssh_passphrase,
            max_kdf_mib=max_kdf_mib,
            allow_unverified_slot=allow_unverified_slot,
        )

    @property
    def size(self) -> int:
        """The plaintext's length in bytes."""
        return self._r.size

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def readinto(self, b: Any) -> int:  # type: ignore[override]
        if self.closed:
            raise ValueError("I/O operation on a closed paraes.Reader")
        return self._r.readinto(b)

    def read(self, size: Optional[int] = -1) -> bytes:  # type: ignore[override]
        if self.closed:
            raise ValueError("I/O operation on a closed paraes.Reader")
        return self._r.read(-1 if size is None else size)

    def readall(self) -> bytes:
        return self.read(-1)

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        if self.closed:
            raise ValueError("I/O operation on a closed paraes.Reader")
        return self._r.seek(offset, whence)

    def tell(self) -> int:
        if self.closed:
            raise ValueError("I/O operation on a closed paraes.Reader")
        return self._r.tell()

    def close(self) -> None:
        if not self.closed:
            r = getattr(self, "_r", None)  # absent when the constructor failed
            if r is not None:
                r.close()
            super().close()
