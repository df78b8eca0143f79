#!/usr/bin/env python3
"""Writes tests/testkit/: the format v3 testkit, fixed files with the secrets that open them and
what opening them must give (docs/FORMAT.md, "Format v3" and "Bare messages"), in the manner of
age's testkit. tests/cli/testkit.rs runs paraes over every file; tests/testkit/README.md says
what the kit holds and how to read its manifest.

    scripts/test.sh                      # once: puts pyca/cryptography 50 in target/pyca
    cargo build --release                # or --profile iter: the paraes that writes the files
    target/pyca/python scripts/make-testkit.py --paraes target/release/paraes

Needs pyca/cryptography >= 50 (`cryptography.cobblestone`, AES-GCM-SIV, Argon2id, X25519) and
nothing else: BLAKE3 and Bech32 are implemented below, from their specifications.

How the files are made:

* Every secret is fixed (derived from a label with SHA-256), and every plaintext is a prefix of
  one fixed byte stream P (`plaintext(n)` below: SHA-256 of "paraes testkit plaintext" and a
  64-bit big-endian counter, concatenated), so a reader of a damaged file can also check that
  whatever it released before an error was a prefix of P. The salts, file keys and ephemeral
  keys are random: running the script again gives other files, equally valid. The committed
  files are the reference; the script documents how they were made.
* Containers are written by `paraes enc` (key files, passphrase, X25519 recipients, mixes; 128-
  and 256-bit bodies) or, where paraes cannot make them, by this script from docs/FORMAT.md
  (cheap Argon2id parameters, an unknown stanza kind, two slots, a body under the wrong key or
  context with a valid slot tag). Bare messages are written by `paraes enc --format cobblestone`
  or by pyca's Cobblestone128/256Encryptor.
* Damaged files are made from good ones by exactly the change their note names. Every
  expectation is recorded from the construction, then checked by an independent reader in this
  script (`check`, from docs/FORMAT.md: stanzas, slot tags, key commitment, pyca's Cobblestone
  decryptor for the body); the script stops if the reader disagrees. paraes is checked by
  `cargo test --test cli testkit::`.

The main kit holds X-Wing (kind 4) entries (issue 35), written by `paraes enc -r paraespq1...`
and by this script from docs/FORMAT.md with pyca's ML-KEM-768, with the identity type
{"type": "xwing", "identity": IDENTITY FILE TEXT} (as `paraes keygen --pq` writes it; fixed
seeds). This script's own reader does not read X-Wing stanzas: the second reader
(scripts/second-reader, written from docs/FORMAT.md alone) checks those entries, and the one
whose expectation follows format v3's step 5 as FORMAT.md now gives it (a second slot the file
key does not verify is ignored). `--only xwing` writes the X-Wing entries alone, adding them to
the kit in --out (replacing earlier X-Wing entries of the same names) and leaving its other
files as they are.

With `--only ssh` (or the default `--only all`) it also writes tests/testkit/ssh/, the SSH
sub-kit (issue 29): containers with ssh-ed25519 and ssh-rsa stanzas (2048- and 8192-bit keys,
OpenSSH and PEM PKCS#1 private keys), written by `paraes enc -r/-R` and by this script from
docs/FORMAT.md, with its own manifest.json of the same shape and the identity type
{"type": "ssh", "key": PRIVATE KEY FILE TEXT} (`paraes dec -i FILE`). Its keys are fixed:
Ed25519 seeds and RSA primes derived from labels with SHA-256. `--only main` leaves it alone.

The manifest (tests/testkit/manifest.json) is a JSON list of objects:
  {"file", "kind": "container"|"message", "identities": [...], "context_hex" (messages),
   "expect": "ok", "plaintext_len", "plaintext_sha256", "note"}
  or "expect": "fail" with "failure": "no_match"|"commitment"|"chunk"|"header".
  Identities: {"type": "key", "hex"} (a key file's content; a message's key),
  {"type": "passphrase", "text"}, {"type": "x25519", "identity"} (an identity file's text),
  {"type": "xwing", "identity"} (an X-Wing identity file's text).
"""
import argparse
import hashlib
import hmac
import json
import os
import subprocess
import sys
import tempfile

from cryptography.cobblestone import (
    Cobblestone128Decryptor,
    Cobblestone128Encryptor,
    Cobblestone256Decryptor,
    Cobblestone256Encryptor,
)
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ed25519, padding, rsa
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey, X25519PublicKey
from cryptography.hazmat.primitives.ciphers.aead import AESGCM, AESGCMSIV
from cryptography.hazmat.primitives.kdf.argon2 import Argon2id

CHUNK = 16384
TAG = 16
PREFIX = 56  # a message's salt (24) and key commitment (32)
MAGIC = b"\x89PARAES\n"

# ---------------------------------------------------------------------------------------------
# BLAKE3 (O'Connor, Aumasson, Neves, Wilcox-O'Hearn 2020): hash, keyed_hash, derive_key, with
# extendable output. Plain Python, for the short inputs of a header.

B3_IV = [0x6A09E667, 0xBB67AE85, 0x3C6EF372, 0xA54FF53A,
         0x510E527F, 0x9B05688C, 0x1F83D9AB, 0x5BE0CD19]
B3_PERM = [2, 6, 3, 10, 7, 0, 4, 13, 1, 11, 12, 5, 9, 14, 15, 8]
CHUNK_START, CHUNK_END, PARENT, ROOT = 1, 2, 4, 8
KEYED_HASH, DERIVE_KEY_CONTEXT, DERIVE_KEY_MATERIAL = 16, 32, 64
M32 = 0xFFFFFFFF


def _rotr(x, n):
    return ((x >> n) | (x << (32 - n))) & M32


def _g(s, a, b, c, d, x, y):
    s[a] = (s[a] + s[b] + x) & M32
    s[d] = _rotr(s[d] ^ s[a], 16)
    s[c] = (s[c] + s[d]) & M32
    s[b] = _rotr(s[b] ^ s[c], 12)
    s[a] = (s[a] + s[b] + y) & M32
    s[d] = _rotr(s[d] ^ s[a], 8)
    s[c] = (s[c] + s[d]) & M32
    s[b] = _rotr(s[b] ^ s[c], 7)


def _compress(cv, block, counter, block_len, flags):
    """The 16 output words of BLAKE3's compression function; `block` is 64 bytes."""
    m = [int.from_bytes(block[4 * i:4 * i + 4], "little") for i in range(16)]
    s = list(cv) + B3_IV[:4] + [counter & M32, (counter >> 32) & M32, block_len, flags]
    for r in range(7):
        _g(s, 0, 4, 8, 12, m[0], m[1])
        _g(s, 1, 5, 9, 13, m[2], m[3])
        _g(s, 2, 6, 10, 14, m[4], m[5])
        _g(s, 3, 7, 11, 15, m[6], m[7])
        _g(s, 0, 5, 10, 15, m[8], m[9])
        _g(s, 1, 6, 11, 12, m[10], m[11])
        _g(s, 2, 7, 8, 13, m[12], m[13])
        _g(s, 3, 4, 9, 14, m[14], m[15])
        if r < 6:
            m = [m[i] for i in B3_PERM]
    for i in range(8):
        s[i] ^= s[i + 8]
        s[i + 8] ^= cv[i]
    return s


def _chunk_output(key_words, chunk, counter, flags):
    """The output node (cv, block, counter, len, flags) of one chunk (at most 1024 bytes)."""
    cv = list(key_words)
    blocks = [chunk[i:i + 64] for i in range(0, len(chunk), 64)] or [b""]
    for i, block in enumerate(blocks):
        f = flags | (CHUNK_START if i == 0 else 0)
        if i == len(blocks) - 1:
            return (cv, block.ljust(64, b"\0"), counter, len(block), f | CHUNK_END)
        cv = _compress(cv, block, counter, 64, f)[:8]
    raise AssertionError("unreachable")


def _cv(node):
    cv, block, counter, block_len, flags = node
    return _compress(cv, block, counter, block_len, flags)[:8]


def _words_bytes(words):
    return b"".join(w.to_bytes(4, "little") for w in words)


