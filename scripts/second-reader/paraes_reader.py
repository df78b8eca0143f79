#!/usr/bin/env python3
"""A second, independent reader of the paraes container format v3 and of bare
Cobblestone messages, written from docs/FORMAT.md alone (no paraes source, no
paraes tests).

Library:
    read_container(data: bytes, identities, *, max_kdf_mib=3072,
                   allow_unverified_slot=False) -> bytes
    read_message(data: bytes, key: bytes, context: bytes) -> bytes
Both raise ReaderError(cls, message), cls one of
    "no_match"        no identity opens a stanza
    "commitment"      a slot opens but the body's key commitment does not match
    "chunk"           a chunk fails authentication, or the message framing is wrong
    "header"          malformed header, or the slot tag fails
    "unverified_slot" the other parsed slot does not verify under the file key
    "unsupported"     a well-formed header of a format this reader does not read (v1, v2)

CLI:
    paraes_reader.py container FILE [-k KEYFILE]... [--key HEX]... [-i IDFILE]...
                     [--passphrase-file F] [--max-kdf-mib N] [--allow-unverified-slot]
                     [--length-after-keys] [-o OUT] [--show-data-key]
    paraes_reader.py message FILE (--key HEX | -k KEYFILE) [--context TEXT | --context-hex HEX]
                     [-o OUT]

Dependencies: pyca/cryptography >= 50 (AES-GCM, AES-GCM-SIV, HKDF, X25519, Argon2id);
the `blake3` package if importable, else the pure-Python BLAKE3 next to this file.
"""

from __future__ import annotations

import argparse
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
from cryptography.hazmat.primitives import hashes  # noqa: E402
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

ERROR_CLASSES = ("no_match", "commitment", "chunk", "header", "unverified_slot", "unsupported")


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
KNOWN_BODY_LEN = {KIND_KEY_FILE: 64, KIND_PASSPHRASE: 76, KIND_X25519: 80, KIND_HYBRID: 1168}

WRAP_AAD_PREFIX = b"paraes 2026-11 container v2 wrapped file key"  # 44 bytes
INFO_KEY_FILE = b"paraes 2026-11 container v2 key-file stanza wrap key"
INFO_PASSPHRASE = b"paraes 2026-11 container v2 passphrase stanza wrap key"
INFO_X25519 = b"paraes 2026-11 container v2 X25519 stanza wrap key"

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

assert len(WRAP_AAD_PREFIX) == 44 and len(MAGIC) == 8


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


Identity = KeyIdentity | PassphraseIdentity | X25519Identity


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


def parse_identity_line(text: str) -> Identity | None:
    """One identity string. Returns None for a post-quantum identity (not implemented)."""
    hrp, payload = bech32_decode(text)
    if hrp == "paraes-secret-key-":
        if len(payload) != 32:
            raise ValueError("X25519 identity payload is not 32 bytes")
        return X25519Identity(payload)
    if hrp == "paraes-pq-secret-key-":
        if len(payload) != 32:
            raise ValueError("X-Wing identity payload is not 32 bytes")
        return None  # X-Wing stanzas are not implemented by this reader
    raise ValueError(f"not an identity (HRP {hrp!r})")


def parse_identity_file(text: str) -> list[Identity]:
    ids: list[Identity] = []
    seen_any = False
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        ident = parse_identity_line(line)
        seen_any = True
        if ident is not None:
            ids.append(ident)
    if not seen_any:
        raise ValueError("identity file holds no identity")
    return ids


_HEX = set(b"0123456789abcdefABCDEF")


def _is_identity_file(content: bytes) -> bool:
    try:
        text = content.decode("utf-8")
    except UnicodeDecodeError:
        return False
    if any((ord(c) < 0x20 and c not in "\n\r\t") or ord(c) == 0x7F for c in text):
        return False
    found = False
    for line in text.splitlines():
        t = line.strip()
        if not t or t.startswith("#"):
            continue
        if t[:7].upper() == "PARAES-":
            found = True
            continue
        return False
    return found


def read_key_file(content: bytes) -> bytes:
    """K from a key file's bytes ("The user's secrets", steps 1-4)."""
    if len(content) > 1024:
        raise ValueError("key file larger than 1,024 bytes")
    if _is_identity_file(content):
        raise ValueError("this is an identity file (give it with -i)")
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
    return None  # unknown kind, a hybrid stanza (not implemented), or a secret that does not fit


@dataclass
class Opened:
    file_key: bytes
    slot: Slot
    input_key: bytes
    context: bytes
    keys: _MessageKeys
    header: Header


_STAGE_RANK = {"no_match": 0, "header": 1, "commitment": 2, "chunk": 3}


def open_container(data: bytes, identities, *, max_kdf_mib: int = DEFAULT_MAX_KDF_MIB,
                   allow_unverified_slot: bool = False,
                   framing_first: bool = True) -> Opened:
    """Steps 1-6 of "Opening a file", with v3's body check.

    framing_first=True (the default) follows FORMAT.md ("Opening a v3 file"): a body whose
    length no writer makes is refused before any key is tried (class "chunk").
    framing_first=False checks the length per candidate after the key commitment, as an
    earlier revision of the text read (a wrong key on a cut body then gives no_match).
    """
    data = memoryview(bytes(data)) if not isinstance(data, memoryview) else data
    header = parse_header(data)
    identities = list(identities)
    if framing_first:
        _message_layout(len(data) - header.body_offset)

    # Step 2: the Argon2id cost of every passphrase stanza of every parsed slot.
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
        if _STAGE_RANK[cls] >= _STAGE_RANK[best[0]]:
            best = (cls, msg)

    for slot in order:
        for st in slot.stanzas:
            for ident in identities:
                d = _try_stanza(st, ident, passphrases_allowed, argon_cache)
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
                # Step 5: every other parsed slot must verify under the same D.
                for other in header.slots:
                    if other is slot:
                        continue
                    if not _slot_tag_ok(header, other, m_key):
                        if allow_unverified_slot:
                            continue
                        raise ReaderError(
                            "unverified_slot",
                            f"slot {other.index} parses but does not verify under the file "
                            f"key that opened slot {slot.index} (tampering, an interrupted "
                            "rekey of an older paraes, or a file made to show different "
                            "content to different recipients)")
                return Opened(d, slot, ik, context, keys, header)
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
        elif t == "x25519":
            # one identity string, or the text of a whole identity file (comments included)
            out.extend(parse_identity_file(e["identity"]))
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
    c.add_argument("--allow-unverified-slot", action="store_true")
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
            for p in a.identity:
                with open(p, "r", encoding="utf-8") as f:
                    ids.extend(parse_identity_file(f.read(1 << 20)))
            if a.show_data_key:
                op = open_container(data, ids, max_kdf_mib=a.max_kdf_mib,
                                    allow_unverified_slot=a.allow_unverified_slot,
                                    framing_first=a.framing_first)
                print(f"data key: {op.input_key.hex()}\ncontext: {op.context.hex()}\n"
                      f"body_offset: {op.header.body_offset}", file=sys.stderr)
            out = read_container(data, ids, max_kdf_mib=a.max_kdf_mib,
                                 allow_unverified_slot=a.allow_unverified_slot,
                                 framing_first=a.framing_first)
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
