"""A drop-in for pyaes 1.6.1 whose AES runs on paraes's engine.

``import paraes.pyaes as pyaes`` and code written for pyaes runs unchanged, with the same
bytes out and the same behaviour for everything pyaes offers: ``AES`` (``encrypt`` and
``decrypt`` return lists of ints), ``AESModeOfOperationCTR`` with ``Counter`` (mutated in place,
shareable between modes, subclassable; keystream left over from a call is used by the next),
``AESModeOfOperationECB`` (exactly 16 bytes, ``ValueError`` otherwise), ``CBC``, ``CFB``,
``OFB``, ``Encrypter``/``Decrypter``, ``encrypt_stream``/``decrypt_stream``, the padding
constants, and ``str`` input where pyaes takes it. CBC, CFB and OFB run pyaes's own code over
single blocks of the engine; CTR with the exact ``Counter`` type and ECB on ``bytes`` run whole
calls natively, and a ``Counter`` subclass (or any object with ``value`` and ``increment()``)
gets pyaes's semantics: ``value`` read and ``increment()`` called once per keystream block.

Differences, all deliberate: bytes-like inputs that pyaes refuses with a ``TypeError``
(``bytearray``, ``memoryview``) are accepted as bytes; ``AES`` does not expose pyaes's lookup
tables or round-key lists (``_Ke``, ``_Kd``); and the AES itself is paraes's (AES-NI/VAES or a
constant-time bitsliced fallback) rather than pyaes's table-based one, which leaks timing.

The mode classes, the block feeder and the padding helpers follow pyaes 1.6.1
(https://github.com/ricmoo/pyaes), Copyright (c) 2014 Richard Moore, under the MIT License:

    Permission is hereby granted, free of charge, to any person obtaining a copy of this
    software and associated documentation files (the "Software"), to deal in the Software
    without restriction, including without limitation the rights to use, copy, modify, merge,
    publish, distribute, sublicense, and/or sell copies of the Software, and to permit persons
    to whom the Software is furnished to do so, subject to the following conditions: The above
    copyright notice and this permission notice shall be included in all copies or substantial
    portions of the Software. THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND.
"""

import struct

from ._paraes import BlockCipher as _BlockCipher
from ._paraes import pyaes_ctr as _pyaes_ctr
from ._paraes import xor as _xor

VERSION = [1, 3, 0]

__all__ = [
    "AES",
    "AESModeOfOperationCTR",
    "AESModeOfOperationCBC",
    "AESModeOfOperationCFB",
    "AESModeOfOperationECB",
    "AESModeOfOperationOFB",
    "AESModesOfOperation",
    "Counter",
    "decrypt_stream",
    "Decrypter",
    "encrypt_stream",
    "Encrypter",
    "PADDING_NONE",
    "PADDING_DEFAULT",
]

_BYTES_LIKE = (bytearray, memoryview)


def _compact_word(word):
    return (word[0] << 24) | (word[1] << 16) | (word[2] << 8) | word[3]


def _string_to_bytes(text):
    if isinstance(text, bytes):
        return text
    if isinstance(text, _BYTES_LIKE):
        return bytes(text)
    return [ord(c) for c in text]


def _bytes_to_string(binary):
    return bytes(binary)


def _concat_list(a, b):
    return a + bytes(b)


def _block(value):
    """The 16 bytes pyaes's AES would encrypt for ``value`` (bytes, a list of ints, ...).

    pyaes packs each 4 items into a word with shifts and ORs and only ever uses the word's low
    32 bits, so items outside 0..255 (or negative) give what they give there.
    """
    if type(value) is bytes:
        return value
    try:
        return bytes(value)
    except (TypeError, ValueError):
        pass
    words = [_compact_word(value[4 * i:4 * i + 4]) & 0xFFFFFFFF for i in range(4)]
    return struct.pack(">4I", *words)


class AES(object):
    """Encapsulates the AES block cipher.

    You generally should not need this. Use the AESModeOfOperation classes
    below instead."""

    # Number of rounds by keysize
    number_of_rounds = {16: 10, 24: 12, 32: 14}

    def __init__(self, key):
        if len(key) not in (16, 24, 32):
            raise ValueError("Invalid key size")
        if isinstance(key, str):
            raise TypeError("a bytes-like object is required, not 'str'")
        self._cipher = _BlockCipher(key)

    def encrypt(self, plaintext):
        "Encrypt a block of plain text using the AES block cipher."
        if len(plaintext) != 16:
            raise ValueError("wrong block length")
        return list(self._cipher.encrypt_block(_block(plaintext)))

    def decrypt(self, ciphertext):
        "Decrypt a block of cipher text using the AES block cipher."
        if len(ciphertext) != 16:
            raise ValueError("wrong block length")
        return list(self._cipher.decrypt_block(_block(ciphertext)))


