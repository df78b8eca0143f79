"""Type stubs of paraes._paraes, the native half of the paraes package (see paraes/__init__.py)."""

import os
from typing import Any, Iterable, Literal, Optional, Tuple, TypedDict, Union

from typing_extensions import Buffer

StrPath = Union[str, os.PathLike[str]]
# A key: a key file's contents (16/24/32 raw bytes or hex) as bytes, or a key file's path.
KeyArg = Union[Buffer, StrPath]
# An identity: an identity file's text (paraes's, or an OpenSSH private key; bytes or str) or
# its path.
IdentityArg = Union[Buffer, StrPath]
# A recipient: paraes1.../paraespq1... or an ssh-ed25519/ssh-rsa public key line as str, or a
# recipients file's path (os.PathLike).
RecipientArg = Union[str, os.PathLike[str]]
Passphrase = Union[str, bytes]

class IoMode(TypedDict):
    """How a file's chunks ran, many in flight (the CLI's `--stats json` "io")."""
    read: Literal["offsets", "stream"]
    write: Literal["offsets", "stream"]
    workers: int
    # The GCM records were sealed or opened in place: read into their data slots, written from
    # between the tags (no copy of a window between two buffers).
    records_in_place: bool

class FileStats(TypedDict):
    """What encrypt_file / decrypt_file read and wrote, and how (the CLI's `--stats json` keys):
    io is None where a file under THREADED_FROM bytes ran in turn on the calling thread."""
    bytes_in: int
    bytes_out: int
    io: Optional[IoMode]

class Error(Exception):
    """A paraes operation failed (the message says why, in one line)."""

class AuthenticationError(Error):
    """Data failed authentication: damaged, truncated, reordered or tampered with."""

class NoMatchingKeyError(Error):
    """None of the given keys, passphrases or identities opens this file or message."""

DETACH_FROM: int
THREADED_FROM: int

# recipe-example: python-function (its stub)
def _recipe_example(length: int) -> int:
    """How many 16-byte AES blocks `length` bytes span (ARCHITECTURE.md's worked example)."""

def implementation() -> str:
    """The AES implementation the engine runs: vaes512, vaes256, aesni or portable."""

def threads() -> int:
    """The number of threads the engine spreads large buffers over."""

def aes_ctr(key: Buffer, iv: Buffer, data: Buffer, *, offset: int = 0) -> bytes:
    """AES-CTR of data (new bytes): block i uses the 128-bit big-endian counter iv + i
    (NIST SP 800-38A, OpenSSL), starting offset bytes into the stream."""

def aes_ctr_inplace(key: Buffer, iv: Buffer, buffer: Buffer, *, offset: int = 0) -> None:
    """AES-CTR in place over a writable buffer."""

def aes_ecb_encrypt(key: Buffer, data: Buffer) -> bytes:
    """AES-ECB encryption of whole 16-byte blocks (no padding)."""

def aes_ecb_decrypt(key: Buffer, data: Buffer) -> bytes:
    """AES-ECB decryption of whole 16-byte blocks (no padding)."""

def aes_ecb_encrypt_inplace(key: Buffer, buffer: Buffer) -> None:
    """AES-ECB encryption in place over a writable buffer of whole blocks."""

def aes_ecb_decrypt_inplace(key: Buffer, buffer: Buffer) -> None:
    """AES-ECB decryption in place over a writable buffer of whole blocks."""

def seal_message(key: Buffer, plaintext: Buffer, *, context: Optional[Buffer] = None) -> bytes:
    """A bare C2SP chunked-encryption message (Cobblestone-128 for a 16-byte key, -256 for 32)."""

def open_message(key: Buffer, message: Buffer, *, context: Optional[Buffer] = None) -> bytes:
    """The plaintext of a bare message; every chunk is checked before any is returned."""

def encrypt_file(
    src: StrPath,
    dst: StrPath,
    *,
    keys: Optional[Iterable[KeyArg]] = None,
    recipients: Optional[Iterable[RecipientArg]] = None,
    passphrase: Optional[Passphrase] = None,
    bits: int = 256,
    armor: bool = False,
    overwrite: bool = False,
) -> FileStats:
    """Encrypts src into a new container dst (format v3, as `paraes enc`), with many chunks in
    flight on max(2, threads()) workers, read and written at offsets where src is a regular file;
    armor=True writes ASCII armor (as `paraes enc -a`, in order); returns what ran."""

def decrypt_file(
    src: StrPath,
    dst: StrPath,
    *,
    keys: Optional[Iterable[KeyArg]] = None,
    identities: Optional[Iterable[IdentityArg]] = None,
    passphrase: Optional[Passphrase] = None,
    ssh_passphrase: Optional[Passphrase] = None,
    max_kdf_mib: Optional[int] = None,
    allow_unverified_slot: bool = False,
    overwrite: bool = False,
) -> FileStats:
    """Decrypts the container src into dst, which appears only if all of it was authentic;
    returns what ran (as encrypt_file). src may be ASCII-armored (as `paraes dec` reads it).

    ssh_passphrase unlocks the SSH private keys among the identities that have one;
    max_kdf_mib caps the Argon2id work (MiB x passes) a passphrase stanza may ask (default
    3072, as the CLI's --max-kdf-mib); allow_unverified_slot opens a format v2 file whose
    second stanza slot the opening key does not authenticate (--allow-unverified-slot)."""

