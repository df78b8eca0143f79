#!/usr/bin/env python3
"""A second, independent reader of the paraes container format v3 and of bare
Cobblestone messages, written from docs/FORMAT.md alone (no paraes source, no
paraes tests). It reads every stanza kind FORMAT.md defines: key file (1),
passphrase (2), X25519 (3), X-Wing (4), ssh-ed25519 (5) and ssh-rsa (6).

Library:
    read_container(data: bytes, identities, *, max_kdf_mib=3072) -> bytes
    open_container(...) -> Opened (file key, input key, context, ignored slots)
    read_message(data: bytes, key: bytes, context: bytes) -> bytes
    parse_identity_file(text) -> identities (Bech32 X25519 / X-Wing, or one SSH private key)
Both readers raise ReaderError(cls, message), cls one of
    "no_match"        no identity opens a stanza
    "refused"         nothing opened, and a refusal was met: a slot that names one SSH key
                      more than twice (step 3), or an SSH key that could not be unlocked
    "commitment"      a slot opens but the body's key commitment does not match
    "chunk"           a chunk fails authentication, or the message framing is wrong
    "header"          malformed header, or the slot tag fails
    "unsupported"     a well-formed header of a format this reader does not read (v1, v2)
A second parsed slot that does not verify under the file key is ignored (step 5, format
v3) and listed in Opened.ignored_slots; it is no error.

CLI:
    paraes_reader.py container FILE [-k KEYFILE]... [--key HEX]... [-i IDFILE]...
                     [--passphrase-file F] [--ssh-passphrase-file F] [--max-kdf-mib N]
                     [--length-after-keys] [-o OUT] [--show-data-key]
    paraes_reader.py message FILE (--key HEX | -k KEYFILE) [--context TEXT | --context-hex HEX]
                     [-o OUT]

Dependencies: pyca/cryptography >= 50 (AES-GCM, AES-GCM-SIV, HKDF, X25519, Argon2id,
ML-KEM-768, RSA-OAEP, OpenSSH and PEM private keys); hashlib's SHAKE256, SHA3-256,
SHA-256 and SHA-512; the `blake3` package if importable, else the pure-Python BLAKE3
next to this file.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import hmac
import os
import struct
import sys
from dataclasses import dataclass, field


def _prefer_pyca_50() -> None:
    """If the cryptography on sys.path is older than 50, use a pyca 50 install that this
    project keeps (target/pyca/site) or that its docs suggest (/tmp/pyca-site), if present."""
    from importlib import metadata
    try:
        major = int(metadata.version("cryptography").split(".")[0])
    except (metadata.PackageNotFoundError, ValueError):
        major = 0
    if major >= 50 or "cryptography" in sys.modules:
        return
    repo = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
    for cand in (os.path.join(repo, "target", "pyca", "site"), "/tmp/pyca-site"):
        if os.path.isdir(os.path.join(cand, "cryptography")):
            sys.path.insert(0, cand)
            return


_prefer_pyca_50()

from cryptography.exceptions import InvalidTag  # noqa: E402
from cryptography.hazmat.primitives import hashes, serialization  # noqa: E402
from cryptography.hazmat.primitives.asymmetric import ed25519, padding, rsa  # noqa: E402
from cryptography.hazmat.primitives.asymmetric.mlkem import MLKEM768PrivateKey  # noqa: E402
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey, X25519PublicKey  # noqa: E402
from cryptography.hazmat.primitives.ciphers.aead import AESGCM, AESGCMSIV  # noqa: E402
from cryptography.hazmat.primitives.kdf.argon2 import Argon2id  # noqa: E402
from cryptography.hazmat.primitives.kdf.hkdf import HKDF  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

try:  # the blake3 package (a Rust extension) if present, else our pure-Python one
    import blake3 as _blake3_pkg

    def blake3_keyed_hash(key: bytes, data: bytes, length: int = 32) -> bytes:
        return _blake3_pkg.blake3(data, key=key).digest(length)

    def blake3_derive_key(context: str, material: bytes, length: int = 32) -> bytes:
        return _blake3_pkg.blake3(material, derive_key_context=context).digest(length)

    BLAKE3_IMPL = "blake3 package " + getattr(_blake3_pkg, "__version__", "?")
except ImportError:  # pragma: no cover - exercised when blake3 is absent
    import blake3_pure as _blake3_pure

    blake3_keyed_hash = _blake3_pure.keyed_hash
    blake3_derive_key = _blake3_pure.derive_key
    BLAKE3_IMPL = "pure Python (blake3_pure.py)"


# --------------------------------------------------------------------------- errors

ERROR_CLASSES = ("no_match", "refused", "commitment", "chunk", "header", "unsupported")


class ReaderError(Exception):
    def __init__(self, cls: str, message: str):
        assert cls in ERROR_CLASSES, cls
        super().__init__(f"{cls}: {message}")
        self.cls = cls
        self.message = message


# --------------------------------------------------------------------------- constants

MAGIC = bytes.fromhex("89504152414553 0a".replace(" ", ""))
PREAMBLE_LEN = 64
MAX_SLOT_LEN = 1 << 20  # "S <= 1 MiB"
GEN_INVALID_HIGH = (1 << 64) - 1

KIND_KEY_FILE, KIND_PASSPHRASE, KIND_X25519, KIND_HYBRID = 1, 2, 3, 4
KIND_SSH_ED25519, KIND_SSH_RSA = 5, 6
KNOWN_BODY_LEN = {KIND_KEY_FILE: 64, KIND_PASSPHRASE: 76, KIND_X25519: 80, KIND_HYBRID: 1168,
                  KIND_SSH_ED25519: 84}
# kind 6: 4 (tag) + k (256 ..= 2,048) + 48
BODY_LEN_RANGE = {KIND_SSH_RSA: (4 + 256 + 48, 4 + 2048 + 48)}
SSH_KINDS = (KIND_SSH_ED25519, KIND_SSH_RSA)

WRAP_AAD_PREFIX = b"paraes 2026-11 container v2 wrapped file key"  # 44 bytes
INFO_KEY_FILE = b"paraes 2026-11 container v2 key-file stanza wrap key"
INFO_PASSPHRASE = b"paraes 2026-11 container v2 passphrase stanza wrap key"
INFO_X25519 = b"paraes 2026-11 container v2 X25519 stanza wrap key"
INFO_XWING = b"paraes 2026-11 container v2 X-Wing stanza wrap key"
INFO_SSH_ED25519 = b"paraes 2026-11 container v2 ssh-ed25519 stanza wrap key"
INFO_SSH_ED25519_TWEAK = b"paraes 2026-11 container v2 ssh-ed25519 stanza tweak"
INFO_SSH_RSA = b"paraes 2026-11 container v2 ssh-rsa stanza wrap key"
SSH_RSA_OAEP_LABEL = b"paraes 2026-11 container v2 ssh-rsa stanza"
XWING_LABEL = bytes.fromhex("5c2e2f2f5e5c")  # the 6 ASCII bytes \.//^\
MIN_RSA_BITS, MAX_RSA_BITS = 2048, 16384

CTX_V3_HEADER = "paraes 2026-11 container v3 header MAC key"
CTX_V3_BODY = "paraes 2026-11 container v3 body input key"

DEFAULT_MAX_KDF_MIB = 3072

# Cobblestone (C2SP chunked-encryption v1, pyca's instantiation)
CS_LABEL = b"c2sp.org/chunked-encryption@v1+"
CS_SALT_LEN = 24
CS_COMMIT_LEN = 32
CS_PREFIX_LEN = CS_SALT_LEN + CS_COMMIT_LEN  # 56
CS_CHUNK = 16384
CS_TAG = 16
CS_RECORD = CS_CHUNK + CS_TAG  # 16400
CS_MAX_CHUNKS = 1 << 38

V3_CHUNK_SIZE = 16384

assert len(WRAP_AAD_PREFIX) == 44 and len(MAGIC) == 8 and XWING_LABEL == b"\\.//^\\"


# --------------------------------------------------------------------------- identities

@dataclass
class KeyIdentity:
    """A key file's K (16, 24 or 32 bytes)."""
    key: bytes