class Counter(object):
    """A counter object for the Counter (CTR) mode of operation.

    To create a custom counter, you can usually just override the
    increment method."""

    def __init__(self, initial_value=1):
        # Convert the value into an array of bytes long
        if type(initial_value) is int:
            self._counter = list((initial_value % (1 << 128)).to_bytes(16, "big"))
        else:
            self._counter = [((initial_value >> i) % 256) for i in range(128 - 8, -1, -8)]

    value = property(lambda s: s._counter)

    def increment(self):
        """Increment the counter (overflow rolls back to 0)."""
        for i in range(len(self._counter) - 1, -1, -1):
            self._counter[i] += 1

            if self._counter[i] < 256:
                break

            # Carry the one
            self._counter[i] = 0

        # Overflow
        else:
            self._counter = [0] * len(self._counter)


class AESBlockModeOfOperation(object):
    """Super-class for AES modes of operation that require blocks."""

    def __init__(self, key):
        self._aes = AES(key)

    def decrypt(self, ciphertext):
        raise Exception("not implemented")

    def encrypt(self, plaintext):
        raise Exception("not implemented")


class AESStreamModeOfOperation(AESBlockModeOfOperation):
    """Super-class for AES modes of operation that are stream-ciphers."""


class AESSegmentModeOfOperation(AESStreamModeOfOperation):
    """Super-class for AES modes of operation that segment data."""

    segment_bytes = 16


class AESModeOfOperationECB(AESBlockModeOfOperation):
    """AES Electronic Codebook Mode of Operation.

    o Block-cipher, so data must be padded to 16 byte boundaries

    Security Notes:
    o This mode is not recommended
    o Any two identical blocks produce identical encrypted values,
      exposing data patterns. (See the image of Tux on wikipedia)"""

    name = "Electronic Codebook (ECB)"

    def encrypt(self, plaintext):
        if len(plaintext) != 16:
            raise ValueError("plaintext block must be 16 bytes")
        if type(plaintext) is bytes:
            return self._aes._cipher.encrypt_block(plaintext)
        plaintext = _string_to_bytes(plaintext)
        return _bytes_to_string(self._aes.encrypt(plaintext))

    def decrypt(self, ciphertext):
        if len(ciphertext) != 16:
            raise ValueError("ciphertext block must be 16 bytes")
        if type(ciphertext) is bytes:
            return self._aes._cipher.decrypt_block(ciphertext)
        ciphertext = _string_to_bytes(ciphertext)
        return _bytes_to_string(self._aes.decrypt(ciphertext))


class AESModeOfOperationCBC(AESBlockModeOfOperation):
    """AES Cipher-Block Chaining Mode of Operation.

    o The Initialization Vector (IV)
    o Block-cipher, so data must be padded to 16 byte boundaries"""

    name = "Cipher-Block Chaining (CBC)"

    def __init__(self, key, iv=None):
        if iv is None:
            self._last_cipherblock = [0] * 16
        elif len(iv) != 16:
            raise ValueError("initialization vector must be 16 bytes")
        else:
            self._last_cipherblock = _string_to_bytes(iv)

        AESBlockModeOfOperation.__init__(self, key)

    def encrypt(self, plaintext):
        if len(plaintext) != 16:
            raise ValueError("plaintext block must be 16 bytes")

        plaintext = _string_to_bytes(plaintext)
        precipherblock = [(p ^ l) for (p, l) in zip(plaintext, self._last_cipherblock)]
        self._last_cipherblock = self._aes.encrypt(precipherblock)

        return _bytes_to_string(self._last_cipherblock)

    def decrypt(self, ciphertext):
        if len(ciphertext) != 16:
            raise ValueError("ciphertext block must be 16 bytes")

        cipherblock = _string_to_bytes(ciphertext)
        plaintext = [(p ^ l) for (p, l) in zip(self._aes.decrypt(cipherblock), self._last_cipherblock)]
        self._last_cipherblock = cipherblock

        return _bytes_to_string(plaintext)