def _tree(key_words, data, flags, first_chunk=0, chunks=None):
    """The output node of the subtree over `data`'s chunks (left subtree: the largest power of
    two chunks that leaves at least one for the right)."""
    if chunks is None:
        chunks = max(1, (len(data) + 1023) // 1024)
    if chunks == 1:
        return _chunk_output(key_words, data[first_chunk * 1024:(first_chunk + 1) * 1024],
                             first_chunk, flags)
    left = 1 << ((chunks - 1).bit_length() - 1)
    lcv = _cv(_tree(key_words, data, flags, first_chunk, left))
    rcv = _cv(_tree(key_words, data, flags, first_chunk + left, chunks - left))
    return (list(key_words), _words_bytes(lcv + rcv), 0, 64, flags | PARENT)


def _blake3(key_words, data, flags, out_len):
    cv, block, _, block_len, f = _tree(key_words, data, flags)
    out = b""
    counter = 0
    while len(out) < out_len:
        out += _words_bytes(_compress(cv, block, counter, block_len, f | ROOT))
        counter += 1
    return out[:out_len]


def blake3_hash(data, out_len=32):
    return _blake3(B3_IV, data, 0, out_len)


def blake3_keyed(key, data, out_len=32):
    words = [int.from_bytes(key[4 * i:4 * i + 4], "little") for i in range(8)]
    return _blake3(words, data, KEYED_HASH, out_len)


def blake3_derive_key(context, material, out_len=32):
    ctx_key = _blake3(B3_IV, context.encode(), DERIVE_KEY_CONTEXT, 32)
    words = [int.from_bytes(ctx_key[4 * i:4 * i + 4], "little") for i in range(8)]
    return _blake3(words, material, DERIVE_KEY_MATERIAL, out_len)


# ---------------------------------------------------------------------------------------------
# Bech32 (BIP 173, final constant 1), for X25519 identities and recipients.

BECH32_CHARSET = "qpzry9x8gf2tvdw0s3jn54khce6mua7l"


def _bech32_polymod(values):
    gen = [0x3B6A57B2, 0x26508E6D, 0x1EA119FA, 0x3D4233DD, 0x2A1462B3]
    chk = 1
    for v in values:
        top = chk >> 25
        chk = (chk & 0x1FFFFFF) << 5 ^ v
        for i in range(5):
            chk ^= gen[i] if (top >> i) & 1 else 0
    return chk


def _hrp_expand(hrp):
    return [ord(c) >> 5 for c in hrp] + [0] + [ord(c) & 31 for c in hrp]


def bech32_encode(hrp, payload):
    acc, bits, data = 0, 0, []
    for byte in payload:
        acc = (acc << 8) | byte
        bits += 8
        while bits >= 5:
            bits -= 5
            data.append((acc >> bits) & 31)
    if bits:
        data.append((acc << (5 - bits)) & 31)
    poly = _bech32_polymod(_hrp_expand(hrp) + data + [0] * 6) ^ 1
    checksum = [(poly >> 5 * (5 - i)) & 31 for i in range(6)]
    return hrp + "1" + "".join(BECH32_CHARSET[d] for d in data + checksum)


def bech32_decode(text):
    text = text.strip().lower()
    hrp, _, rest = text.rpartition("1")
    data = [BECH32_CHARSET.index(c) for c in rest]
    assert _bech32_polymod(_hrp_expand(hrp) + data) == 1, "bad Bech32 checksum"
    acc, bits, out = 0, 0, bytearray()
    for d in data[:-6]:
        acc = (acc << 5) | d
        bits += 5
        if bits >= 8:
            bits -= 8
            out.append((acc >> bits) & 0xFF)
    return hrp, bytes(out)


# ---------------------------------------------------------------------------------------------
# HKDF (RFC 5869) by hand: HKDF-SHA256 for the stanzas' wrap keys, HKDF-Expand-SHA512 for
# Cobblestone (its PRK is the 16- or 32-byte input key itself).

def hkdf_expand(hash_name, prk, info, length):
    out, block, i = b"", b"", 1
    while len(out) < length:
        block = hmac.new(prk, block + info + bytes([i]), hash_name).digest()
        out += block
        i += 1
    return out[:length]


def hkdf_sha256(salt, ikm, info):
    prk = hmac.new(salt if salt is not None else bytes(32), ikm, "sha256").digest()
    return hkdf_expand("sha256", prk, info, 32)


# ---------------------------------------------------------------------------------------------
# Cobblestone (c2sp.org/chunked-encryption v1, as pyca instantiates it).

def cobblestone_keys(ik, salt, context):
    """(chunk key, base nonce, commitment) for input key `ik`, 24-byte `salt` and `context`."""
    aead = b"AEAD_AES_128_GCM" if len(ik) == 16 else b"AEAD_AES_256_GCM"
    info = b"c2sp.org/chunked-encryption@v1+" + aead + b"\0" + salt + context
    okm = hkdf_expand("sha512", ik, info, len(ik) + 12 + 32)
    return okm[:len(ik)], okm[len(ik):len(ik) + 12], okm[len(ik) + 12:]


def chunk_nonce(base, i):
    return bytes(a ^ b for a, b in zip(base, i.to_bytes(12, "big")))


def pyca_encrypt(ik, context, data):
    enc = (Cobblestone256Encryptor if len(ik) == 32 else Cobblestone128Encryptor)(ik, context)
    # Fed in uneven pieces: the message must not depend on how the plaintext arrives.
    return enc.update(data[:777]) + enc.update(data[777:]) + enc.finalize()


def pyca_decrypt(ik, context, message):
    """The plaintext, or None when pyca refuses the message (any chunk, the commitment, the
    length)."""
    dec = (Cobblestone256Decryptor if len(ik) == 32 else Cobblestone128Decryptor)(ik, context)
    try:
        return dec.update(message) + dec.finalize()
    except Exception:  # pyca raises its own exception types; any refusal counts
        return None


def message_check(ik, context, message):
    """What a reader must say about a bare message: ("ok", plaintext) or ("fail", class)."""
    if len(message) < PREFIX:
        return ("fail", "chunk")  # cut inside the salt or commitment: a truncation
    _, _, commitment = cobblestone_keys(ik, message[:24], context)
    if not hmac.compare_digest(commitment, message[24:PREFIX]):
        return ("fail", "commitment")
    last = (len(message) - PREFIX) % (CHUNK + TAG)
    if not TAG <= last <= CHUNK + TAG - 1 or len(message) - PREFIX < TAG:
        # the records leave no short last chunk: a reader needs no key to refuse it
        assert pyca_decrypt(ik, context, message) is None, "pyca took a malformed message"
        return ("fail", "chunk")
    plain = pyca_decrypt(ik, context, message)
    return ("ok", plain) if plain is not None else ("fail", "chunk")


# ---------------------------------------------------------------------------------------------
# The container (docs/FORMAT.md): stanzas, slots, header keys, and a reader.

WRAP_AAD = b"paraes 2026-11 container v2 wrapped file key"
WRAP_INFO = {
    1: b"paraes 2026-11 container v2 key-file stanza wrap key",
    2: b"paraes 2026-11 container v2 passphrase stanza wrap key",
    3: b"paraes 2026-11 container v2 X25519 stanza wrap key",
    5: b"paraes 2026-11 container v2 ssh-ed25519 stanza wrap key",
    6: b"paraes 2026-11 container v2 ssh-rsa stanza wrap key",
}
SSH_ED25519_TWEAK = b"paraes 2026-11 container v2 ssh-ed25519 stanza tweak"
SSH_RSA_LABEL = b"paraes 2026-11 container v2 ssh-rsa stanza"
STANZA_LEN = {1: 64, 2: 76, 3: 80, 4: 1168, 5: 84}
# Variable-length kinds: (shortest, longest) body.
STANZA_LEN_RANGE = {6: (4 + 256 + 48, 4 + 2048 + 48)}
V3_HEADER_KEY = "paraes 2026-11 container v3 header MAC key"
V3_BODY_KEY = "paraes 2026-11 container v3 body input key"


def argon2id(passphrase, salt, m, t, p):
    return Argon2id(salt=salt, length=32, iterations=t, lanes=p, memory_cost=m).derive(passphrase)


def wrap(kind, w, d):
    return AESGCMSIV(w).encrypt(bytes(12), d, WRAP_AAD + bytes([kind]))


def unwrap(kind, w, wrapped):
    try:
        return AESGCMSIV(w).decrypt(bytes(12), wrapped, WRAP_AAD + bytes([kind]))
    except Exception:  # InvalidTag: this stanza does not open with this secret
        return None


def stanza_key(key, d):
    salt = os.urandom(16)
    return (1, salt + wrap(1, hkdf_sha256(salt, key, WRAP_INFO[1]), d))


def stanza_passphrase(passphrase, d, m, t, p):
    salt = os.urandom(16)
    w = hkdf_sha256(None, argon2id(passphrase, salt, m, t, p), WRAP_INFO[2])
    params = m.to_bytes(4, "big") + t.to_bytes(4, "big") + p.to_bytes(4, "big")
    return (2, salt + params + wrap(2, w, d))


def stanza_x25519(recipient, d):
    e = X25519PrivateKey.generate()
    big_e = e.public_key().public_bytes_raw()
    shared = e.exchange(X25519PublicKey.from_public_bytes(recipient))
    w = hkdf_sha256(big_e + recipient, shared, WRAP_INFO[3])
    return (3, big_e + wrap(3, w, d))


def slot_len(stanzas):
    need = 10 + sum(3 + len(body) for _, body in stanzas) + 32
    return ((64 + 4 * need + 4095) // 4096 * 4096 - 64) // 2


def preamble(key_size, s):
    return (MAGIC + bytes([3, 3, key_size, 0]) + CHUNK.to_bytes(4, "big") + bytes(16)
            + s.to_bytes(4, "big") + bytes(28))


def slot(pre, s, generation, stanzas, d):
    """A slot of `s` bytes holding `stanzas`, its tag under the header key of file key `d`."""
    raw = generation.to_bytes(8, "big") + len(stanzas).to_bytes(2, "big")
    for kind, body in stanzas:
        raw += bytes([kind]) + len(body).to_bytes(2, "big") + body
    raw += blake3_keyed(blake3_derive_key(V3_HEADER_KEY, d), pre + raw)
    assert len(raw) <= s
    return raw.ljust(s, b"\0")


def body_key(d, key_size):
    return blake3_derive_key(V3_BODY_KEY, d, 32)[:key_size]


def parse_slot(raw):
    """(generation, [(kind, body)], tagged bytes, tag), or None when the slot does not parse
    (docs/FORMAT.md, "Byte layout")."""
    g = int.from_bytes(raw[:8], "big")
    n = int.from_bytes(raw[8:10], "big")
    if g in (0, 2**64 - 1) or not 1 <= n <= 255:
        return None
    pos, stanzas, passphrases = 10, [], 0
    for _ in range(n):
        if pos + 3 > len(raw):
            return None
        kind, length = raw[pos], int.from_bytes(raw[pos + 1:pos + 3], "big")
        body = raw[pos + 3:pos + 3 + length]
        if len(body) != length or STANZA_LEN.get(kind, length) != length:
            return None
        low, high = STANZA_LEN_RANGE.get(kind, (0, length))
        if not low <= length <= high:
            return None
        if kind == 2:
            passphrases += 1
            m, t, p = (int.from_bytes(body[i:i + 4], "big") for i in (16, 20, 24))
            if not (8 * p <= m <= 1 << 20 and 1 <= t <= 64 and 1 <= p <= 64):
                return None
        stanzas.append((kind, body))
        pos += 3 + length
    if passphrases > 1 or pos + 32 > len(raw) or any(raw[pos + 32:]):
        return None
    return (g, stanzas, raw[:pos], raw[pos:pos + 32])


def open_stanza(kind, body, identities):
    """The file key a stanza gives with one of `identities`, or None."""
    for ident in identities:
        if kind == 1 and ident["type"] == "key":
            w = hkdf_sha256(body[:16], bytes.fromhex(ident["hex"]), WRAP_INFO[1])
            d = unwrap(1, w, body[16:])
        elif kind == 2 and ident["type"] == "passphrase":
            m, t, p = (int.from_bytes(body[i:i + 4], "big") for i in (16, 20, 24))
            secret = argon2id(ident["text"].encode(), body[:16], m, t, p)
            d = unwrap(2, hkdf_sha256(None, secret, WRAP_INFO[2]), body[28:])
        elif kind == 3 and ident["type"] == "x25519":
            line = [x for x in ident["identity"].splitlines() if x.strip().upper().startswith(
                "PARAES-SECRET-KEY-")][0]
            _, scalar = bech32_decode(line)
            r = X25519PrivateKey.from_private_bytes(scalar)
            recipient = r.public_key().public_bytes_raw()
            shared = r.exchange(X25519PublicKey.from_public_bytes(body[:32]))
            if shared == bytes(32):
                continue
            d = unwrap(3, hkdf_sha256(body[:32] + recipient, shared, WRAP_INFO[3]), body[32:])
        elif kind in (5, 6) and ident["type"] == "ssh":
            d = open_ssh_stanza(kind, body, ident["key"])
        else:
            continue
        if d is not None:
            return d
    return None


# --- SSH stanzas (docs/FORMAT.md, kinds 5 and 6), as age's agessh with paraes's strings ------

ED25519_P = 2**255 - 19


def ssh_string(b):
    return len(b).to_bytes(4, "big") + b


def ssh_mpint(x):
    b = x.to_bytes((x.bit_length() + 7) // 8, "big") if x else b""
    if b and b[0] & 0x80:
        b = b"\0" + b
    return ssh_string(b)


def ed25519_wire(pk):
    return ssh_string(b"ssh-ed25519") + ssh_string(pk)


def rsa_wire(e, n):
    return ssh_string(b"ssh-rsa") + ssh_mpint(e) + ssh_mpint(n)


def ed25519_to_x25519(pk):
    """The Montgomery u of an Ed25519 public key: (1 + y) / (1 - y) mod p."""
    y = int.from_bytes(pk, "little") & ((1 << 255) - 1)
    u = (1 + y) * pow(1 - y, ED25519_P - 2, ED25519_P) % ED25519_P
    return u.to_bytes(32, "little")


def x25519(k, u):
    """X25519(k, u) of RFC 7748 (pyca clamps k); None for an all-zero result."""
    try:
        return X25519PrivateKey.from_private_bytes(k).exchange(X25519PublicKey.from_public_bytes(u))
    except ValueError:  # pyca refuses an all-zero shared secret
        return None


def stanza_ssh_ed25519(pk, d):
    wire = ed25519_wire(pk)
    pk_x = ed25519_to_x25519(pk)
    tweak = hkdf_sha256(wire, b"", SSH_ED25519_TWEAK)
    e = X25519PrivateKey.generate()
    big_e = e.public_key().public_bytes_raw()
    shared = x25519(tweak, e.exchange(X25519PublicKey.from_public_bytes(pk_x)))
    w = hkdf_sha256(big_e + pk_x, shared, WRAP_INFO[5])
    return (5, hashlib.sha256(wire).digest()[:4] + big_e + wrap(5, w, d))


def stanza_ssh_rsa(public, d):
    numbers = public.public_numbers()
    wire = rsa_wire(numbers.e, numbers.n)
    secret32 = os.urandom(32)
    c = public.encrypt(secret32, padding.OAEP(mgf=padding.MGF1(hashes.SHA256()),
                                              algorithm=hashes.SHA256(), label=SSH_RSA_LABEL))
    key_hash = hashlib.sha256(wire).digest()
    return (6, key_hash[:4] + c + wrap(6, hkdf_sha256(key_hash, secret32, WRAP_INFO[6]), d))


def load_ssh_key(text):
    data = text.encode()
    if data.startswith(b"-----BEGIN OPENSSH"):
        return serialization.load_ssh_private_key(data, None)
    return serialization.load_pem_private_key(data, None)


def open_ssh_stanza(kind, body, key_text):
    """The file key an SSH stanza gives with the private key file `key_text`, or None."""
    key = load_ssh_key(key_text)
    if kind == 5 and isinstance(key, ed25519.Ed25519PrivateKey):
        pk = key.public_key().public_bytes_raw()
        if body[:4] != hashlib.sha256(ed25519_wire(pk)).digest()[:4]:
            return None
        scalar = hashlib.sha512(key.private_bytes_raw()).digest()[:32]
        pk_x = X25519PrivateKey.from_private_bytes(scalar).public_key().public_bytes_raw()
        assert pk_x == ed25519_to_x25519(pk), "the two ways to X25519 disagree"
        first = x25519(scalar, body[4:36])
        if first is None:
            return None
        shared = x25519(hkdf_sha256(ed25519_wire(pk), b"", SSH_ED25519_TWEAK), first)
        return unwrap(5, hkdf_sha256(body[4:36] + pk_x, shared, WRAP_INFO[5]), body[36:])
    if kind == 6 and isinstance(key, rsa.RSAPrivateKey):
        numbers = key.public_key().public_numbers()
        key_hash = hashlib.sha256(rsa_wire(numbers.e, numbers.n)).digest()
        k = (numbers.n.bit_length() + 7) // 8
        if body[:4] != key_hash[:4] or len(body) != 4 + k + 48:
            return None
        try:
            secret32 = key.decrypt(body[4:4 + k], padding.OAEP(
                mgf=padding.MGF1(hashes.SHA256()), algorithm=hashes.SHA256(), label=SSH_RSA_LABEL))
        except ValueError:
            return None
        if len(secret32) != 32:
            return None
        return unwrap(6, hkdf_sha256(key_hash, secret32, WRAP_INFO[6]), body[4 + k:])
    return None


def container_check(data, identities):
    """What a reader must say about a container (docs/FORMAT.md, "Opening a v3 file"):
    ("ok", plaintext) or ("fail", class)."""
    if len(data) < 64:
        return ("fail", "header")
    pre = data[:64]
    s = int.from_bytes(pre[32:36], "big")
    if (pre[:8] != MAGIC or pre[8] != 3 or pre[9] != 3 or pre[10] not in (16, 32) or pre[11]
            or int.from_bytes(pre[12:16], "big") != CHUNK or any(pre[16:32]) or any(pre[36:])
            or (64 + 2 * s) % 4096 or s > 1 << 20):
        return ("fail", "header")
    offset = 64 + 2 * s
    if len(data) < offset:
        return ("fail", "header")
    slots = []
    for i in range(2):
        raw = data[64 + i * s:64 + (i + 1) * s]
        parsed = parse_slot(raw) if any(raw) else None
        if parsed:
            slots.append((i, parsed))
    if not slots:
        return ("fail", "header")
    cost = sum(-(-int.from_bytes(b[16:20], "big") // 1024) * int.from_bytes(b[20:24], "big")
               for _, (_, st, _, _) in slots for k, b in st if k == 2)
    assert cost <= 3072, "a kit file over the Argon2id cap"
    slots.sort(key=lambda x: (-x[1][0], x[0]))
    failure = "no_match"
    message = data[offset:]
    for i, (g, stanzas, tagged, tag) in slots:
        for kind, body in stanzas:
            d = open_stanza(kind, body, identities)
            if d is None:
                continue
            m = blake3_derive_key(V3_HEADER_KEY, d)
            if not hmac.compare_digest(blake3_keyed(m, pre + tagged), tag):
                failure = "header"
                continue
            verdict = message_check(body_key(d, pre[10]), pre[:16], message)
            if verdict[0] == "fail":
                failure = verdict[1]
                continue
            for j, (_, _, other_tagged, other_tag) in slots:
                if j != i and not hmac.compare_digest(blake3_keyed(m, pre + other_tagged),
                                                      other_tag):
                    return ("fail", "header")  # a second slot this file key does not verify
            return verdict
    return ("fail", failure)


# ---------------------------------------------------------------------------------------------
# The kit.

def craft_simple(n, bits, makers):
    """A container of plaintext(n) whose one slot holds the stanzas `makers` make for a fresh
    file key D, with a pyca-made body."""
    d = os.urandom(32)
    stanzas = [make(d) for make in makers]
    s = slot_len(stanzas)
    pre = preamble(bits // 8, s)
    header = pre + slot(pre, s, 1, stanzas, d) + bytes(s)
    return header + pyca_encrypt(body_key(d, bits // 8), pre[:16], plaintext(n))

def secret(label, n):
    return hashlib.sha256(b"paraes testkit " + label.encode()).digest()[:n]


def plaintext(n):
    out = b"".join(hashlib.sha256(b"paraes testkit plaintext" + i.to_bytes(8, "big")).digest()
                   for i in range((n + 31) // 32))
    return out[:n]


LENGTHS = [0, 1, CHUNK - 1, CHUNK, CHUNK + 1, 3 * CHUNK + 5]
PASSPHRASE = "correct horse battery staple, testkit"
WRONG_PASSPHRASE = "correct horse battery staple, testkat"


class Kit:
    def __init__(self, paraes, out, work, append=False):
        """append=True (`--only xwing`): write only this run's files, and put its entries into
        the manifest already in `out` (replacing entries of the same names), leaving every
        other file as it is."""
        self.paraes, self.out, self.work, self.append = paraes, out, work, append
        self.entries = []
        self.files = {}

    def run(self, *args, stdin=None):
        res = subprocess.run([self.paraes, *args], cwd=self.work, input=stdin,
                             capture_output=True)
        if res.returncode != 0:
            sys.exit(f"paraes {' '.join(args)} failed: {res.stderr.decode()}")
        return res

    def secret_file(self, name, content):
        path = os.path.join(self.work, name)
        with open(path, "wb") as f:
            f.write(content)
        os.chmod(path, 0o600)
        return name

    def x25519(self, label):
        """(identity dict, recipient text, 32-byte public key) of a fixed X25519 secret."""
        scalar = secret("x25519 " + label, 32)
        recipient = bech32_encode(
            "paraes", X25519PrivateKey.from_private_bytes(scalar).public_key().public_bytes_raw())
        text = (f"# paraes identity (X25519); keep this file secret\n# recipient: {recipient}\n"
                f"{bech32_encode('paraes-secret-key-', scalar).upper()}\n")
        name = self.secret_file(f"x25519-{label}.id", text.encode())
        # paraes must read the identity this script wrote as the same recipient
        said = self.run("keygen", "-y", name).stdout.decode().strip()
        assert said == recipient, (said, recipient)
        return {"type": "x25519", "identity": text}, recipient, bech32_decode(recipient)[1]

    def enc(self, n, args, stdin=None):
        """Bytes of `paraes enc ARGS` over plaintext(n)."""
        src = self.secret_file("plain", plaintext(n))
        self.run("enc", "-q", "-f", *args, src, "-o", "out", stdin=stdin)
        with open(os.path.join(self.work, "out"), "rb") as f:
            return f.read()

    def add(self, name, data, kind, identities, note, expect, context=None, check=None):
        """Records a file and its expectation: `expect` is a plaintext length (the plaintext is
        plaintext(n)) or a failure class. The independent reader must agree: this script's
        (`container_check`), or the one `check` names (`second_reader_check` for the X-Wing
        entries and for format v3's step 5 as FORMAT.md now gives it)."""
        assert name not in self.files, name
        self.files[name] = data
        entry = {"file": name, "kind": kind, "identities": identities}
        if kind == "message":
            entry["context_hex"] = context.hex()
            got = message_check(bytes.fromhex(identities[0]["hex"]), context, data)
        else:
            got = (check or container_check)(data, identities)
        if isinstance(expect, int):
            plain = plaintext(expect)
            entry.update(expect="ok", plaintext_len=expect,
                         plaintext_sha256=hashlib.sha256(plain).hexdigest())
            assert got == ("ok", plain), f"{name}: the reader says {got[:1]} {got[1:][:1]}"
        else:
            entry.update(expect="fail", failure=expect)
            assert got == ("fail", expect), f"{name}: expected {expect}, the reader says {got}"
        entry["note"] = note
        self.entries.append(entry)

    def write(self):
        if not self.entries:
            return
        if self.append:
            path = os.path.join(self.out, "manifest.json")
            with open(path) as f:
                kept = [e for e in json.load(f) if e["file"] not in self.files]
            for name, data in self.files.items():
                with open(os.path.join(self.out, name), "wb") as f:
                    f.write(data)
            with open(path, "w") as f:
                json.dump(kept + self.entries, f, indent=1)
                f.write("\n")
            return
        os.makedirs(self.out, exist_ok=True)
        for name in os.listdir(self.out):  # the previous kit's files, nothing else
            if name.endswith((".paraes", ".cbl")) or name == "manifest.json":
                os.unlink(os.path.join(self.out, name))
        for name, data in self.files.items():
            with open(os.path.join(self.out, name), "wb") as f:
                f.write(data)
        with open(os.path.join(self.out, "manifest.json"), "w") as f:
            json.dump(self.entries, f, indent=1)
            f.write("\n")


def key_ident(key):
    return {"type": "key", "hex": key.hex()}


def body_offset(data):
    return 64 + 2 * int.from_bytes(data[32:36], "big")


def flip(data, pos, bit=1):
    b = bytearray(data)
    b[pos] ^= bit
    return bytes(b)


def records(message):
    """The chunk records (ciphertext || tag) of a message, after its prefix."""
    body = message[PREFIX:]
    return [body[i:i + CHUNK + TAG] for i in range(0, len(body), CHUNK + TAG)]


def build(kit):
    k256, k256b = secret("key 256 A", 32), secret("key 256 B", 32)
    k128, k128b = secret("key 128 A", 16), secret("key 128 B", 16)
    f256 = kit.secret_file("k256", (k256.hex() + "\n").encode())
    f256b = kit.secret_file("k256b", (k256b.hex() + "\n").encode())
    f128 = kit.secret_file("k128", (k128.hex() + "\n").encode())
    fpass = kit.secret_file("pass", (PASSPHRASE + "\n").encode())
    x1, x1_recipient, x1_pub = kit.x25519("1")
    x2, x2_recipient, _ = kit.x25519("2")
    i256, i256b, i128, i128b = (key_ident(k) for k in (k256, k256b, k128, k128b))
    ipass = {"type": "passphrase", "text": PASSPHRASE}
    iwrong_pass = {"type": "passphrase", "text": WRONG_PASSPHRASE}
    c = "container"

    def show_data_key(data, key_file):
        """IK of a paraes container, from `dec --show-data-key`."""
        src = kit.secret_file("shown", data)
        err = kit.run("dec", "-f", "-k", key_file, "--show-data-key", src, "-o",
                      os.devnull).stderr.decode()
        line = [x for x in err.splitlines() if x.startswith("data key:")][0]
        return bytes.fromhex(line.split("data key:")[1].strip())

    # --- containers by paraes enc: every length, both body sizes --------------------------
    good = {}
    for bits, key_file, ident in ((256, f256, i256), (128, f128, i128)):
        for n in LENGTHS:
            name = f"c{bits}-key-len{n}.paraes"
            data = kit.enc(n, ["-k", key_file, "--bits", str(bits)])
            good[(bits, n)] = data
            kit.add(name, data, c, [ident], f"paraes enc, one key-file stanza ({bits}-bit "
                    f"key), a {bits}-bit body (Cobblestone-{bits}) of {n} bytes.", n)
    kit.add("c128-key256-len100.paraes", kit.enc(100, ["-k", f256, "--bits", "128"]), c, [i256],
            "A 256-bit key file wrapping the file key of a 128-bit body: the key's size and the "
            "body's are independent.", 100)
    kit.add("c256-passphrase-len100.paraes", kit.enc(100, ["--passphrase-file", fpass]), c,
            [ipass], "paraes enc, one passphrase stanza with paraes's own Argon2id costs (64 "
            "MiB, 3 passes, 4 lanes: the only such file here, it costs a reader that much).", 100)
    kit.add("c256-x25519-len1000.paraes", kit.enc(1000, ["-r", x1_recipient]), c, [x1],
            "paraes enc -r: one X25519 stanza, opened with the identity file's text.", 1000)
    kit.add("c256-mix-by-x25519-len20000.paraes",
            kit.enc(20000, ["-k", f256b, "--passphrase-file", fpass, "-r", x2_recipient,
                            "-r", x1_recipient]), c, [x1],
            "A mix of stanzas (key file B, passphrase, X25519 for identity 2, X25519 for "
            "identity 1), opened by the last one: the others are tried and skipped.", 20000)
    kit.add("c128-mix-by-key-len16384.paraes",
            kit.enc(CHUNK, ["--bits", "128", "-k", f128, "-r", x2_recipient, "-k", f256]), c,
            [i256], "A mix (key file 128 A, key file 256 A, X25519 for identity 2: key files "
            "come first, in the order given), opened by the second key file; a 128-bit body of "
            "exactly one chunk (then an empty final chunk).", CHUNK)
    kit.add("c256-mix-several-secrets-len3.paraes",
            kit.enc(3, ["-k", f128, "-r", x1_recipient]), c, [i256b, x2, x1, i128],
            "Several secrets given, two of which open a stanza (identity 1 and key 128 A); "
            "the wrong key and identity open nothing and are no error.", 3)

    # --- containers by this script (docs/FORMAT.md): what paraes enc cannot write ---------
    def craft(n, bits, slot0, slot1=None, body=None, s=None):
        """A container with file key D = slot0's: slot0 = (generation, stanza makers) where
        each maker takes D; slot1 the same, or (generation, makers, other D), or raw bytes."""
        d = os.urandom(32)
        stanzas0 = [make(d) for make in slot0[1]]
        stanzas1 = []
        if isinstance(slot1, tuple):
            d1 = slot1[2] if len(slot1) > 2 else d
            stanzas1 = [make(d1) for make in slot1[1]]
        s = s or slot_len(stanzas0 + stanzas1)
        pre = preamble(bits // 8, s)
        header = pre + slot(pre, s, slot0[0], stanzas0, d)
        if isinstance(slot1, tuple):
            header += slot(pre, s, slot1[0], stanzas1, d1)
        elif isinstance(slot1, bytes):
            header += slot1.ljust(s, b"\0")
        else:
            header += bytes(s)
        ik = body_key(d, bits // 8)
        return header + (body(d, ik, pre) if body else pyca_encrypt(ik, pre[:16], plaintext(n)))

    key = lambda k: lambda d: stanza_key(k, d)  # noqa: E731
    cheap = lambda d: stanza_passphrase(PASSPHRASE.encode(), d, 256, 1, 1)  # noqa: E731
    to_x1 = lambda d: stanza_x25519(x1_pub, d)  # noqa: E731
    kit.add("c256-py-passphrase-len16385.paraes", craft(CHUNK + 1, 256, (1, [cheap])), c,
            [ipass], "Made by the script from docs/FORMAT.md: one passphrase stanza with cheap "
            "Argon2id costs (256 KiB, 1 pass, 1 lane), a 256-bit body by pyca's "
            "Cobblestone256Encryptor.", CHUNK + 1)
    kit.add("c128-py-mix-by-passphrase-len49157.paraes",
            craft(3 * CHUNK + 5, 128, (1, [key(k256b), cheap, to_x1])), c, [ipass],
            "Made by the script: key-file, cheap passphrase and X25519 stanzas, opened by the "
            "passphrase; a 128-bit body of four chunks.", 3 * CHUNK + 5)
    kit.add("c256-py-x25519-len0.paraes", craft(0, 256, (1, [to_x1])), c, [x1],
            "Made by the script: an X25519 stanza as docs/FORMAT.md (age's construction) "
            "defines it, an empty plaintext.", 0)
    kit.add("c256-py-unknown-stanza-len33.paraes",
            craft(33, 256, (1, [lambda d: (200, b"future"), key(k256)])), c, [i256],
            "Made by the script: a stanza of an unknown kind (200, 6 bytes) before a key-file "
            "stanza: a reader skips it (the slot tag still covers it).", 33)
    kit.add("c256-py-two-slots-len16383.paraes",
            craft(CHUNK - 1, 256, (1, [key(k256b)]), (2, [key(k256)])), c, [i256],
            "Made by the script: two slots for the same file key (as a rekey leaves them when "
            "killed before it wipes the old one), generation 1 with key B, generation 2 with "
            "key A; both slot tags verify under the file key.", CHUNK - 1)
    kit.add("c256-py-idle-slot-len2.paraes",
            craft(2, 256, (1, [key(k256)]), bytes(8) + b"\x00\x01\x01\x00\x40" + os.urandom(64)),
            c, [i256], "Made by the script: slot 1 holds a stanza behind generation 0 (a slot "
            "being published or wiped), which does not parse and is ignored.", 2)

    # --- no_match -------------------------------------------------------------------------
    kit.add("c256-nomatch-wrong-key.paraes", good[(256, 1)], c, [i256b],
            "A 256-bit key that no stanza was made for.", "no_match")
    kit.add("c256-nomatch-key-of-other-size.paraes", good[(256, CHUNK - 1)], c, [i128],
            "A 128-bit key against a stanza made for a 256-bit one.", "no_match")
    kit.add("c256-nomatch-wrong-passphrase.paraes", craft(10, 256, (1, [cheap])), c,
            [iwrong_pass], "The wrong passphrase (one letter differs) for a cheap passphrase "
            "stanza.", "no_match")
    kit.add("c256-nomatch-wrong-identity.paraes", kit.enc(10, ["-r", x1_recipient]), c, [x2],
            "An X25519 identity the file was not encrypted to.", "no_match")
    kit.add("c256-nomatch-wrong-kinds.paraes", kit.enc(10, ["-k", f256]), c, [ipass, x1],
            "A passphrase and an identity against a file with a key-file stanza only.",
            "no_match")
    data = good[(256, 16385)]
    kit.add("c256-nomatch-damaged-stanza.paraes", flip(data, 64 + 10 + 3 + 30), c, [i256],
            "A byte of the wrapped file key changed: the stanza's AES-GCM-SIV tag fails, so "
            "nothing opens (the slot tag is never reached).", "no_match")

    # --- commitment -------------------------------------------------------------------------
    a, b = kit.enc(CHUNK + 1, ["-k", f256]), kit.enc(CHUNK + 1, ["-k", f256])
    assert body_offset(a) == body_offset(b) == 4096
    kit.add("c256-commitment-header-from-another-file.paraes", a[:4096] + b[4096:], c, [i256],
            "The header of one file on the body of another made with the same key file: the "
            "header opens and its slot tag verifies, but the body's commitment is for another "
            "file key.", "commitment")
    data = good[(256, 1)]
    kit.add("c256-commitment-salt-byte.paraes", flip(data, 4096 + 7), c, [i256],
            "One bit of the body's salt changed: the commitment no longer matches.",
            "commitment")
    kit.add("c256-commitment-commitment-byte.paraes", flip(data, 4096 + 24 + 31, 0x80), c,
            [i256], "One bit of the body's key commitment changed.", "commitment")
    data = good[(128, CHUNK + 1)]
    kit.add("c128-commitment-salt-byte.paraes", flip(data, 4096), c, [i128],
            "One bit of the first salt byte of a 128-bit body changed.", "commitment")
    # Context changes with a valid slot tag (only a writer holding D can make these).
    kit.add("c128-commitment-body-keyed-for-256.paraes",
            craft(100, 128, (1, [key(k256)]), body=lambda d, ik, pre: pyca_encrypt(
                body_key(d, 32), pre[:10] + bytes([32]) + pre[11:16], plaintext(100))), c,
            [i256], "Made by the script: the header says a 128-bit body (its slot tag is "
            "valid), the body is a 256-bit one under the same file key's 32-byte input key "
            "and the context with key size 32: a changed context byte, committed.",
            "commitment")
    kit.add("c256-commitment-context-32-bytes.paraes",
            craft(100, 256, (1, [key(k256)]), body=lambda d, ik, pre: pyca_encrypt(
                ik, pre[:32], plaintext(100))), c, [i256],
            "Made by the script: the body under the right input key but with the preamble's "
            "first 32 bytes as context (docs/FORMAT.md says 16).", "commitment")
    kit.add("c256-commitment-body-under-file-key.paraes",
            craft(100, 256, (1, [key(k256)]), body=lambda d, ik, pre: pyca_encrypt(
                d, pre[:16], plaintext(100))), c, [i256],
            "Made by the script: the body under the file key D itself instead of the input "
            "key derived from it.", "commitment")
    kit.add("c256-commitment-two-faced.paraes",
            craft(100, 256, (1, [key(k256)]), (2, [key(k256b)], os.urandom(32))), c, [i256b],
            "Made by the script: slot 1 (generation 2) wraps another file key for key B with "
            "a valid slot tag under that key; key B opens it, and the body's commitment, made "
            "for slot 0's file key, refuses it (one body, one file key).", "commitment")

    # --- header -----------------------------------------------------------------------------
    data = kit.enc(1000, ["-k", f256])
    kit.add("c256-header-slot-tag-byte.paraes", flip(data, 64 + 10 + 67 + 5), c, [i256],
            "One bit of slot 0's tag changed: the stanza opens, the slot tag fails.", "header")
    kit.add("c256-header-key-size-byte.paraes", data[:10] + bytes([16]) + data[11:], c, [i256],
            "Preamble byte 10 (part of the body's context) changed from 32 to 16, a valid "
            "value: the stanza opens and the slot tag, which covers the preamble, fails.",
            "header")
    kit.add("c256-header-version-byte.paraes", data[:8] + bytes([4]) + data[9:], c, [i256],
            "Format version 4: refused before any slot is read.", "header")
    kit.add("c256-header-reserved-byte.paraes", flip(data, 20), c, [i256],
            "A byte of preamble bytes 16..32, reserved and zero in v3, set.", "header")
    kit.add("c256-header-chunk-size.paraes", flip(data, 13, 0x80), c, [i256],
            "A chunk size other than 16384 in the preamble.", "header")
    kit.add("c256-header-truncated.paraes", data[:4000], c, [i256],
            "The file cut inside its header (4000 of 4096 header bytes).", "header")
    kit.add("c256-header-no-slot-parses.paraes", data[:64] + bytes(8) + data[72:], c, [i256],
            "Slot 0's generation set to 0 (being published or wiped: it does not parse) and "
            "slot 1 empty: no slot to open.", "header")
    # Step 5 of "Opening a file" as docs/FORMAT.md gives it since issue 35: in format v3 a
    # second parsed slot that does not verify under the file key is ignored (the key
    # commitment decides), so this file opens; only v2 refuses. (The file keeps its name,
    # from when v3 refused it too.) Checked by the second reader, which follows the new step 5.
    kit.add("c256-header-unverified-second-slot.paraes",
            craft(100, 256, (1, [key(k256)]), (2, [key(k256b)], os.urandom(32))), c, [i256],
            "Made by the script: slot 0 opens with key A and its body is whole, but slot 1 "
            "(generation 2, for key B and another file key) does not verify under that file "
            "key: format v3 ignores that slot (the body's key commitment confirms the file "
            "key) and the file opens, saying which slot it ignored (step 5; v2 would refuse).",
            100, check=second_reader_check)

    # --- chunk ------------------------------------------------------------------------------
    data = good[(256, 3 * CHUNK + 5)]
    off = 4096
    recs = records(data[off:])
    prefix = data[:off + PREFIX]
    kit.add("c256-chunk-truncated-at-boundary.paraes", prefix + b"".join(recs[:2]), c, [i256],
            "A four-chunk body cut after its second chunk: the last record is a full one.",
            "chunk")
    kit.add("c256-chunk-truncated-in-chunk.paraes", data[:off + PREFIX + CHUNK + TAG + 5000],
            c, [i256], "A four-chunk body cut 5000 bytes into its second chunk.", "chunk")
    kit.add("c256-chunk-prefix-only.paraes", prefix, c, [i256],
            "The body's salt and commitment with no chunk at all (not even an empty final "
            "one).", "chunk")
    kit.add("c256-chunk-swapped.paraes", prefix + recs[1] + recs[0] + b"".join(recs[2:]), c,
            [i256], "Chunks 0 and 1 of a four-chunk body swapped.", "chunk")
    kit.add("c256-chunk-duplicated.paraes", prefix + recs[0] + recs[0] + b"".join(recs[2:]), c,
            [i256], "Chunk 1 replaced by a copy of chunk 0.", "chunk")
    kit.add("c256-chunk-flipped-middle-ciphertext.paraes",
            flip(data, off + PREFIX + (CHUNK + TAG) + 9000), c, [i256],
            "One bit of chunk 1's ciphertext changed (chunks 0, 2 and 3 are intact).", "chunk")
    data = good[(256, CHUNK + 1)]
    kit.add("c256-chunk-flipped-first-tag.paraes", flip(data, off + PREFIX + CHUNK + 3), c,
            [i256], "One bit of chunk 0's GCM tag changed (of two).", "chunk")
    kit.add("c256-chunk-flipped-last-tag.paraes", flip(data, len(data) - 1), c, [i256],
            "One bit of the final chunk's tag changed.", "chunk")
    kit.add("c256-chunk-truncated-last-byte.paraes", data[:-1], c, [i256],
            "The last byte (of the final chunk's tag) cut off.", "chunk")
    kit.add("c256-chunk-appended-byte.paraes", data + b"\0", c, [i256],
            "One zero byte appended after the final chunk.", "chunk")
    data = good[(256, CHUNK)]
    kit.add("c256-chunk-full-final-chunk.paraes", data[:-TAG], c, [i256],
            "A 16384-byte plaintext's body without its trailing empty chunk: its last chunk "
            "is a full one, which only a truncation leaves.", "chunk")
    kit.add("c256-chunk-extra-garbage-tag.paraes", data + os.urandom(TAG), c, [i256],
            "16 random bytes (an invalid empty chunk's tag) appended after the final empty "
            "chunk.", "chunk")
    ik = show_data_key(data, f256)
    key_c, base, _ = cobblestone_keys(ik, data[off:off + 24], data[:16])
    extra = AESGCM(key_c).encrypt(chunk_nonce(base, 2), b"", None)
    kit.add("c256-chunk-extra-real-empty-chunk.paraes", data + extra, c, [i256],
            "A real empty chunk 2 (sealed with the body's chunk key and nonce 2, from "
            "--show-data-key) appended after the final empty chunk 1: each tag would verify "
            "alone, but the body then ends in a 32-byte record that is no chunk.", "chunk")
    data = good[(128, 1)]
    ik = show_data_key(data, f128)
    key_c, base, _ = cobblestone_keys(ik, data[off:off + 24], data[:16])
    kit.add("c128-chunk-extra-real-empty-chunk.paraes",
            data + AESGCM(key_c).encrypt(chunk_nonce(base, 1), b"", None), c, [i128],
            "A 1-byte plaintext's body with a real empty chunk 1 appended after its final "
            "chunk 0.", "chunk")
    kit.add("c128-chunk-flipped-only-tag.paraes", flip(good[(128, 0)], -1 + len(good[(128, 0)]),
                                                       0x10), c, [i128],
            "An empty plaintext's only (empty) chunk with one tag bit changed.", "chunk")

    # --- bare messages --------------------------------------------------------------------
    m = "message"
    mk256, mk256b = secret("message key 256 A", 32), secret("message key 256 B", 32)
    mk128, mk128b = secret("message key 128 A", 16), secret("message key 128 B", 16)
    fm = {k: kit.secret_file(f"mk{i}", (k.hex() + "\n").encode())
          for i, k in enumerate((mk256, mk128))}
    contexts = [b"", b"backups", bytes([0, 0xFF, 0x10, 0x80])]
    msgs = {}
    for bits, mkey in ((256, mk256), (128, mk128)):
        for i, n in enumerate(LENGTHS):
            ctx = contexts[i % 3]
            data = kit.enc(n, ["--format", "cobblestone", "-k", fm[mkey], "--context-hex",
                               ctx.hex()] if ctx else ["--format", "cobblestone", "-k", fm[mkey]])
            msgs[(bits, n)] = (data, mkey, ctx)
            kit.add(f"m{bits}-paraes-len{n}.cbl", data, m, [key_ident(mkey)],
                    f"paraes enc --format cobblestone: a Cobblestone-{bits} message of {n} "
                    f"bytes, context {'empty' if not ctx else ctx.hex()}.", n, ctx)
    for bits, mkey in ((256, mk256), (128, mk128)):
        for n, ctx in ((0, b"pyca"), (1, b""), (CHUNK, b"\x01"), (3 * CHUNK + 5, b"chunked")):
            kit.add(f"m{bits}-pyca-len{n}.cbl", pyca_encrypt(mkey, ctx, plaintext(n)), m,
                    [key_ident(mkey)], f"pyca's Cobblestone{bits}Encryptor: {n} bytes, context "
                    f"{'empty' if not ctx else ctx.hex()}.", n, ctx)

    data, mkey, ctx = msgs[(256, CHUNK + 1)]
    assert ctx == b"backups"
    kit.add("m256-commitment-wrong-key.cbl", data, m, [key_ident(mk256b)],
            "The wrong 32-byte key.", "commitment", ctx)
    kit.add("m256-commitment-key-of-other-size.cbl", data, m, [key_ident(mk128)],
            "A 16-byte key (Cobblestone-128) for a Cobblestone-256 message.", "commitment", ctx)
    kit.add("m256-commitment-empty-context.cbl", data, m, [key_ident(mkey)],
            "The right key with the empty context; the message's context is \"backups\".",
            "commitment", b"")
    kit.add("m256-commitment-context-byte.cbl", data, m, [key_ident(mkey)],
            "The right key with one letter of the context changed.", "commitment", b"backupt")
    kit.add("m256-commitment-salt-byte.cbl", flip(data, 23), m, [key_ident(mkey)],
            "One bit of the salt changed.", "commitment", ctx)
    kit.add("m256-commitment-commitment-byte.cbl", flip(data, 40), m, [key_ident(mkey)],
            "One bit of the key commitment changed.", "commitment", ctx)
    data, mkey, ctx = msgs[(128, 0)]  # empty context
    kit.add("m128-commitment-wrong-key.cbl", data, m, [key_ident(mk128b)],
            "The wrong 16-byte key for an empty message.", "commitment", ctx)
    kit.add("m128-commitment-nonempty-context.cbl", data, m, [key_ident(mkey)],
            "The right key with a context given; the message's context is empty.",
            "commitment", b"\0")

    data, mkey, ctx = msgs[(256, 3 * CHUNK + 5)]
    recs = records(data)
    prefix, k = data[:PREFIX], [key_ident(mkey)]
    kit.add("m256-chunk-truncated-at-boundary.cbl", prefix + b"".join(recs[:3]), m, k,
            "A four-chunk message cut after its third chunk.", "chunk", ctx)
    kit.add("m256-chunk-truncated-in-chunk.cbl", data[:PREFIX + 100], m, k,
            "A four-chunk message cut 100 bytes into its first chunk.", "chunk", ctx)
    kit.add("m256-chunk-prefix-only.cbl", prefix, m, k,
            "The salt and commitment only: no chunk, not even an empty final one.", "chunk", ctx)
    kit.add("m256-chunk-truncated-in-prefix.cbl", data[:30], m, k,
            "Cut inside the key commitment (30 bytes): too short to be a message.", "chunk",
            ctx)
    kit.add("m256-chunk-swapped.cbl", prefix + recs[0] + recs[2] + recs[1] + recs[3], m, k,
            "Chunks 1 and 2 swapped.", "chunk", ctx)
    kit.add("m256-chunk-flipped-tag.cbl", flip(data, PREFIX + 2 * (CHUNK + TAG) - 1), m, k,
            "One bit of chunk 1's tag changed (of four).", "chunk", ctx)
    key_c, base, _ = cobblestone_keys(mkey, data[:24], ctx)
    kit.add("m256-chunk-extra-real-empty-chunk.cbl",
            data + AESGCM(key_c).encrypt(chunk_nonce(base, 4), b"", None), m, k,
            "A real empty chunk 4 (sealed with the message's chunk key and nonce 4) appended "
            "after the final 5-byte chunk 3: the last record becomes 37 bytes, no chunk.",
            "chunk", ctx)
    data, mkey, ctx = msgs[(256, CHUNK + 1)]
    k = [key_ident(mkey)]
    kit.add("m256-chunk-appended-byte.cbl", data + b"\x01", m, k,
            "One byte appended after the final chunk.", "chunk", ctx)
    kit.add("m256-chunk-extra-garbage-tag.cbl", data + os.urandom(TAG), m, k,
            "16 random bytes (an invalid empty chunk) appended after the final chunk.", "chunk",
            ctx)
    data, mkey, ctx = msgs[(128, CHUNK)]
    kit.add("m128-chunk-full-final-chunk.cbl", data[:-TAG], m, [key_ident(mkey)],
            "A 16384-byte plaintext's message without its trailing empty chunk: the last "
            "chunk is a full one.", "chunk", ctx)
    key_c, base, _ = cobblestone_keys(mkey, data[:24], ctx)
    kit.add("m128-chunk-extra-real-empty-chunk.cbl",
            data + AESGCM(key_c).encrypt(chunk_nonce(base, 2), b"", None), m, [key_ident(mkey)],
            "A real empty chunk 2 appended after the final empty chunk 1 of a one-chunk "
            "message: each tag would verify alone; the message ends in a 32-byte record.",
            "chunk", ctx)
    data, mkey, ctx = msgs[(128, 1)]
    kit.add("m128-chunk-flipped-only-ciphertext.cbl", flip(data, PREFIX), m, [key_ident(mkey)],
            "The only ciphertext byte of a 1-byte message changed.", "chunk", ctx)

    build_xwing(kit)


# --- X-Wing (kind 4) entries of the main kit (issue 35) ----------------------------------------
# Written by `paraes enc -r paraespq1...` and, from docs/FORMAT.md ("The X-Wing stanza (kind
# 4)"), by this script with pyca's ML-KEM-768 and X25519. This script's own reader does not read
# X-Wing stanzas: these entries are checked by the second reader (scripts/second-reader, also
# written from docs/FORMAT.md alone). `--only xwing` writes them alone, into the existing kit.

XWING_INFO = b"paraes 2026-11 container v2 X-Wing stanza wrap key"
XWING_LABEL = b"\\.//^\\"
XWING_ID_OFFSET = 64 + 10 + 3  # a new file's first stanza body: preamble, g and n, kind and L


def second_reader_check(data, identities):
    """("ok", plaintext) or ("fail", class) from scripts/second-reader/paraes_reader.py."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                    "second-reader"))
    import paraes_reader as pr
    try:
        return "ok", pr.read_container(data, pr.identities_from_manifest(identities))
    except pr.ReaderError as e:
        return "fail", e.cls


def xwing_identity(kit, label):
    """(identity dict, recipient text, 1,216-byte recipient) of a fixed X-Wing seed, written
    as `paraes keygen --pq` writes an identity; paraes gives its recipient (`keygen -y`)."""
    seed = secret("xwing " + label, 32)
    line = bech32_encode("paraes-pq-secret-key-", seed).upper()
    name = kit.secret_file(f"xwing-{label}.id", (line + "\n").encode())
    recipient = kit.run("keygen", "-y", name).stdout.decode().strip()
    text = (f"# paraes identity (ML-KEM-768 + X25519); keep this file secret\n"
            f"# recipient: {recipient}\n{line}\n")
    name = kit.secret_file(f"xwing-{label}.id", text.encode())
    said = kit.run("keygen", "-y", name).stdout.decode().strip()
    assert said == recipient, (said, recipient)
    hrp, payload = bech32_decode(recipient)
    assert hrp == "paraespq" and len(payload) == 1216, (hrp, len(payload))
    return {"type": "xwing", "identity": text}, recipient, payload


def stanza_xwing(recipient, d, zero_share=False):
    """An X-Wing stanza wrapping D for a 1,216-byte recipient, by docs/FORMAT.md: ML-KEM-768
    encapsulation (pyca's), X25519 share, the SHA3-256 combiner, HKDF, AES-256-GCM-SIV.
    zero_share: ct_X is the all-zero u-coordinate (a low-order point), so ss_X is all zero,
    which the X-Wing stanza, unlike kind 3, does not refuse."""
    from cryptography.hazmat.primitives.asymmetric.mlkem import MLKEM768PublicKey
    from cryptography.hazmat.primitives.kdf.hkdf import HKDF
    ek_m, pk_x = recipient[:1184], recipient[1184:]
    ss_m, ct_m = MLKEM768PublicKey.from_public_bytes(ek_m).encapsulate()
    if zero_share:
        ct_x = ss_x = bytes(32)
    else:
        e = X25519PrivateKey.generate()
        ct_x = e.public_key().public_bytes_raw()
        ss_x = e.exchange(X25519PublicKey.from_public_bytes(pk_x))
    ss = hashlib.sha3_256(ss_m + ss_x + ct_x + pk_x + XWING_LABEL).digest()
    w = HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=XWING_INFO).derive(ss)
    wrapped = AESGCMSIV(w).encrypt(bytes(12), d, WRAP_AAD + bytes([4]))
    assert len(ct_m) == 1088 and len(wrapped) == 48
    return 4, ct_m + ct_x + wrapped


def build_xwing(kit):
    assert len(XWING_LABEL) == 6 and XWING_LABEL.hex() == "5c2e2f2f5e5c"
    k256, k256b = secret("key 256 A", 32), secret("key 256 B", 32)
    f256b = kit.secret_file("k256b", (k256b.hex() + "\n").encode())
    x2, x2_recipient, _ = kit.x25519("2")
    xa, xa_recipient, xa_pub = xwing_identity(kit, "A")
    xb, xb_recipient, _ = xwing_identity(kit, "B")
    c, chk = "container", second_reader_check

    good = {}
    for bits, n in ((256, 0), (256, 1), (256, CHUNK + 1), (128, CHUNK)):
        name = f"c{bits}-xwing-len{n}.paraes"
        good[(bits, n)] = data = kit.enc(n, ["-r", xa_recipient, "--bits", str(bits)])
        kit.add(name, data, c, [xa], f"paraes enc -r paraespq1...: one X-Wing (ML-KEM-768 + "
                f"X25519) stanza, opened with the identity file's text as `paraes keygen --pq` "
                f"writes it; a {bits}-bit body of {n} bytes.", n, check=chk)
    kit.add("c256-xwing-mix-len20000.paraes",
            kit.enc(20000, ["-k", f256b, "-r", x2_recipient, "-r", xb_recipient, "-r",
                            xa_recipient]), c, [xa],
            "A mix (key file B, X25519 for identity 2, X-Wing for identity B, X-Wing for "
            "identity A), opened by the last stanza: identity A's decapsulation of B's stanza "
            "gives ML-KEM's implicit-rejection secret, and that stanza's wrap fails.", 20000,
            check=chk)
    kit.add("c256-xwing-mix-several-secrets-len3.paraes",
            kit.enc(3, ["-r", xa_recipient, "-r", x2_recipient]), c,
            [key_ident(k256), xb, x2, xa], "Several secrets given (a key file, X-Wing identity B, X25519 identity 2, "
            "X-Wing identity A) for X-Wing A and X25519 2 stanzas: the first stanza opens with "
            "identity A.", 3, check=chk)
    kit.add("c256-py-xwing-len3.paraes", craft_simple(3, 256, [lambda d: stanza_xwing(
        xa_pub, d)]), c, [xa], "Made by the script from docs/FORMAT.md: an X-Wing stanza "
            "(pyca's ML-KEM-768 encapsulation, an X25519 share, the SHA3-256 combiner with its "
            "label, HKDF, AES-256-GCM-SIV), a 256-bit body by pyca.", 3, check=chk)
    kit.add("c256-py-xwing-zero-share-len5.paraes", craft_simple(5, 256, [
        lambda d: stanza_xwing(xa_pub, d, zero_share=True)]), c, [xa],
            "Made by the script: an X-Wing stanza whose X25519 share ct_X is 32 zero bytes (a "
            "low-order point), so ss_X is all zero; docs/FORMAT.md: unlike kind 3, it is not "
            "refused, it enters the combiner, and the wrap's tag decides (here it verifies).",
            5, check=chk)

    # no_match
    data = good[(256, CHUNK + 1)]
    kit.add("c256-xwing-nomatch-ct-m-byte.paraes", flip(data, XWING_ID_OFFSET + 500), c, [xa],
            "One bit of the ML-KEM-768 ciphertext ct_M changed: decapsulation gives the "
            "implicit-rejection secret (no error), so the wrap's tag fails.", "no_match",
            check=chk)
    kit.add("c256-xwing-nomatch-ct-x-byte.paraes", flip(data, XWING_ID_OFFSET + 1088 + 5), c,
            [xa], "One bit of the X25519 share ct_X changed: ss_X and the combiner's input "
            "change, so the wrap's tag fails.", "no_match", check=chk)
    kit.add("c256-xwing-nomatch-wrong-identity.paraes", good[(256, 1)], c, [xb],
            "An X-Wing identity (B) the file was not encrypted to.", "no_match", check=chk)

    # header
    kit.add("c256-py-xwing-header-short-stanza.paraes", craft_simple(10, 256, [
        lambda d: (4, stanza_xwing(xa_pub, d)[1][:1167])]), c, [xa],
            "Made by the script: the only slot holds an X-Wing stanza of 1,167 bytes, one less "
            "than 1,168: the slot does not parse, so no slot does.", "header", check=chk)


# --- the SSH sub-kit (tests/testkit/ssh/) ---------------------------------------------------

SMALL_PRIMES = [p for p in range(3, 2000) if all(p % q for q in range(2, int(p ** 0.5) + 1))]


def is_probable_prime(x, label):
    if any(x % p == 0 for p in SMALL_PRIMES):
        return x in SMALL_PRIMES
    d, r = x - 1, 0
    while d % 2 == 0:
        d, r = d // 2, r + 1
    for i in range(40):
        a = 2 + int.from_bytes(hashlib.sha256(label + i.to_bytes(4, "big")).digest(), "big") % (x - 3)
        y = pow(a, d, x)
        if y in (1, x - 1):
            continue
        for _ in range(r - 1):
            y = pow(y, 2, x)
            if y == x - 1:
                break
        else:
            return False
    return True


def fixed_prime(label, bits, e):
    """The first prime p >= a label's SHA-256 stream (top two bits set, odd) with gcd(e, p - 1)
    = 1: fixed keys, made again identically by every run."""
    stream = b"".join(hashlib.sha256(f"paraes testkit {label} {i}".encode()).digest()
                      for i in range(bits // 256 + 1))
    x = int.from_bytes(stream[:bits // 8], "big") | (3 << (bits - 2)) | 1
    while not (is_probable_prime(x, label.encode()) and (x - 1) % e):
        x += 2
    return x


def fixed_rsa_key(label, bits):
    e = 65537
    p, q = fixed_prime(label + " p", bits // 2, e), fixed_prime(label + " q", bits // 2, e)
    n, d = p * q, pow(e, -1, (p - 1) * (q - 1))
    assert n.bit_length() == bits
    return rsa.RSAPrivateNumbers(p, q, d, d % (p - 1), d % (q - 1), pow(q, -1, p),
                                 rsa.RSAPublicNumbers(e, n)).private_key()


def ssh_key_files(key, pem=False):
    """(identity dict, public key line) of a private key: OpenSSH's format, or PEM PKCS#1."""
    fmt = serialization.PrivateFormat.TraditionalOpenSSL if pem else serialization.PrivateFormat.OpenSSH
    text = key.private_bytes(serialization.Encoding.PEM, fmt,
                             serialization.NoEncryption()).decode()
    line = key.public_key().public_bytes(serialization.Encoding.OpenSSH,
                                         serialization.PublicFormat.OpenSSH).decode()
    return {"type": "ssh", "key": text}, line


def build_ssh(kit):
    ed_a = ed25519.Ed25519PrivateKey.from_private_bytes(secret("ssh ed25519 A", 32))
    ed_b = ed25519.Ed25519PrivateKey.from_private_bytes(secret("ssh ed25519 B", 32))
    rsa2048, rsa8192 = fixed_rsa_key("ssh rsa 2048", 2048), fixed_rsa_key("ssh rsa 8192", 8192)
    i_ed_a, ed_a_line = ssh_key_files(ed_a)
    i_ed_b, _ = ssh_key_files(ed_b)
    i_rsa2048, rsa2048_line = ssh_key_files(rsa2048)
    i_rsa8192, rsa8192_line = ssh_key_files(rsa8192, pem=True)
    ed_a_pk = ed_a.public_key().public_bytes_raw()
    for ident, line in ((i_ed_a, ed_a_line), (i_rsa2048, rsa2048_line), (i_rsa8192, rsa8192_line)):
        # paraes reads each private key as the public key the script says
        name = kit.secret_file("ssh.id", ident["key"].encode())
        said = kit.run("keygen", "-y", name).stdout.decode().strip()
        assert said == line, (said, line)
    keys = kit.secret_file("authorized_keys", (
        "# authorized_keys: options before the key type, comments after it\n"
        f'no-pty,from="10.0.0.0/8" {rsa2048_line} alice@example\n').encode())
    k256 = secret("ssh key 256", 32)
    f256 = kit.secret_file("k256", (k256.hex() + "\n").encode())
    c = "container"
    kit.add("s256-ssh-ed25519-len1000.paraes", kit.enc(1000, ["-r", ed_a_line + " me@host"]), c,
            [i_ed_a], "paraes enc -r with an OpenSSH public key line: one ssh-ed25519 stanza, "
            "opened with the OpenSSH private key.", 1000)
    kit.add("s256-ssh-rsa2048-len16385.paraes", kit.enc(CHUNK + 1, ["-R", keys]), c,
            [i_rsa2048], "paraes enc -R with an authorized_keys-style file (a comment line, "
            "options before the key type): one ssh-rsa stanza of a 2048-bit key (308 bytes).",
            CHUNK + 1)
    kit.add("s128-ssh-rsa8192-len100.paraes",
            kit.enc(100, ["-r", rsa8192_line, "--bits", "128"]), c, [i_rsa8192],
            "An 8192-bit RSA key (a 1,076-byte stanza), opened with its PEM PKCS#1 private key "
            "(ssh-keygen -m PEM's form); a 128-bit body.", 100)
    kit.add("s256-ssh-mix-len20000.paraes",
            kit.enc(20000, ["-k", f256, "-r", ed_a_line, "-r", rsa2048_line]), c,
            [i_ed_b, i_rsa2048], "A key file, ssh-ed25519 and ssh-rsa stanzas; a stranger's "
            "Ed25519 key opens nothing (its tag matches no stanza), the RSA key opens the last.",
            20000)
    kit.add("s256-py-ssh-ed25519-len3.paraes",
            craft_simple(3, 256, [lambda d: stanza_ssh_ed25519(ed_a_pk, d)]), c, [i_ed_a],
            "Made by the script from docs/FORMAT.md: an ssh-ed25519 stanza (the key converted "
            "to X25519 by (1 + y) / (1 - y), the tweak, the wrap key) with pyca's X25519.", 3)
    kit.add("s256-py-ssh-rsa-len0.paraes",
            craft_simple(0, 256, [lambda d: stanza_ssh_rsa(rsa2048.public_key(), d)]), c,
            [i_rsa2048], "Made by the script: an ssh-rsa stanza with pyca's RSA-OAEP (SHA-256, "
            "MGF1-SHA-256, paraes's label); an empty plaintext.", 0)
    kit.add("s256-ssh-nomatch-stranger.paraes", kit.enc(10, ["-r", ed_a_line]), c, [i_ed_b],
            "A stranger's Ed25519 key against an ssh-ed25519 stanza for key A.", "no_match")
    data = craft_simple(10, 256, [lambda d: stanza_ssh_ed25519(ed_a_pk, d)])
    kit.add("s256-ssh-nomatch-damaged-share.paraes", flip(data, 64 + 10 + 3 + 4 + 5), c,
            [i_ed_a], "A byte of the ephemeral share changed in an ssh-ed25519 stanza whose tag "
            "still names the key: the wrap's tag fails.", "no_match")
    data = craft_simple(10, 256, [lambda d: stanza_ssh_rsa(rsa2048.public_key(), d)])
    kit.add("s256-ssh-nomatch-age-label.paraes",
            data[:64 + 10 + 3 + 4] + rsa2048.public_key().encrypt(os.urandom(32), padding.OAEP(
                mgf=padding.MGF1(hashes.SHA256()), algorithm=hashes.SHA256(),
                label=b"age-encryption.org/v1/ssh-rsa")) + data[64 + 10 + 3 + 4 + 256:], c,
            [i_rsa2048], "An ssh-rsa stanza whose RSA-OAEP ciphertext carries age's label: "
            "OAEP refuses it, so no age stanza opens in paraes.", "no_match")
    short = craft_simple(10, 256, [lambda d: (6, os.urandom(4 + 255 + 48))])
    kit.add("s256-ssh-header-short-rsa-stanza.paraes", short, c, [i_rsa2048],
            "An ssh-rsa stanza of 307 bytes, one less than a 2048-bit key's: the slot does not "
            "parse (docs/FORMAT.md gives 308 to 2,100 bytes).", "header")


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    root = os.path.dirname(here)
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--paraes", default=os.path.join(root, "target/release/paraes"),
                        help="the paraes binary that writes the containers and messages")
    parser.add_argument("--out", default=os.path.join(root, "tests/testkit"),
                        help="the kit's folder (its .paraes and .cbl files and manifest.json "
                             "are replaced; README.md is kept)")
    parser.add_argument("--only", choices=["all", "main", "ssh", "xwing"], default="all",
                        help="which kit to write: the main one, the SSH sub-kit (OUT/ssh), both; "
                             "xwing: only the main kit's X-Wing entries, added to the kit "
                             "in OUT (its other files stay)")
    args = parser.parse_args()
    # BLAKE3 against docs/FORMAT.md's test vector (D = 00 01 .. 1f) before anything else.
    d = bytes(range(32))
    assert blake3_derive_key("paraes 2026-11 container v2 header MAC key", d).hex() == (
        "739a185d7eff6309297da7a4b9f5c97e730961b8e77b5a087a20e3262c319824")
    assert blake3_derive_key("paraes 2026-11 container v2 body AES key", d).hex() == (
        "081e102d99d9b1742b57e90bb22666953993af2295b8b5656c92808affc9f214")
    paraes = os.path.abspath(args.paraes)
    kits = []
    with tempfile.TemporaryDirectory(prefix="paraes-testkit.") as work:
        if args.only in ("all", "main"):
            kit = Kit(paraes, os.path.abspath(args.out), work)
            build(kit)
            kit.write()
            kits.append(kit)
        if args.only == "xwing":
            kit = Kit(paraes, os.path.abspath(args.out), work, append=True)
            build_xwing(kit)
            kit.write()
            kits.append(kit)
        if args.only in ("all", "ssh"):
            kit = Kit(paraes, os.path.join(os.path.abspath(args.out), "ssh"), work)
            build_ssh(kit)
            kit.write()
            kits.append(kit)
    for kit in kits:
        report(kit)


def report(kit):
    counts = {}
    for e in kit.entries:
        what = (e["kind"], e.get("failure", "ok"))
        counts[what] = counts.get(what, 0) + 1
    total = sum(len(v) for v in kit.files.values())
    print(f"{len(kit.entries)} files, {total} bytes, in {kit.out}:")
    for (kind, what), n in sorted(counts.items()):
        print(f"  {kind:9} {what:10} {n}")


if __name__ == "__main__":
    main()