class DeviceBuffer:
    """Bytes in device memory made by paraes.cuda (zeroed before they are freed)."""
    @property
    def nbytes(self) -> int: ...
    @property
    def device(self) -> int: ...
    @property
    def __cuda_array_interface__(self) -> dict: ...
    def __dlpack_device__(self) -> tuple[int, int]: ...
    def __dlpack__(
        self,
        *,
        stream: Optional[int] = None,
        max_version: Optional[tuple[int, int]] = None,
        dl_device: Optional[tuple[int, int]] = None,
        copy: Optional[bool] = None,
    ) -> Any:
        """A DLPack capsule of its bytes (1-D uint8, CUDA device 0): "dltensor_versioned"
        (DLPack 1.0) when max_version's major is 1 or more, else "dltensor"."""
    def to_bytes(self) -> bytes:
        """A COPY of the bytes in host memory (tests, small data)."""

def cuda_load(
    path: StrPath,
    *,
    keys: Optional[Iterable[KeyArg]] = None,
    identities: Optional[Iterable[IdentityArg]] = None,
    passphrase: Optional[Passphrase] = None,
    ssh_passphrase: Optional[Passphrase] = None,
    max_kdf_mib: Optional[int] = None,
    allow_unverified_slot: bool = False,
    device: int = 0,
    stream: Any = None,
) -> DeviceBuffer:
    """paraes.cuda.load: the plaintext of the v3 container path in device memory."""

def cuda_save(
    buffer: DeviceBuffer,
    path: StrPath,
    *,
    keys: Optional[Iterable[KeyArg]] = None,
    recipients: Optional[Iterable[RecipientArg]] = None,
    passphrase: Optional[Passphrase] = None,
    bits: int = 256,
    replace: bool = False,
    stream: Any = None,
) -> int:
    """paraes.cuda.save: buffer sealed on the device into a new v3 container; its length."""

def cuda_records(
    obj: Any,
    *,
    seal: bool,
    key: bytes,
    salt: bytes,
    context: bytes = b"",
    first_chunk: int = 0,
    last: bool = True,
    inplace: bool = False,
    length: Optional[int] = None,
    stream: Any = None,
) -> "DeviceBuffer | int":
    """paraes.cuda.seal (seal=True) and paraes.cuda.open (seal=False): a GPU array's bytes
    sealed as Cobblestone chunk records, or records opened with every tag verified first."""

def generate_key(bits: int = 256) -> bytes:
    """A fresh random AES key of 128, 192 or 256 bits, as raw bytes."""

def generate_identity(*, pq: bool = False) -> Tuple[str, str]:
    """A fresh identity: (identity text, recipient). pq=True: ML-KEM-768 + X25519."""

def recipient_of(identity: str) -> str:
    """The recipient of an identity's text."""

class Writer:
    """The native writer behind paraes.Writer."""

    def __init__(
        self,
        dst: Union[StrPath, Any],
        *,
        keys: Optional[Iterable[KeyArg]] = None,
        recipients: Optional[Iterable[RecipientArg]] = None,
        passphrase: Optional[Passphrase] = None,
        bits: int = 256,
        armor: bool = False,
        overwrite: bool = False,
    ) -> None: ...
    def write(self, data: Buffer) -> int: ...
    def close(self) -> None: ...
    def abort(self) -> None: ...
    @property
    def closed(self) -> bool: ...

class Reader:
    """The native reader behind paraes.Reader."""

    def __init__(
        self,
        src: StrPath,
        *,
        keys: Optional[Iterable[KeyArg]] = None,
        identities: Optional[Iterable[IdentityArg]] = None,
        passphrase: Optional[Passphrase] = None,
        ssh_passphrase: Optional[Passphrase] = None,
        max_kdf_mib: Optional[int] = None,
        allow_unverified_slot: bool = False,
    ) -> None: ...
    @property
    def size(self) -> int: ...
    def readinto(self, buffer: Buffer) -> int: ...
    def read(self, size: Optional[int] = -1) -> bytes: ...
    def seek(self, offset: int, whence: int = 0) -> int: ...
    def tell(self) -> int: ...
    def close(self) -> None: ...
    @property
    def closed(self) -> bool: ...

class BlockCipher:
    """One AES key, for paraes.pyaes."""

    def __init__(self, key: Buffer) -> None: ...
    def encrypt_block(self, block: bytes) -> bytes: ...
    def decrypt_block(self, block: bytes) -> bytes: ...

def pyaes_ctr(
    cipher: BlockCipher, counter: Any, leftover: bytes, data: Buffer
) -> Optional[Tuple[bytes, bytes]]:
    """pyaes's CTR step for the exact paraes.pyaes.Counter type (None: use pyaes's semantics)."""

def xor(data: Buffer, keystream: Buffer) -> bytes:
    """data XOR the first len(data) bytes of keystream."""
