"""paraes.cuda: v3 containers decrypted straight into GPU memory (issue 38, first slice).

``load(path, keys=..., identities=..., passphrase=...)`` reads a container made by
``paraes enc`` (or ``paraes.encrypt_file``) and returns a ``DeviceBuffer`` holding its
plaintext on device 0; the plaintext is decrypted on the GPU and never exists in host memory.
Keys, identities and passphrases are taken as ``paraes.decrypt_file`` takes them.
``save(buffer, path, keys=..., recipients=..., passphrase=..., replace=False)`` is the reverse:
the buffer is sealed on the device and only ciphertext comes to the host.

Device and stream rules: the work runs in the primary context of device 0 (the one the CUDA
runtime, PyTorch and CuPy use), ordered on paraes' own stream, and ``load`` returns only once
every tag verified and the plaintext is whole: the buffer may be read at once from any stream
(its ``__cuda_array_interface__`` says ``stream: None``). A container that was tampered with
raises ``paraes.AuthenticationError`` and no buffer is returned; the partial plaintext is
zeroed on the device. Buffers are zeroed before their memory is freed.

``DeviceBuffer.to_bytes()`` COPIES the plaintext to host memory: for tests and small data.

Without an NVIDIA driver, the engine runs on the CUDA stand-in (the CPU) when the environment
variable ``PARAES_CUDA_STANDIN`` names it (the tests build it); otherwise ``load`` raises
``paraes.Error`` saying that no driver was found.
"""

from __future__ import annotations

import os
from typing import Any, Optional

from . import _paraes

DeviceBuffer = _paraes.DeviceBuffer

__all__ = ["DeviceBuffer", "load", "save"]


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
) -> DeviceBuffer:
    """The plaintext of the v3 container ``path`` in new memory on ``device`` (0 only)."""
    return _paraes.cuda_load(
        os.fspath(path),
        keys=keys,
        identities=identities,
        passphrase=passphrase,
        ssh_passphrase=ssh_passphrase,
        max_kdf_mib=max_kdf_mib,
        allow_unverified_slot=allow_unverified_slot,
        device=device,
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
) -> int:
    """Seals all of ``buffer`` on the device into a new v3 container ``path`` (``paraes dec``
    opens it), for keys, recipients and a passphrase as ``paraes.encrypt_file`` takes them.
    Only ciphertext comes to the host; ``path`` appears only when whole, and an existing file
    is kept unless ``replace``. Returns the container's length in bytes."""
    return _paraes.cuda_save(buffer, os.fspath(path), keys=keys, recipients=recipients,
                             passphrase=passphrase, bits=bits, replace=replace)
