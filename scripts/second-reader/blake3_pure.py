"""BLAKE3 in pure Python, written from the BLAKE3 specification
(O'Connor, Aumasson, Neves, Wilcox-O'Hearn, 2020), for the second paraes reader.

Only what the reader needs: keyed_hash(key, data, length) and
derive_key(context, material, length), both with extendable output.
Slow (pure Python), but the reader only hashes headers (at most ~2 MiB).
"""

from __future__ import annotations

import struct

_M32 = 0xFFFFFFFF
_IV = (
    0x6A09E667, 0xBB67AE85, 0x3C6EF372, 0xA54FF53A,
    0x510E527F, 0x9B05688C, 0x1F83D9AB, 0x5BE0CD19,
)
_PERM = (2, 6, 3, 10, 7, 0, 4, 13, 1, 11, 12, 5, 9, 14, 15, 8)

CHUNK_START = 1 << 0
CHUNK_END = 1 << 1
PARENT = 1 << 2
ROOT = 1 << 3
KEYED_HASH = 1 << 4
DERIVE_KEY_CONTEXT = 1 << 5
DERIVE_KEY_MATERIAL = 1 << 6

BLOCK_LEN = 64
CHUNK_LEN = 1024


def _g(s, a, b, c, d, mx, my):
    s[a] = (s[a] + s[b] + mx) & _M32
    x = s[d] ^ s[a]
    s[d] = ((x >> 16) | (x << 16)) & _M32
    s[c] = (s[c] + s[d]) & _M32
    x = s[b] ^ s[c]
    s[b] = ((x >> 12) | (x << 20)) & _M32
    s[a] = (s[a] + s[b] + my) & _M32
    x = s[d] ^ s[a]
    s[d] = ((x >> 8) | (x << 24)) & _M32
    s[c] = (s[c] + s[d]) & _M32
    x = s[b] ^ s[c]
    s[b] = ((x >> 7) | (x << 25)) & _M32


def _compress(cv, m, counter, block_len, flags):
    s = list(cv[:8]) + list(_IV[:4]) + [
        counter & _M32, (counter >> 32) & _M32, block_len, flags,
    ]
    m = list(m)
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
            m = [m[i] for i in _PERM]
    for i in range(8):
        s[i] ^= s[i + 8]
        s[i + 8] ^= cv[i]
    return s


def _words(block: bytes):
    return list(struct.unpack("<16I", block.ljust(BLOCK_LEN, b"\0")))


class _Output:
    def __init__(self, cv, block_words, counter, block_len, flags):
        self.cv, self.bw, self.counter = cv, block_words, counter
        self.block_len, self.flags = block_len, flags

    def chaining_value(self):
        return _compress(self.cv, self.bw, self.counter, self.block_len, self.flags)[:8]

    def root_bytes(self, length: int) -> bytes:
        out = bytearray()
        block_counter = 0
        while len(out) < length:
            w = _compress(self.cv, self.bw, block_counter, self.block_len, self.flags | ROOT)
            out += struct.pack("<16I", *w)
            block_counter += 1
        return bytes(out[:length])


class _ChunkState:
    def __init__(self, key_words, chunk_counter, flags):
        self.cv = list(key_words)
        self.chunk_counter = chunk_counter
        self.block = b""
        self.blocks_compressed = 0
        self.flags = flags

    def len(self):
        return BLOCK_LEN * self.blocks_compressed + len(self.block)

    def _start_flag(self):
        return CHUNK_START if self.blocks_compressed == 0 else 0

    def update(self, data: bytes):
        while data:
            if len(self.block) == BLOCK_LEN:
                self.cv = _compress(self.cv, _words(self.block), self.chunk_counter,
                                    BLOCK_LEN, self.flags | self._start_flag())[:8]
                self.blocks_compressed += 1
                self.block = b""
            take = min(BLOCK_LEN - len(self.block), len(data))
            self.block += data[:take]
            data = data[take:]

    def output(self):
        return _Output(self.cv, _words(self.block), self.chunk_counter, len(self.block),
                       self.flags | self._start_flag() | CHUNK_END)


class _Hasher:
    def __init__(self, key_words, flags):
        self.key = list(key_words)
        self.flags = flags
        self.chunk = _ChunkState(self.key, 0, flags)
        self.stack = []

    def update(self, data: bytes):
        data = bytes(data)
        while data:
            if self.chunk.len() == CHUNK_LEN:
                cv = self.chunk.output().chaining_value()
                total = self.chunk.chunk_counter + 1
                while total & 1 == 0:
                    cv = _Output(self.key, self.stack.pop() + cv, 0, BLOCK_LEN,
                                 PARENT | self.flags).chaining_value()
                    total >>= 1
                self.stack.append(cv)
                self.chunk = _ChunkState(self.key, self.chunk.chunk_counter + 1, self.flags)
            take = min(CHUNK_LEN - self.chunk.len(), len(data))
            self.chunk.update(data[:take])
            data = data[take:]

    def finalize(self, length: int = 32) -> bytes:
        out = self.chunk.output()
        for left in reversed(self.stack):
            out = _Output(self.key, left + out.chaining_value(), 0, BLOCK_LEN,
                          PARENT | self.flags)
        return out.root_bytes(length)


def hash(data: bytes, length: int = 32) -> bytes:  # noqa: A001 (mirrors the spec's name)
    h = _Hasher(_IV, 0)
    h.update(data)
    return h.finalize(length)


def keyed_hash(key: bytes, data: bytes, length: int = 32) -> bytes:
    if len(key) != 32:
        raise ValueError("BLAKE3 keyed_hash needs a 32-byte key")
    h = _Hasher(struct.unpack("<8I", key), KEYED_HASH)
    h.update(data)
    return h.finalize(length)


def derive_key(context: str | bytes, material: bytes, length: int = 32) -> bytes:
    if isinstance(context, str):
        context = context.encode("utf-8")
    ch = _Hasher(_IV, DERIVE_KEY_CONTEXT)
    ch.update(context)
    context_key = ch.finalize(32)
    h = _Hasher(struct.unpack("<8I", context_key), DERIVE_KEY_MATERIAL)
    h.update(material)
    return h.finalize(length)