class AESModeOfOperationCFB(AESSegmentModeOfOperation):
    """AES Cipher Feedback Mode of Operation.

    o A stream-cipher, so input does not need to be padded to blocks,
      but does need to be padded to segment_size"""

    name = "Cipher Feedback (CFB)"

    def __init__(self, key, iv, segment_size=1):
        if segment_size == 0:
            segment_size = 1

        if iv is None:
            self._shift_register = [0] * 16
        elif len(iv) != 16:
            raise ValueError("initialization vector must be 16 bytes")
        else:
            self._shift_register = _string_to_bytes(iv)

        self._segment_bytes = segment_size

        AESBlockModeOfOperation.__init__(self, key)

    segment_bytes = property(lambda s: s._segment_bytes)

    def encrypt(self, plaintext):
        if len(plaintext) % self._segment_bytes != 0:
            raise ValueError("plaintext block must be a multiple of segment_size")

        plaintext = _string_to_bytes(plaintext)

        # Break block into segments
        encrypted = []
        for i in range(0, len(plaintext), self._segment_bytes):
            plaintext_segment = plaintext[i: i + self._segment_bytes]
            xor_segment = self._aes.encrypt(self._shift_register)[:len(plaintext_segment)]
            cipher_segment = [(p ^ x) for (p, x) in zip(plaintext_segment, xor_segment)]

            # Shift the top bits out and the ciphertext in
            self._shift_register = _concat_list(self._shift_register[len(cipher_segment):], cipher_segment)

            encrypted.extend(cipher_segment)

        return _bytes_to_string(encrypted)

    def decrypt(self, ciphertext):
        if len(ciphertext) % self._segment_bytes != 0:
            raise ValueError("ciphertext block must be a multiple of segment_size")

        ciphertext = _string_to_bytes(ciphertext)

        # Break block into segments
        decrypted = []
        for i in range(0, len(ciphertext), self._segment_bytes):
            cipher_segment = ciphertext[i: i + self._segment_bytes]
            xor_segment = self._aes.encrypt(self._shift_register)[:len(cipher_segment)]
            plaintext_segment = [(p ^ x) for (p, x) in zip(cipher_segment, xor_segment)]

            # Shift the top bits out and the ciphertext in
            self._shift_register = _concat_list(self._shift_register[len(cipher_segment):], cipher_segment)

            decrypted.extend(plaintext_segment)

        return _bytes_to_string(decrypted)


class AESModeOfOperationOFB(AESStreamModeOfOperation):
    """AES Output Feedback Mode of Operation.

    o A stream-cipher, so input does not need to be padded to blocks,
      allowing arbitrary length data."""

    name = "Output Feedback (OFB)"

    def __init__(self, key, iv=None):
        if iv is None:
            self._last_precipherblock = [0] * 16
        elif len(iv) != 16:
            raise ValueError("initialization vector must be 16 bytes")
        else:
            self._last_precipherblock = _string_to_bytes(iv)

        self._remaining_block = []

        AESBlockModeOfOperation.__init__(self, key)

    def encrypt(self, plaintext):
        encrypted = []
        for p in _string_to_bytes(plaintext):
            if len(self._remaining_block) == 0:
                self._remaining_block = self._aes.encrypt(self._last_precipherblock)
                self._last_precipherblock = []
            precipherbyte = self._remaining_block.pop(0)
            self._last_precipherblock.append(precipherbyte)
            cipherbyte = p ^ precipherbyte
            encrypted.append(cipherbyte)

        return _bytes_to_string(encrypted)

    def decrypt(self, ciphertext):
        # AES-OFB is symetric
        return self.encrypt(ciphertext)


