"""The raw primitives against pyca/cryptography: AES-CTR and AES-ECB over every kind of buffer,
in place and not, on one thread and on all of them; bare Cobblestone messages both ways."""

import sys
import threading
import time

import numpy as np
import pytest
from cryptography.cobblestone import (
    Cobblestone128Decryptor,
    Cobblestone128Encryptor,
    Cobblestone256Decryptor,
    Cobblestone256Encryptor,
)
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

import paraes

from conftest import seeded

# Sizes around block, slice and thread thresholds (the engine spreads >= 512 KiB over threads).
SIZES = (0, 1, 15, 16, 17, 1000, 16384, 23000, (512 << 10) - 1, (512 << 10) + 17, 3 << 20)


def pyca_ctr(key, iv, data):
    return Cipher(algorithms.AES(key), modes.CTR(iv)).encryptor().update(data)


def pyca_ecb(key, data, decrypt=False):
    cipher = Cipher(algorithms.AES(key), modes.ECB())
    op = cipher.decryptor() if decrypt else cipher.encryptor()
    return op.update(data) + op.finalize()


@pytest.mark.parametrize("key_len", [16, 24, 32])
def test_ctr_matches_pyca(key_len):
    key = seeded(key_len, key_len)
    for iv in (bytes(16), seeded(16, 2), b"\xff" * 16, b"\x00" * 8 + b"\xff" * 8):
        for n in SIZES:
            data = seeded(n, n)
            assert paraes.aes_ctr(key, iv, data) == pyca_ctr(key, iv, data), (iv, n)


def test_ctr_from_any_offset_matches_the_whole_stream():
    key, iv = seeded(32, 1), seeded(16, 3)
    data = seeded(100_000, 4)
    whole = pyca_ctr(key, iv, data)
    for offset in (1, 15, 16, 17, 4095, 65536, 99_999):
        assert paraes.aes_ctr(key, iv, data[offset:], offset=offset) == whole[offset:]


@pytest.mark.parametrize("key_len", [16, 24, 32])
def test_ecb_matches_pyca(key_len):
    key = seeded(key_len, key_len + 1)
    for n in (0, 16, 32, 16 * 1000, 1 << 20):
        data = seeded(n, n + 1)
        encrypted = paraes.aes_ecb_encrypt(key, data)
        assert encrypted == pyca_ecb(key, data)
        assert paraes.aes_ecb_decrypt(key, encrypted) == data
    with pytest.raises(ValueError, match="whole 16-byte blocks"):
        paraes.aes_ecb_encrypt(key, b"x" * 17)


def test_every_kind_of_buffer():
    key, iv = seeded(16, 5), seeded(16, 6)
    data = seeded(4096, 7)
    expected = pyca_ctr(key, iv, data)
    for view in (data, bytearray(data), memoryview(data), memoryview(bytearray(data)),
                 np.frombuffer(data, dtype=np.uint8), np.frombuffer(data, dtype=np.float64),
                 np.frombuffer(data, dtype=np.uint32).reshape(32, 32)):
        assert paraes.aes_ctr(key, iv, view) == expected, type(view)
    # In place: bytearray, writable memoryview (of a slice), numpy arrays of any dtype.
    ba = bytearray(data)
    paraes.aes_ctr_inplace(key, iv, ba)
    assert ba == expected
    big = bytearray(b"?" * 100 + data + b"!" * 100)
    paraes.aes_ctr_inplace(key, iv, memoryview(big)[100:-100])
    assert big == b"?" * 100 + expected + b"!" * 100
    for dtype in (np.uint8, np.int16, np.float64):
        arr = np.frombuffer(bytearray(data), dtype=dtype).reshape(-1, 8)
        paraes.aes_ctr_inplace(key, iv, arr)
        assert arr.tobytes() == expected
    arr = np.frombuffer(bytearray(data), dtype=np.uint8).copy()
    paraes.aes_ecb_encrypt_inplace(key, arr)
    assert arr.tobytes() == pyca_ecb(key, data)
    paraes.aes_ecb_decrypt_inplace(key, arr)
    assert arr.tobytes() == data


def test_refusals_say_what_to_do():
    key, iv = bytes(16), bytes(16)
    with pytest.raises(TypeError, match="read-only"):
        paraes.aes_ctr_inplace(key, iv, b"immutable")
    with pytest.raises(TypeError, match="read-only"):
        paraes.aes_ctr_inplace(key, iv, memoryview(bytearray(16)).toreadonly())
    with pytest.raises(ValueError, match="contiguous"):
        paraes.aes_ctr(key, iv, np.zeros(64, dtype=np.uint8)[::2])
    with pytest.raises(TypeError, match="bytes-like"):
        paraes.aes_ctr(key, iv, "a str")
    with pytest.raises(ValueError, match="16, 24 or 32 bytes"):
        paraes.aes_ctr(b"short", iv, b"x")
    with pytest.raises(ValueError, match="16 bytes"):
        paraes.aes_ctr(key, b"short", b"x")