@dataclass
class PassphraseIdentity:
    passphrase: bytes


@dataclass
class X25519Identity:
    secret: bytes  # 32-byte scalar, clamped when used (pyca clamps)


# --- X25519 (RFC 7748) ---------------------------------------------------------------------
# pyca computes X25519 but refuses an all-zero result. The X-Wing stanza needs that result
# ("an all-zero ss_X is not refused here: it enters the combiner"), so when pyca refuses, the
# RFC 7748 ladder below gives it.

_P25519 = 2 ** 255 - 19


def _x25519_ladder(k: bytes, u: bytes) -> bytes:
    """X25519(k, u) exactly as RFC 7748 section 5 (scalar clamped, u's top bit masked)."""
    kb = bytearray(k)
    kb[0] &= 248
    kb[31] &= 127
    kb[31] |= 64
    scalar = int.from_bytes(kb, "little")
    x1 = (int.from_bytes(u, "little") & ((1 << 255) - 1)) % _P25519
    x2, z2, x3, z3, swap = 1, 0, x1, 1, 0
    p = _P25519
    for t in reversed(range(255)):
        bit = (scalar >> t) & 1
        if swap ^ bit:
            x2, x3, z2, z3 = x3, x2, z3, z2
        swap = bit
        a, b = (x2 + z2) % p, (x2 - z2) % p
        aa, bb = a * a % p, b * b % p
        e = (aa - bb) % p
        c, d = (x3 + z3) % p, (x3 - z3) % p
        da, cb = d * a % p, c * b % p
        x3 = (da + cb) ** 2 % p
        z3 = x1 * (da - cb) ** 2 % p
        x2 = aa * bb % p
        z2 = e * (aa + 121665 * e) % p
    if swap:
        x2, z2 = x3, z3
    return (x2 * pow(z2, p - 2, p) % p).to_bytes(32, "little")


def x25519(k: bytes, u: bytes) -> bytes:
    """X25519(k, u), 32 bytes; all zero when u is a low-order point (pyca would refuse)."""
    try:
        return X25519PrivateKey.from_private_bytes(k).exchange(
            X25519PublicKey.from_public_bytes(u))
    except ValueError:
        out = _x25519_ladder(k, u)
        assert not any(out), "pyca refused a non-zero X25519 result"
        return out


X25519_BASE = (9).to_bytes(32, "little")


# --- X-Wing (kind 4): "The X-Wing stanza (kind 4)" ------------------------------------------

@dataclass
class XWingIdentity:
    """A `PARAES-PQ-SECRET-KEY-1...` identity: the 32-byte X-Wing seed sk, expanded on first
    use as FORMAT.md says (SHAKE256(sk) -> d, z, sk_X)."""
    seed: bytes
    _expanded: tuple | None = field(default=None, repr=False, compare=False)

    def expand(self):
        """(ML-KEM-768 decapsulation key, sk_X, pk_X, ek_M)."""
        if self._expanded is None:
            x = hashlib.shake_256(self.seed).digest(96)
            # ML-KEM-768.KeyGen_internal(d = x[0..32], z = x[32..64]); pyca takes FIPS 203's
            # 64-byte seed form, d || z.
            dk_m = MLKEM768PrivateKey.from_seed_bytes(x[0:64])
            sk_x = x[64:96]
            pk_x = x25519(sk_x, X25519_BASE)
            self._expanded = (dk_m, sk_x, pk_x, dk_m.public_key().public_bytes_raw())
        return self._expanded

    def recipient_bytes(self) -> bytes:
        """ek_M (1,184) || pk_X (32): the `paraespq1...` payload."""
        _, _, pk_x, ek_m = self.expand()
        return ek_m + pk_x

    def decapsulate(self, ct_m: bytes, ct_x: bytes) -> bytes:
        """The X-Wing shared secret ss (32 bytes) for the ciphertext ct_M || ct_X."""
        dk_m, sk_x, pk_x, _ = self.expand()
        ss_m = dk_m.decapsulate(ct_m)  # implicit rejection: never an error
        ss_x = x25519(sk_x, ct_x)      # an all-zero ss_X is used as it is
        return hashlib.sha3_256(ss_m + ss_x + ct_x + pk_x + XWING_LABEL).digest()


# --- SSH identities (kinds 5 and 6): "SSH stanzas", and "OpenSSH's text" ---------------------

def _ssh_string(b: bytes) -> bytes:
    return len(b).to_bytes(4, "big") + b