class AESModeOfOperationCTR(AESStreamModeOfOperation):
    """AES Counter Mode of Operation.

    o A stream-cipher, so input does not need to be padded to blocks,
      allowing arbitrary length data.
    o The counter must be the same size as the key size (ie. len(key))
    o Each message block is associated with a counter value which must be
      unique for ALL messages with the same key. Otherwise security may be
      compromised."""

    name = "Counter (CTR)"

    def __init__(self, key, counter=None):
        AESBlockModeOfOperation.__init__(self, key)

        if counter is None:
            counter = Counter()

        self._counter = counter
        # The keystream generated but not used yet (pyaes keeps it as a list of ints).
        self._remaining_counter = b""

    def encrypt(self, plaintext):
        kind = type(plaintext)
        if kind is not bytes:
            if kind is str:
                try:
                    plaintext = plaintext.encode("latin-1")
                except UnicodeEncodeError:
                    return self._encrypt_characters(plaintext)
            elif not isinstance(plaintext, _BYTES_LIKE):
                return self._encrypt_characters(plaintext)
        counter = self._counter
        if type(counter) is Counter:
            done = _pyaes_ctr(self._aes._cipher, counter, self._remaining_counter, plaintext)
            if done is not None:
                out, self._remaining_counter = done
                return out
        if type(plaintext) is not bytes:
            plaintext = bytes(memoryview(plaintext))
        self._extend_keystream(len(plaintext))
        encrypted = _xor(plaintext, self._remaining_counter)
        self._remaining_counter = self._remaining_counter[len(encrypted):]
        return encrypted

    def _extend_keystream(self, length):
        # pyaes: one block per counter value, then increment(), until the keystream covers it
        while len(self._remaining_counter) < length:
            self._remaining_counter += bytes(self._aes.encrypt(self._counter.value))
            self._counter.increment()

    def _encrypt_characters(self, plaintext):
        # pyaes's own steps for input that is not bytes: the keystream is made first, so the
        # counter moves on even when the characters then turn out not to fit in bytes
        self._extend_keystream(len(plaintext))
        plaintext = [ord(c) for c in plaintext]
        encrypted = [(p ^ c) for (p, c) in zip(plaintext, self._remaining_counter)]
        self._remaining_counter = self._remaining_counter[len(encrypted):]
        return bytes(encrypted)

    def decrypt(self, crypttext):
        # AES-CTR is symetric
        return self.encrypt(crypttext)


# Simple lookup table for each mode
AESModesOfOperation = dict(
    ctr=AESModeOfOperationCTR,
    cbc=AESModeOfOperationCBC,
    cfb=AESModeOfOperationCFB,
    ecb=AESModeOfOperationECB,
    ofb=AESModeOfOperationOFB,
)


# pyaes's util.py


def to_bufferable(binary):
    if isinstance(binary, bytes):
        return binary
    return bytes(ord(b) for b in binary)


def _get_byte(c):
    return c


def append_PKCS7_padding(data):
    pad = 16 - (len(data) % 16)
    return data + to_bufferable(chr(pad) * pad)


def strip_PKCS7_padding(data):
    if len(data) % 16 != 0:
        raise ValueError("invalid length")

    pad = _get_byte(data[-1])

    if pad > 16:
        raise ValueError("invalid padding byte")

    return data[:-pad]


# pyaes's blockfeeder.py

PADDING_NONE = "none"
PADDING_DEFAULT = "default"


# ECB and CBC are block-only ciphers

def _block_can_consume(self, size):
    if size >= 16:
        return 16
    return 0


# After padding, we may have more than one block
def _block_final_encrypt(self, data, padding=PADDING_DEFAULT):
    if padding == PADDING_DEFAULT:
        data = append_PKCS7_padding(data)

    elif padding == PADDING_NONE:
        if len(data) != 16:
            raise Exception("invalid data length for final block")
    else:
        raise Exception("invalid padding option")

    if len(data) == 32:
        return self.encrypt(data[:16]) + self.encrypt(data[16:])

    return self.encrypt(data)


def _block_final_decrypt(self, data, padding=PADDING_DEFAULT):
    if padding == PADDING_DEFAULT:
        return strip_PKCS7_padding(self.decrypt(data))

    if padding == PADDING_NONE:
        if len(data) != 16:
            raise Exception("invalid data length for final block")
        return self.decrypt(data)

    raise Exception("invalid padding option")


AESBlockModeOfOperation._can_consume = _block_can_consume
AESBlockModeOfOperation._final_encrypt = _block_final_encrypt
AESBlockModeOfOperation._final_decrypt = _block_final_decrypt


# CFB is a segment cipher