def test_in_place_holds_the_buffer_for_the_whole_call():
    """While the GIL is released, another thread may run, but cannot resize (and so free or move)
    the buffer being encrypted: bytearray refuses with BufferError, and the result is exact."""
    key, iv = seeded(32, 8), seeded(16, 9)
    data = seeded(96 << 20, 10)
    expected = pyca_ctr(key, iv, data)
    outcomes = []
    for _ in range(5):
        buf = bytearray(data)
        go = threading.Event()
        seen = []

        def resize():
            go.wait()
            try:
                buf.append(0)
                seen.append("resized")
            except BufferError:
                seen.append("refused")

        thread = threading.Thread(target=resize)
        thread.start()
        go.set()
        paraes.aes_ctr_inplace(key, iv, buf)
        thread.join()
        outcomes.append(seen[0])
        if seen[0] == "refused":
            assert buf == expected
            break
        # The other thread only ran after the call: the bytes are still exact.
        assert buf[:-1] == expected
    assert "refused" in outcomes, f"the call never overlapped the other thread: {outcomes}"


def test_work_releases_the_gil():
    """Another Python thread counts in a tight loop while aes_ctr runs, and the count moves
    during the call. The switch interval is set far longer than the test, so the interpreter
    never takes the GIL from the calling thread on its own: between the two reads of the count
    around the call, the counting thread can run only if the call released the GIL. (The
    counter hands the GIL back now and then by sleeping, or the call could not return.)"""
    key, iv = seeded(32, 8), seeded(16, 9)
    data = seeded(64 << 20, 11)
    count = [0]
    stop = threading.Event()

    def tick():
        while not stop.is_set():
            count[0] += 1
            if count[0] % 10_000 == 0:
                time.sleep(0.0001)

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1000)
    thread = threading.Thread(target=tick)
    thread.start()
    try:
        while count[0] == 0:
            time.sleep(0.001)
        during = []
        for _ in range(3):
            before = count[0]
            paraes.aes_ctr(key, iv, data)
            during.append(count[0] - before)
    finally:
        stop.set()
        thread.join()
        sys.setswitchinterval(interval)
    assert sum(during) > 0, f"the other thread made no progress during the calls: {during}"


MESSAGE_SIZES = (0, 1, 100, 16383, 16384, 16385, 50_000, (1 << 20) - 1, (1 << 20) + 16384, 3_000_001)


@pytest.mark.parametrize("bits", [128, 256])
def test_messages_match_pyca_both_ways(bits):
    encryptor = Cobblestone128Encryptor if bits == 128 else Cobblestone256Encryptor
    decryptor = Cobblestone128Decryptor if bits == 128 else Cobblestone256Decryptor
    key = seeded(bits // 8, bits)
    for n in MESSAGE_SIZES:
        data = seeded(n, n + 3)
        context = b"ctx %d" % n if n % 2 else b""
        sealed = paraes.seal_message(key, data, context=context)
        d = decryptor(key, context)
        assert d.update(sealed) + d.finalize() == data, n
        e = encryptor(key, context)
        theirs = e.update(data) + e.finalize()
        assert paraes.open_message(key, theirs, context=context) == data, n
        assert paraes.open_message(key, bytearray(theirs), context=memoryview(context)) == data


def test_messages_refuse_wrong_keys_and_damage():
    key = seeded(32, 1)
    for n in (100, 2_000_000):
        sealed = paraes.seal_message(key, seeded(n, 2), context=b"c")
        with pytest.raises(paraes.NoMatchingKeyError, match="commitment"):
            paraes.open_message(seeded(32, 3), sealed, context=b"c")
        with pytest.raises(paraes.NoMatchingKeyError):
            paraes.open_message(key, sealed, context=b"d")
        bad = bytearray(sealed)
        bad[len(bad) // 2] ^= 1
        with pytest.raises(paraes.AuthenticationError):
            paraes.open_message(key, bad, context=b"c")
        with pytest.raises(paraes.AuthenticationError):
            paraes.open_message(key, sealed[:-1], context=b"c")
        cut = 56 + 16400 if n > 16384 else 56
        with pytest.raises(paraes.AuthenticationError):
            paraes.open_message(key, sealed[:cut], context=b"c")
    with pytest.raises(ValueError, match="16 bytes .* or 32 bytes"):
        paraes.seal_message(seeded(24, 1), b"x")
    with pytest.raises(paraes.AuthenticationError):
        paraes.open_message(key, b"short")