def _ssh_mpint(x: int) -> bytes:
    """RFC 4251 section 5's mpint of a non-negative x, minimal."""
    if x == 0:
        return _ssh_string(b"")
    b = x.to_bytes((x.bit_length() + 7) // 8, "big")
    if b[0] & 0x80:
        b = b"\x00" + b
    return _ssh_string(b)


def _ssh_read_string(buf: bytes, pos: int) -> tuple[bytes, int]:
    if pos + 4 > len(buf):
        raise ValueError("SSH key data ends inside a length")
    n = int.from_bytes(buf[pos:pos + 4], "big")
    if pos + 4 + n > len(buf):
        raise ValueError("SSH key data ends inside a string")
    return buf[pos + 4:pos + 4 + n], pos + 4 + n


def ssh_ed25519_wire(a: bytes) -> bytes:
    return _ssh_string(b"ssh-ed25519") + _ssh_string(a)


def ssh_rsa_wire(e: int, n: int) -> bytes:
    return _ssh_string(b"ssh-rsa") + _ssh_mpint(e) + _ssh_mpint(n)


def _check_rsa_public(e: int, n: int) -> None:
    bits = n.bit_length()
    if not MIN_RSA_BITS <= bits <= MAX_RSA_BITS:
        raise ValueError(f"an RSA key of {bits} bits (2,048 to 16,384 are read)")
    if n % 2 == 0:
        raise ValueError("an RSA modulus that is even")
    if e % 2 == 0 or not 3 <= e <= (1 << 33) - 1:
        raise ValueError(f"an RSA exponent outside the odd 3 ..= 2^33 - 1 ({e})")


class SshLocked(Exception):
    """An SSH key with a passphrase that this run cannot unlock."""


@dataclass
class SshIdentity:
    """An SSH private key file (OpenSSH's format, or PEM PKCS#1 / PKCS#8 RSA). Its public key
    (the wire key, hence the 4-byte SSH key tag) is known without unlocking it; the private
    key is loaded only for a stanza whose tag is this key's."""
    kind: int          # KIND_SSH_ED25519 or KIND_SSH_RSA
    wire: bytes        # the public key's SSH wire encoding
    text: bytes        # the private key file
    encrypted: bool
    passphrase: bytes | None = None
    _private: object = field(default=None, repr=False, compare=False)

    @property
    def tag(self) -> bytes:
        return hashlib.sha256(self.wire).digest()[:4]

    def private(self):
        if self._private is None:
            if self.text.lstrip().startswith(b"-----BEGIN OPENSSH PRIVATE KEY-----"):
                if self.encrypted and self.passphrase is None:
                    raise SshLocked("an SSH key with a passphrase, and no passphrase to "
                                    "unlock it")
                try:
                    key = serialization.load_ssh_private_key(
                        self.text, self.passphrase if self.encrypted else None)
                except Exception as e:  # noqa: BLE001 - wrong passphrase, no bcrypt module
                    raise SshLocked(f"the SSH key could not be unlocked: {e}") from None
            else:
                key = serialization.load_pem_private_key(self.text, None)
            _check_ssh_private(self, key)
            self._private = key
        return self._private


def _check_ssh_private(ident: SshIdentity, key) -> None:
    """The private key must be the public key's: an Ed25519 seed must give its public key A,
    an RSA key's numbers must agree (pyca checks them when it loads the key)."""
    if ident.kind == KIND_SSH_ED25519:
        if not isinstance(key, ed25519.Ed25519PrivateKey):
            raise ValueError("an ssh-ed25519 key whose private part is not Ed25519")
        if ssh_ed25519_wire(key.public_key().public_bytes_raw()) != ident.wire:
            raise ValueError("an Ed25519 private key whose seed does not give its public key")
    else:
        if not isinstance(key, rsa.RSAPrivateKey):
            raise ValueError("an ssh-rsa key whose private part is not RSA")
        pub = key.public_key().public_numbers()
        if ssh_rsa_wire(pub.e, pub.n) != ident.wire:
            raise ValueError("an RSA private key whose numbers disagree with its public key")


def parse_ssh_private_key(text: bytes, passphrase: bytes | None = None) -> SshIdentity:
    """An identity file that is an SSH private key ("OpenSSH's text")."""
    lines = text.split(b"\n")
    first = next((ln.strip() for ln in lines if ln.strip()), b"")
    if first == b"-----BEGIN OPENSSH PRIVATE KEY-----":
        # The header (magic, cipher, KDF, KDF options, key count, public key) is not
        # encrypted: the wire key, and so the SSH key tag, is known without the passphrase.
        b64 = []
        inside = False
        for ln in lines:
            t = ln.strip()
            if t == b"-----BEGIN OPENSSH PRIVATE KEY-----":
                inside = True
            elif t == b"-----END OPENSSH PRIVATE KEY-----":
                break
            elif inside:
                b64.append(t)
        try:
            blob = base64.b64decode(b"".join(b64), validate=True)
        except ValueError:
            raise ValueError("an OpenSSH private key whose base64 does not decode") from None
        magic = b"openssh-key-v1\x00"
        if not blob.startswith(magic):
            raise ValueError("not an OpenSSH private key (no openssh-key-v1 magic)")
        pos = len(magic)
        cipher, pos = _ssh_read_string(blob, pos)
        kdf, pos = _ssh_read_string(blob, pos)
        _, pos = _ssh_read_string(blob, pos)  # KDF options
        if pos + 4 > len(blob) or int.from_bytes(blob[pos:pos + 4], "big") != 1:
            raise ValueError("an OpenSSH private key file holding other than one key")
        wire, pos = _ssh_read_string(blob, pos + 4)
        key_type, q = _ssh_read_string(wire, 0)
        if key_type == b"ssh-ed25519":
            a, q = _ssh_read_string(wire, q)
            if len(a) != 32 or q != len(wire):
                raise ValueError("a malformed ssh-ed25519 public key")
            kind = KIND_SSH_ED25519
        elif key_type == b"ssh-rsa":
            e_raw, q = _ssh_read_string(wire, q)
            n_raw, q = _ssh_read_string(wire, q)
            if q != len(wire):
                raise ValueError("a malformed ssh-rsa public key")
            e, n = int.from_bytes(e_raw, "big"), int.from_bytes(n_raw, "big")
            _check_rsa_public(e, n)
            wire = ssh_rsa_wire(e, n)  # minimal mpints, as FORMAT.md defines the wire key
            kind = KIND_SSH_RSA
        else:
            raise ValueError(f"an SSH key of type {key_type.decode(errors='replace')!r} "
                             "(ssh-ed25519 and ssh-rsa are read)")
        encrypted = cipher != b"none" or kdf != b"none"
        ident = SshIdentity(kind, wire, bytes(text), encrypted, passphrase)
        if not encrypted:
            ident.private()  # checked now, as when the file is read
        return ident
    if first in (b"-----BEGIN RSA PRIVATE KEY-----", b"-----BEGIN PRIVATE KEY-----"):
        if b"ENCRYPTED" in text.split(b"-----END", 1)[0]:
            raise ValueError("a PEM private key with a passphrase (convert it with "
                             "ssh-keygen -p -f FILE)")
        key = serialization.load_pem_private_key(bytes(text), None)
        if not isinstance(key, rsa.RSAPrivateKey):
            raise ValueError("a PEM private key that is not RSA")
        pub = key.public_key().public_numbers()
        _check_rsa_public(pub.e, pub.n)
        ident = SshIdentity(KIND_SSH_RSA, ssh_rsa_wire(pub.e, pub.n), bytes(text), False)
        ident._private = key
        return ident
    raise ValueError("not a private key form paraes reads (OpenSSH's, PEM PKCS#1 or PKCS#8 "
                     "RSA)")


Identity = KeyIdentity | PassphraseIdentity | X25519Identity | XWingIdentity | SshIdentity


# Bech32 (BIP 173), decoding as "Recipients and identities as text" says.
_BECH32_CHARSET = "qpzry9x8gf2tvdw0s3jn54khce6mua7l"
_BECH32_GEN = (0x3B6A57B2, 0x26508E6D, 0x1EA119FA, 0x3D4233DD, 0x2A1462B3)


def _bech32_polymod(values) -> int:
    chk = 1
    for v in values:
        b = chk >> 25
        chk = ((chk & 0x1FFFFFF) << 5) ^ v
        for i in range(5):
            if (b >> i) & 1:
                chk ^= _BECH32_GEN[i]
    return chk


def bech32_decode(text: str) -> tuple[str, bytes]:
    s = text.strip()
    if len(s) > 4096:
        raise ValueError("Bech32 string longer than 4,096 characters")
    if s.lower() != s and s.upper() != s:
        raise ValueError("mixed-case Bech32 string")
    s = s.lower()
    if any(ord(c) < 33 or ord(c) > 126 for c in s):
        raise ValueError("invalid character in Bech32 string")
    pos = s.rfind("1")
    if pos < 1 or pos + 7 > len(s):
        raise ValueError("no Bech32 separator or checksum")
    hrp, data_part = s[:pos], s[pos + 1:]
    try:
        data = [_BECH32_CHARSET.index(c) for c in data_part]
    except ValueError:
        raise ValueError("invalid Bech32 data character") from None
    expanded = [ord(c) >> 5 for c in hrp] + [0] + [ord(c) & 31 for c in hrp]
    if _bech32_polymod(expanded + data) != 1:  # BIP 173 constant 1 (not Bech32m)
        raise ValueError("bad Bech32 checksum")
    acc, bits, out = 0, 0, bytearray()
    for v in data[:-6]:
        acc = (acc << 5) | v
        bits += 5
        if bits >= 8:
            bits -= 8
            out.append((acc >> bits) & 0xFF)
    # leftover bits (< 8) are dropped without checking they are zero (as FORMAT.md says)
    return hrp, bytes(out)


def parse_identity_line(text: str) -> Identity:
    """One Bech32 identity string ("Recipients and identities as text")."""
    hrp, payload = bech32_decode(text)
    if hrp == "paraes-secret-key-":
        if len(payload) != 32:
            raise ValueError("X25519 identity payload is not 32 bytes")
        return X25519Identity(payload)
    if hrp == "paraes-pq-secret-key-":
        if len(payload) != 32:
            raise ValueError("X-Wing identity payload is not 32 bytes")
        return XWingIdentity(payload)
    raise ValueError(f"not an identity (HRP {hrp!r})")


def parse_identity_file(text: str | bytes, ssh_passphrase: bytes | None = None) -> list[Identity]:
    """An identity file (-i): an SSH private key when its first non-blank line is a private
    key's BEGIN line, else Bech32 identities, one a line (trimmed; blank lines and # comments
    skipped; at least one)."""
    raw = text.encode("utf-8") if isinstance(text, str) else bytes(text)
    first = next((ln.strip() for ln in raw.split(b"\n") if ln.strip()), b"")
    if first.startswith(b"-----BEGIN "):
        return [parse_ssh_private_key(raw, ssh_passphrase)]
    ids: list[Identity] = []
    for line in raw.decode("utf-8").split("\n"):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        ids.append(parse_identity_line(line))
    if not ids:
        raise ValueError("identity file holds no identity")
    return ids


_HEX = set(b"0123456789abcdefABCDEF")


def _is_identity_file(content: bytes) -> bool:
    """Step 2 of reading a key file: valid UTF-8, no control character (Cc) but LF, CR and
    tab, lines (split at LF, a CR before the LF dropped) all blank, # comments or PARAES-..."""
    try:
        text = content.decode("utf-8")
    except UnicodeDecodeError:
        return False
    if any((ord(c) <= 0x1F and c not in "\n\r\t") or 0x7F <= ord(c) <= 0x9F for c in text):
        return False
    found = False
    for line in text.split("\n"):
        t = line.strip()
        if not t or t.startswith("#"):
            continue
        if t[:7].upper() == "PARAES-":
            found = True
            continue
        return False
    return found


def _is_private_key_file(content: bytes) -> bool:
    """Step 2 too: a first line that starts with -----BEGIN and ends with PRIVATE KEY-----."""
    first = content.split(b"\n", 1)[0].lstrip(b" \t\n\x0b\x0c\r")
    return (first.startswith(b"-----BEGIN ")
            and first.rstrip(b" \t\n\x0b\x0c\r").endswith(b"PRIVATE KEY-----"))


def read_key_file(content: bytes) -> bytes:
    """K from a key file's bytes ("The user's secrets", steps 1-4)."""
    if len(content) > 1024:
        raise ValueError("key file larger than 1,024 bytes")
    if _is_identity_file(content):
        raise ValueError("this is an identity file (give it with -i)")
    if _is_private_key_file(content):
        raise ValueError("this holds a private key (an SSH key?), not a key")
    t = content.strip(b" \t\n\x0c\r")
    if t and all(0x21 <= b <= 0x7E for b in t):
        if len(t) in (32, 48, 64) and all(b in _HEX for b in t):
            return bytes.fromhex(t.decode("ascii"))
        raise ValueError("key text is not 32, 48 or 64 hex digits")
    if len(content) in (16, 24, 32):
        return bytes(content)
    raise ValueError("key file is neither 16/24/32 raw bytes nor hex text")


def read_passphrase_file(content: bytes) -> bytes:
    content = content[:65536]
    nl = content.find(b"\n")
    p = content if nl < 0 else content[:nl]
    if p.endswith(b"\r"):
        p = p[:-1]
    if not p:
        raise ValueError("empty passphrase")
    return p


# --------------------------------------------------------------------------- primitives

def _hkdf_sha256(salt: bytes | None, ikm: bytes, info: bytes) -> bytes:
    return HKDF(algorithm=hashes.SHA256(), length=32, salt=salt, info=info).derive(ikm)


def _hkdf_expand_sha512(prk: bytes, info: bytes, length: int) -> bytes:
    # RFC 5869 section 2.3, with the PRK used as is (any length HMAC accepts).
    out, t, i = b"", b"", 1
    while len(out) < length:
        t = hmac.new(prk, t + info + bytes([i]), hashlib.sha512).digest()
        out += t
        i += 1
    return out[:length]


def _unwrap(w: bytes, kind: int, wrapped: bytes) -> bytes | None:
    try:
        d = AESGCMSIV(w).decrypt(bytes(12), wrapped, WRAP_AAD_PREFIX + bytes([kind]))
    except InvalidTag:
        return None
    return d if len(d) == 32 else None


# --------------------------------------------------------------------------- Cobblestone

@dataclass
class _MessageKeys:
    key: bytes
    base_nonce: bytes
    commitment: bytes


def _cobblestone_keys(ik: bytes, salt: bytes, context: bytes) -> _MessageKeys:
    if len(ik) == 16:
        aead = b"AEAD_AES_128_GCM"
    elif len(ik) == 32:
        aead = b"AEAD_AES_256_GCM"
    else:
        raise ValueError("Cobblestone key must be 16 or 32 bytes")
    okm = _hkdf_expand_sha512(ik, CS_LABEL + aead + b"\x00" + salt + context,
                              len(ik) + 12 + 32)
    return _MessageKeys(okm[:len(ik)], okm[len(ik):len(ik) + 12], okm[len(ik) + 12:])


def _chunk_nonce(base_nonce: bytes, i: int) -> bytes:
    return (int.from_bytes(base_nonce, "big") ^ i).to_bytes(12, "big")


def _message_layout(msg_len: int) -> tuple[int, int]:
    """(number of chunks, length of the last record) or ReaderError('chunk')."""
    if msg_len < CS_PREFIX_LEN:
        raise ReaderError("chunk", f"message of {msg_len} bytes is shorter than its "
                                   f"{CS_PREFIX_LEN}-byte prefix")
    rest = msg_len - CS_PREFIX_LEN
    full, last = divmod(rest, CS_RECORD)
    if last == 0:
        if rest == 0:
            raise ReaderError("chunk", "message has no chunk (at least 72 bytes needed)")
        raise ReaderError("chunk", f"message ends in a full chunk (chunk {full - 1}): "
                                   "cut at a chunk boundary")
    if last < CS_TAG:
        raise ReaderError("chunk", f"last record of {last} bytes is shorter than a tag "
                                   "(truncated or extended)")
    if full + 1 > CS_MAX_CHUNKS:
        raise ReaderError("chunk", "more than 2^38 chunks")
    return full + 1, last


def _open_chunk(aes: AESGCM, keys: _MessageKeys, msg: memoryview, i: int, n: int,
                last_len: int) -> bytes:
    start = CS_PREFIX_LEN + i * CS_RECORD
    end = start + (CS_RECORD if i < n - 1 else last_len)
    try:
        return aes.decrypt(_chunk_nonce(keys.base_nonce, i), bytes(msg[start:end]), None)
    except InvalidTag:
        raise ReaderError("chunk", f"chunk {i} failed authentication") from None


def _check_commitment(keys: _MessageKeys, msg: memoryview) -> bool:
    return hmac.compare_digest(keys.commitment,
                               bytes(msg[CS_SALT_LEN:CS_PREFIX_LEN]))


def _decrypt_message(ik: bytes, context: bytes, msg: memoryview, keys: _MessageKeys | None,
                     check_last_first: bool) -> bytes:
    n, last_len = _message_layout(len(msg))
    if keys is None:
        keys = _cobblestone_keys(ik, bytes(msg[:CS_SALT_LEN]), context)
        if not _check_commitment(keys, msg):
            raise ReaderError("commitment", "key commitment does not match")
    aes = AESGCM(keys.key)
    if check_last_first:
        _open_chunk(aes, keys, msg, n - 1, n, last_len)
    out = bytearray()
    for i in range(n):
        out += _open_chunk(aes, keys, msg, i, n, last_len)
    return bytes(out)


def read_message(data: bytes, key: bytes, context: bytes = b"") -> bytes:
    """A bare C2SP chunked-encryption message ("Bare messages")."""
    if len(key) not in (16, 32):
        raise ValueError("a Cobblestone key is 16 or 32 bytes")
    msg = memoryview(bytes(data))
    if len(msg) < CS_PREFIX_LEN:
        _message_layout(len(msg))  # raises "chunk"
    keys = _cobblestone_keys(key, bytes(msg[:CS_SALT_LEN]), context)
    # "a reader checks the commitment (constant time) before it decrypts any chunk"
    if not _check_commitment(keys, msg):
        raise ReaderError("commitment", "key commitment does not match")
    # framing, then the last chunk's tag before anything is released, then every chunk
    return _decrypt_message(key, context, msg, keys, check_last_first=True)


# --------------------------------------------------------------------------- header

@dataclass
class Stanza:
    kind: int
    body: bytes


@dataclass
class Slot:
    index: int
    generation: int
    stanzas: list[Stanza]
    tagged_len: int  # a: slot[0..a] is covered by the tag
    tag: bytes
    raw: bytes


@dataclass
class Header:
    preamble: bytes
    version: int
    key_size: int
    slot_len: int
    body_offset: int
    slots: list[Slot] = field(default_factory=list)
    ignored: list[str] = field(default_factory=list)


def _passphrase_params(body: bytes) -> tuple[bytes, int, int, int]:
    salt = body[0:16]
    m, t, p = struct.unpack(">III", body[16:28])
    return salt, m, t, p


def _passphrase_params_ok(m: int, t: int, p: int) -> bool:
    # Limits: memory 8 KiB per lane ..= 1 GiB; passes 1..=64; lanes 1..=64
    return 1 <= p <= 64 and 1 <= t <= 64 and 8 * p <= m <= 1 << 20


def _kdf_cost(m: int, t: int) -> int:
    return -(-m // 1024) * t


def _parse_slot(index: int, raw: bytes) -> Slot | str | None:
    """None: empty; str: why it does not parse; Slot: parsed (still unauthenticated)."""
    if not any(raw):
        return None
    s = len(raw)
    if s < 10:
        return "slot too short"
    g = int.from_bytes(raw[0:8], "big")
    if g == 0 or g == GEN_INVALID_HIGH:
        return f"generation {g} (being published or wiped)"
    n = int.from_bytes(raw[8:10], "big")
    if n == 0 or n > 255:
        return f"stanza count {n}"
    pos = 10
    stanzas = []
    passphrases = 0
    for _ in range(n):
        if pos + 3 > s:
            return "a stanza runs past the slot"
        kind = raw[pos]
        length = int.from_bytes(raw[pos + 1:pos + 3], "big")
        if pos + 3 + length > s:
            return "a stanza runs past the slot"
        body = raw[pos + 3:pos + 3 + length]
        if kind in KNOWN_BODY_LEN and length != KNOWN_BODY_LEN[kind]:
            return f"stanza of kind {kind} has body length {length}"
        if kind in BODY_LEN_RANGE and not (BODY_LEN_RANGE[kind][0] <= length
                                           <= BODY_LEN_RANGE[kind][1]):
            return (f"stanza of kind {kind} has body length {length} (not "
                    f"{BODY_LEN_RANGE[kind][0]} ..= {BODY_LEN_RANGE[kind][1]})")
        if kind == KIND_PASSPHRASE:
            passphrases += 1
            _, m, t, p = _passphrase_params(body)
            if not _passphrase_params_ok(m, t, p):
                return f"passphrase stanza parameters outside the limits (m={m}, t={t}, p={p})"
        stanzas.append(Stanza(kind, body))
        pos += 3 + length
    if passphrases > 1:
        return "more than one passphrase stanza"
    a = pos
    if a + 32 > s:
        return "the tag runs past the slot"
    if any(raw[a + 32:]):
        return "non-zero bytes after the tag"
    return Slot(index, g, stanzas, a, raw[a:a + 32], raw)


def parse_header(data: bytes) -> Header:
    if len(data) < PREAMBLE_LEN:
        raise ReaderError("header", f"file of {len(data)} bytes is shorter than the preamble")
    pre = bytes(data[:PREAMBLE_LEN])
    if pre[0:8] != MAGIC:
        raise ReaderError("header", "bad magic (not a paraes container)")
    version = pre[8]
    if version in (1, 2):
        raise ReaderError("unsupported", f"format v{version} is not implemented by this reader")
    if version != 3:
        raise ReaderError("header", f"format version {version}")
    if pre[9] != 3:
        raise ReaderError("header", f"v3 byte 9 (mode) is {pre[9]}, not 3")
    if pre[10] not in (16, 32):
        raise ReaderError("header", f"v3 key size byte {pre[10]} (16 or 32)")
    if pre[11] != 0:
        raise ReaderError("header", "reserved byte 11 is not zero")
    chunk = int.from_bytes(pre[12:16], "big")
    if chunk != V3_CHUNK_SIZE:
        raise ReaderError("header", f"v3 chunk size {chunk} (must be 16384)")
    if any(pre[16:32]):
        raise ReaderError("header", "v3 bytes 16..32 (reserved) are not zero")
    s = int.from_bytes(pre[32:36], "big")
    if s == 0 or s > MAX_SLOT_LEN or (PREAMBLE_LEN + 2 * s) % 4096 != 0:
        raise ReaderError("header", f"slot length {s}")
    if any(pre[36:64]):
        raise ReaderError("header", "reserved bytes 36..64 are not zero")
    body_offset = PREAMBLE_LEN + 2 * s
    if len(data) < body_offset:
        raise ReaderError("header", f"file of {len(data)} bytes is shorter than its "
                                    f"{body_offset}-byte header")
    # "the commitment is read with the header" (Format v3): a file that ends inside the
    # body's 56-byte prefix (salt and key commitment) cannot even be read; its body (a
    # message, which needs at least 72 bytes) was cut, so the class is "chunk" (framing).
    if len(data) < body_offset + CS_PREFIX_LEN:
        raise ReaderError("chunk", f"the body ends inside its {CS_SALT_LEN}-byte salt and "
                                   f"{CS_COMMIT_LEN}-byte key commitment ({len(data) - body_offset}"
                                   f" bytes after the {body_offset}-byte header)")
    h = Header(pre, version, pre[10], s, body_offset)
    for i in range(2):
        raw = bytes(data[PREAMBLE_LEN + i * s:PREAMBLE_LEN + (i + 1) * s])
        r = _parse_slot(i, raw)
        if isinstance(r, Slot):
            h.slots.append(r)
        elif isinstance(r, str):
            h.ignored.append(f"slot {i}: {r}")
    if not h.slots:
        why = "; ".join(h.ignored) if h.ignored else "both slots empty"
        raise ReaderError("header", f"no slot parses ({why})")
    return h


def _slot_tag_ok(header: Header, slot: Slot, m_key: bytes) -> bool:
    tag = blake3_keyed_hash(m_key, header.preamble + slot.raw[:slot.tagged_len], 32)
    return hmac.compare_digest(tag, slot.tag)


# --------------------------------------------------------------------------- opening

def _try_stanza(st: Stanza, ident: Identity, passphrases_allowed: bool,
                cache: dict) -> bytes | None:
    if st.kind == KIND_KEY_FILE and isinstance(ident, KeyIdentity):
        salt, wrapped = st.body[0:16], st.body[16:64]
        w = _hkdf_sha256(salt, ident.key, INFO_KEY_FILE)
        return _unwrap(w, st.kind, wrapped)
    if st.kind == KIND_PASSPHRASE and isinstance(ident, PassphraseIdentity):
        if not passphrases_allowed:
            return None
        salt, m, t, p = _passphrase_params(st.body)
        ck = (ident.passphrase, salt, m, t, p)
        if ck not in cache:
            cache[ck] = Argon2id(salt=salt, length=32, iterations=t, lanes=p,
                                 memory_cost=m).derive(ident.passphrase)
        w = _hkdf_sha256(None, cache[ck], INFO_PASSPHRASE)
        return _unwrap(w, st.kind, st.body[28:76])
    if st.kind == KIND_X25519 and isinstance(ident, X25519Identity):
        e, wrapped = st.body[0:32], st.body[32:80]
        priv = X25519PrivateKey.from_private_bytes(ident.secret)
        r = priv.public_key().public_bytes_raw()
        try:
            shared = priv.exchange(X25519PublicKey.from_public_bytes(e))
        except ValueError:  # all-zero shared secret: opens nothing
            return None
        if not any(shared):
            return None
        w = _hkdf_sha256(e + r, shared, INFO_X25519)
        return _unwrap(w, st.kind, wrapped)
    if st.kind == KIND_HYBRID and isinstance(ident, XWingIdentity):
        ct_m, ct_x, wrapped = st.body[0:1088], st.body[1088:1120], st.body[1120:1168]
        ss = ident.decapsulate(ct_m, ct_x)
        w = _hkdf_sha256(None, ss, INFO_XWING)
        return _unwrap(w, st.kind, wrapped)
    if st.kind in SSH_KINDS and isinstance(ident, SshIdentity):
        # Only the SSH identity whose key tag the stanza names tries it (a key with a
        # passphrase is unlocked only then); the tag proves nothing, the wrap's tag decides.
        if st.kind != ident.kind or st.body[0:4] != ident.tag:
            return None
        key = ident.private()  # SshLocked: a refusal, recorded by the caller
        if st.kind == KIND_SSH_ED25519:
            return _open_ssh_ed25519(st.body, ident, key)
        return _open_ssh_rsa(st.body, ident, key)
    return None  # an unknown kind, or a secret that does not fit the stanza's kind


def _open_ssh_ed25519(body: bytes, ident: SshIdentity, key) -> bytes | None:
    e, wrapped = body[4:36], body[36:84]
    seed = key.private_bytes_raw()
    r = hashlib.sha512(seed).digest()[0:32]  # clamped by X25519
    pk_x = x25519(r, X25519_BASE)
    inner = x25519(r, e)
    if not any(inner):  # an all-zero X25519(r, E) opens nothing
        return None
    tweak = _hkdf_sha256(ident.wire, b"", INFO_SSH_ED25519_TWEAK)
    shared = x25519(tweak, inner)
    w = _hkdf_sha256(e + pk_x, shared, INFO_SSH_ED25519)
    return _unwrap(w, KIND_SSH_ED25519, wrapped)


def _open_ssh_rsa(body: bytes, ident: SshIdentity, key) -> bytes | None:
    c, wrapped = body[4:len(body) - 48], body[len(body) - 48:]
    k = (key.key_size + 7) // 8
    if len(c) != k:  # a stanza for a key of another size
        return None
    try:
        s = key.decrypt(c, padding.OAEP(mgf=padding.MGF1(algorithm=hashes.SHA256()),
                                        algorithm=hashes.SHA256(), label=SSH_RSA_OAEP_LABEL))
    except ValueError:  # OAEP refuses: the same "this stanza does not open"
        return None
    if len(s) != 32:
        return None
    w = _hkdf_sha256(hashlib.sha256(ident.wire).digest(), s, INFO_SSH_RSA)
    return _unwrap(w, KIND_SSH_RSA, wrapped)


@dataclass
class Opened:
    file_key: bytes
    slot: Slot
    input_key: bytes
    context: bytes
    keys: _MessageKeys
    header: Header
    # Step 5, format v3: the other parsed slots that do not authenticate under the file key
    # (ignored: the body's key commitment decided), one line each.
    ignored_slots: list[str] = field(default_factory=list)


# Which failure wins when nothing opens ("Which error", and "Opening a v3 file"): the first
# body failure met (commitment or chunk, whichever came first), else "the header was changed"
# (a stanza opened, its slot tag failed), else the first refusal met (a slot naming one key
# more than twice, an SSH key that could not be unlocked), else no_match.
_STAGE_RANK = {"no_match": 0, "refused": 1, "header": 2, "commitment": 3, "chunk": 3}


def _names_a_key_too_often(slot: Slot) -> bytes | None:
    """Step 3: the (kind, SSH key tag) that three or more stanzas of the slot name, if any."""
    counts: dict[tuple[int, bytes], int] = {}
    for st in slot.stanzas:
        if st.kind in SSH_KINDS:
            k = (st.kind, bytes(st.body[0:4]))
            counts[k] = counts.get(k, 0) + 1
            if counts[k] >= 3:
                return k
    return None


def open_container(data: bytes, identities, *, max_kdf_mib: int = DEFAULT_MAX_KDF_MIB,
                   allow_unverified_slot: bool = False,
                   framing_first: bool = True) -> Opened:
    """Steps 1-6 of "Opening a file", with v3's body check.

    framing_first=True (the default) follows FORMAT.md ("Opening a v3 file"): a body whose
    length no writer makes is refused before any key is tried (class "chunk").
    framing_first=False checks the length per candidate after the key commitment, as an
    earlier revision of the text read (a wrong key on a cut body then gives no_match).

    allow_unverified_slot has no effect: it is v2's override of step 5, and in format v3 a
    parsed slot that does not verify under the file key is ignored anyway (listed in
    Opened.ignored_slots). It is kept so that callers written for v2's rule still run.
    """
    del allow_unverified_slot
    data = memoryview(bytes(data)) if not isinstance(data, memoryview) else data
    header = parse_header(data)
    identities = list(identities)
    if framing_first:
        _message_layout(len(data) - header.body_offset)

    # Step 2: the Argon2id cost of every passphrase stanza of every parsed slot (a slot that
    # step 3 skips included).
    total_cost = sum(_kdf_cost(*_passphrase_params(st.body)[1:3])
                     for sl in header.slots for st in sl.stanzas if st.kind == KIND_PASSPHRASE)
    passphrases_allowed = total_cost <= max_kdf_mib

    body = data[header.body_offset:]
    context = header.preamble[0:16]
    ik_len = header.key_size

    # Step 3: higher generation first, equal generations slot 0 first.
    order = sorted(header.slots, key=lambda s: (-s.generation, s.index))
    best: tuple[str, str] = ("no_match", "no identity opens a stanza")
    if not passphrases_allowed and any(isinstance(i, PassphraseIdentity) for i in identities):
        best = ("no_match", f"no identity opens a stanza (passphrase stanzas not tried: "
                            f"Argon2id cost {total_cost} above the cap {max_kdf_mib})")
    argon_cache: dict = {}
    tried: set = set()

    def fail(cls: str, msg: str):
        nonlocal best
        # the first failure of the highest rank met
        if _STAGE_RANK[cls] > _STAGE_RANK[best[0]]:
            best = (cls, msg)

    for slot in order:
        too_often = _names_a_key_too_often(slot)
        if too_often is not None:
            fail("refused", f"stanza slot {slot.index} names the same key (kind "
                            f"{too_often[0]}, SSH key tag {too_often[1].hex()}) more than "
                            "twice, which paraes never writes: it was not tried")
            continue
        for st in slot.stanzas:
            for ident in identities:
                try:
                    d = _try_stanza(st, ident, passphrases_allowed, argon_cache)
                except SshLocked as e:
                    fail("refused", str(e))
                    continue
                if d is None:
                    continue
                if (slot.index, d) in tried:
                    continue
                tried.add((slot.index, d))
                m_key = blake3_derive_key(CTX_V3_HEADER, d, 32)
                if not _slot_tag_ok(header, slot, m_key):
                    fail("header", f"a stanza of slot {slot.index} opens but the slot tag "
                                   "does not verify")
                    continue
                ik = blake3_derive_key(CTX_V3_BODY, d, 32)[:ik_len]
                # (1) the key commitment (parse_header made sure the 56-byte prefix is there)
                keys = _cobblestone_keys(ik, bytes(body[:CS_SALT_LEN]), context)
                if not _check_commitment(keys, body):
                    fail("commitment", f"slot {slot.index} opens, but the body's key "
                                       "commitment does not match")
                    continue
                # (2) the length leaves a last record of 16..16399 bytes; the last tag verifies
                try:
                    n, last_len = _message_layout(len(body))
                    _open_chunk(AESGCM(keys.key), keys, body, n - 1, n, last_len)
                except ReaderError as e:
                    fail(e.cls, e.message)
                    continue
                # Step 5, format v3: every other parsed slot should verify under the same D.
                # One that does not is ignored (the key commitment decided that D is the
                # body's one file key); the file opens and the reader says which slot.
                ignored = []
                for other in header.slots:
                    if other is slot:
                        continue
                    if not _slot_tag_ok(header, other, m_key):
                        ignored.append(
                            f"stanza slot {other.index} (generation {other.generation}) is "
                            "ignored: it does not authenticate under the file key that the "
                            "body's key commitment confirms")
                return Opened(d, slot, ik, context, keys, header, ignored)
    raise ReaderError(*best)


def read_container(data: bytes, identities, *, max_kdf_mib: int = DEFAULT_MAX_KDF_MIB,
                   allow_unverified_slot: bool = False, framing_first: bool = True) -> bytes:
    data = memoryview(bytes(data))
    opened = open_container(data, identities, max_kdf_mib=max_kdf_mib,
                            allow_unverified_slot=allow_unverified_slot,
                            framing_first=framing_first)
    body = data[opened.header.body_offset:]
    return _decrypt_message(opened.input_key, opened.context, body, opened.keys,
                            check_last_first=False)


def identities_from_manifest(entries) -> list[Identity]:
    out: list[Identity] = []
    for e in entries:
        t = e["type"]
        if t == "key":
            out.append(KeyIdentity(bytes.fromhex(e["hex"])))
        elif t == "passphrase":
            out.append(PassphraseIdentity(e["text"].encode("utf-8")))
        elif t in ("x25519", "xwing"):
            # one identity string, or the text of a whole identity file (comments included)
            ids = parse_identity_file(e["identity"])
            want = X25519Identity if t == "x25519" else XWingIdentity
            if not all(isinstance(i, want) for i in ids):
                raise ValueError(f"a {t!r} identity entry holding another kind of identity")
            out.extend(ids)
        elif t == "ssh":
            # an SSH private key file's whole text (OpenSSH's format, or PEM)
            pw = e.get("passphrase")
            out.extend(parse_identity_file(e["key"].encode("utf-8"),
                                           pw.encode("utf-8") if pw is not None else None))
        else:
            raise ValueError(f"unknown identity type {t!r}")
    return out


# --------------------------------------------------------------------------- CLI

def _main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("container", help="open a paraes v3 container")
    c.add_argument("file")
    c.add_argument("-k", "--key-file", action="append", default=[])
    c.add_argument("--key", action="append", default=[], help="key as hex")
    c.add_argument("-i", "--identity", action="append", default=[])
    c.add_argument("--passphrase-file", action="append", default=[])
    c.add_argument("--max-kdf-mib", type=int, default=DEFAULT_MAX_KDF_MIB)
    c.add_argument("--allow-unverified-slot", action="store_true",
                   help="accepted and ignored: v2's override; in v3 an unverified second slot "
                        "is ignored anyway (said on standard error)")
    c.add_argument("--ssh-passphrase-file", default=None,
                   help="the passphrase of SSH private keys given with -i (first line)")
    c.add_argument("--length-after-keys", dest="framing_first", action="store_false",
                   help="check the body length per candidate, after the key commitment (an "
                        "earlier revision of FORMAT.md); default: before any key is tried")
    c.add_argument("--show-data-key", action="store_true",
                   help="print the body input key and context (stderr)")
    c.add_argument("-o", "--output", default="-")
    m = sub.add_parser("message", help="open a bare Cobblestone message")
    m.add_argument("file")
    m.add_argument("--key", help="key as hex")
    m.add_argument("-k", "--key-file")
    m.add_argument("--context", default=None)
    m.add_argument("--context-hex", default=None)
    m.add_argument("-o", "--output", default="-")
    a = ap.parse_args(argv)

    with open(a.file, "rb") as f:
        data = f.read()
    try:
        if a.cmd == "container":
            ids: list[Identity] = []
            for p in a.key_file:
                with open(p, "rb") as f:
                    ids.append(KeyIdentity(read_key_file(f.read(1025))))
            for h in a.key:
                ids.append(KeyIdentity(read_key_file(h.encode())))
            for p in a.passphrase_file:
                with open(p, "rb") as f:
                    ids.append(PassphraseIdentity(read_passphrase_file(f.read(65536))))
            ssh_pw = None
            if a.ssh_passphrase_file is not None:
                with open(a.ssh_passphrase_file, "rb") as f:
                    ssh_pw = read_passphrase_file(f.read(65536))
            for p in a.identity:
                with open(p, "rb") as f:
                    ids.extend(parse_identity_file(f.read(1 << 20), ssh_pw))
            op = open_container(data, ids, max_kdf_mib=a.max_kdf_mib,
                                framing_first=a.framing_first)
            for line in op.ignored_slots:
                print(f"paraes_reader: {line}", file=sys.stderr)
            if a.show_data_key:
                print(f"data key: {op.input_key.hex()}\ncontext: {op.context.hex()}\n"
                      f"body_offset: {op.header.body_offset}", file=sys.stderr)
            out = _decrypt_message(op.input_key, op.context,
                                   memoryview(data)[op.header.body_offset:], op.keys,
                                   check_last_first=False)
        else:
            if a.key is not None:
                key = read_key_file(a.key.encode())
            elif a.key_file is not None:
                with open(a.key_file, "rb") as f:
                    key = read_key_file(f.read(1025))
            else:
                ap.error("message needs --key or --key-file")
            if a.context_hex is not None:
                ctx = bytes.fromhex(a.context_hex)
            elif a.context is not None:
                ctx = a.context.encode("utf-8")
            else:
                ctx = b""
            out = read_message(data, key, ctx)
    except ReaderError as e:
        print(f"paraes_reader: {e.cls}: {e.message}", file=sys.stderr)
        return 2
    if a.output == "-":
        sys.stdout.buffer.write(out)
    else:
        with open(a.output, "wb") as f:
            f.write(out)
    return 0


if __name__ == "__main__":
    sys.exit(_main())