def _segment_can_consume(self, size):
    return self.segment_bytes * int(size // self.segment_bytes)


# CFB can handle a non-segment-sized block at the end using the remaining cipherblock
def _segment_final_encrypt(self, data, padding=PADDING_DEFAULT):
    if padding != PADDING_DEFAULT:
        raise Exception("invalid padding option")

    faux_padding = (chr(0) * (self.segment_bytes - (len(data) % self.segment_bytes)))
    padded = data + to_bufferable(faux_padding)
    return self.encrypt(padded)[:len(data)]


# CFB can handle a non-segment-sized block at the end using the remaining cipherblock
def _segment_final_decrypt(self, data, padding=PADDING_DEFAULT):
    if padding != PADDING_DEFAULT:
        raise Exception("invalid padding option")

    faux_padding = (chr(0) * (self.segment_bytes - (len(data) % self.segment_bytes)))
    padded = data + to_bufferable(faux_padding)
    return self.decrypt(padded)[:len(data)]


AESSegmentModeOfOperation._can_consume = _segment_can_consume
AESSegmentModeOfOperation._final_encrypt = _segment_final_encrypt
AESSegmentModeOfOperation._final_decrypt = _segment_final_decrypt


# OFB and CTR are stream ciphers

def _stream_can_consume(self, size):
    return size


def _stream_final_encrypt(self, data, padding=PADDING_DEFAULT):
    if padding not in [PADDING_NONE, PADDING_DEFAULT]:
        raise Exception("invalid padding option")

    return self.encrypt(data)


def _stream_final_decrypt(self, data, padding=PADDING_DEFAULT):
    if padding not in [PADDING_NONE, PADDING_DEFAULT]:
        raise Exception("invalid padding option")

    return self.decrypt(data)


AESStreamModeOfOperation._can_consume = _stream_can_consume
AESStreamModeOfOperation._final_encrypt = _stream_final_encrypt
AESStreamModeOfOperation._final_decrypt = _stream_final_decrypt


class BlockFeeder(object):
    """The super-class for objects to handle chunking a stream of bytes
    into the appropriate block size for the underlying mode of operation
    and applying (or stripping) padding, as necessary."""

    def __init__(self, mode, feed, final, padding=PADDING_DEFAULT):
        self._mode = mode
        self._feed = feed
        self._final = final
        self._buffer = to_bufferable("")
        self._padding = padding

    def feed(self, data=None):
        """Provide bytes to encrypt (or decrypt), returning any bytes
        possible from this or any previous calls to feed.

        Call with None or an empty string to flush the mode of
        operation and return any final bytes; no further calls to
        feed may be made."""

        if self._buffer is None:
            raise ValueError("already finished feeder")

        # Finalize; process the spare bytes we were keeping
        if data is None:
            result = self._final(self._buffer, self._padding)
            self._buffer = None
            return result

        self._buffer += to_bufferable(data)

        # We keep 16 bytes around so we can determine padding
        result = to_bufferable("")
        while len(self._buffer) > 16:
            can_consume = self._mode._can_consume(len(self._buffer) - 16)
            if can_consume == 0:
                break
            result += self._feed(self._buffer[:can_consume])
            self._buffer = self._buffer[can_consume:]

        return result


class Encrypter(BlockFeeder):
    "Accepts bytes of plaintext and returns encrypted ciphertext."

    def __init__(self, mode, padding=PADDING_DEFAULT):
        BlockFeeder.__init__(self, mode, mode.encrypt, mode._final_encrypt, padding)


class Decrypter(BlockFeeder):
    "Accepts bytes of ciphertext and returns decrypted plaintext."

    def __init__(self, mode, padding=PADDING_DEFAULT):
        BlockFeeder.__init__(self, mode, mode.decrypt, mode._final_decrypt, padding)


# 8kb blocks
BLOCK_SIZE = (1 << 13)


def _feed_stream(feeder, in_stream, out_stream, block_size=BLOCK_SIZE):
    "Uses feeder to read and convert from in_stream and write to out_stream."

    while True:
        chunk = in_stream.read(block_size)
        if not chunk:
            break
        converted = feeder.feed(chunk)
        out_stream.write(converted)
    converted = feeder.feed()
    out_stream.write(converted)


def encrypt_stream(mode, in_stream, out_stream, block_size=BLOCK_SIZE, padding=PADDING_DEFAULT):
    "Encrypts a stream of bytes from in_stream to out_stream using mode."

    encrypter = Encrypter(mode, padding=padding)
    _feed_stream(encrypter, in_stream, out_stream, block_size)


def decrypt_stream(mode, in_stream, out_stream, block_size=BLOCK_SIZE, padding=PADDING_DEFAULT):
    "Decrypts a stream of bytes from in_stream to out_stream using mode."

    decrypter = Decrypter(mode, padding=padding)
    _feed_stream(decrypter, in_stream, out_stream, block_size)
