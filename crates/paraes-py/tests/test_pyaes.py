"""paraes.pyaes against pyaes 1.6.1 itself: the same bytes out, the same counter states, the same
exceptions, for everything pyaes offers."""

import io
import random

import pyaes
import pytest

import paraes.pyaes as ppyaes

from conftest import seeded

KEY_SIZES = (16, 24, 32)


def keys():
    rng = random.Random(7)
    return [rng.randbytes(n) for n in KEY_SIZES]


def raises_same(f, g):
    """f (pyaes) and g (paraes.pyaes) raise the same exception type with the same message."""
    with pytest.raises(Exception) as expected:
        f()
    with pytest.raises(Exception) as got:
        g()
    assert type(got.value) is type(expected.value)
    assert str(got.value) == str(expected.value)


@pytest.mark.parametrize("key", keys(), ids=KEY_SIZES)
def test_ctr_pieces_and_counter_state_match(key):
    data = seeded(5000, 3)
    rng = random.Random(len(key))
    for initial in (1, 0, 12345678901234567890, (1 << 128) - 3, -1, 1 << 130):
        a = pyaes.AESModeOfOperationCTR(key, pyaes.Counter(initial))
        b = ppyaes.AESModeOfOperationCTR(key, ppyaes.Counter(initial))
        at = 0
        while at < len(data):
            n = rng.choice([0, 1, 5, 15, 16, 17, 31, 32, 33, 100, 1000])
            assert b.encrypt(data[at:at + n]) == a.encrypt(data[at:at + n]), (initial, at, n)
            assert b._counter.value == a._counter.value
            at += n
        assert b.decrypt(b"") == a.decrypt(b"")


def test_counter_wraps_into_a_new_list_as_pyaes_does():
    key = keys()[0]
    for module in (pyaes, ppyaes):
        counter = module.Counter((1 << 128) - 2)
        first = counter.value
        module.AESModeOfOperationCTR(key, counter).encrypt(b"x" * 16)
        assert counter.value is first and counter.value == [255] * 15 + [255]
        module.AESModeOfOperationCTR(key, counter).encrypt(b"x" * 40)
        assert counter.value is not first and counter.value == [0] * 15 + [2]


def test_shared_counter_is_mutated_in_place():
    key = keys()[1]
    data = seeded(300, 4)
    results = []
    for module in (pyaes, ppyaes):
        counter = module.Counter(99)
        value = counter.value
        one = module.AESModeOfOperationCTR(key, counter)
        two = module.AESModeOfOperationCTR(key, counter)
        out = [one.encrypt(data[:20]), two.encrypt(data[20:50]), one.encrypt(data[50:90]),
               two.encrypt(data[90:300])]
        assert counter.value is value
        results.append((out, list(value)))
    assert results[0] == results[1]


def test_counter_subclasses_and_other_objects_get_pyaes_semantics():
    key = keys()[2]
    data = seeded(777, 5)

    def by_two(module):
        class ByTwo(module.Counter):
            def increment(self):
                module.Counter.increment(self)
                module.Counter.increment(self)
        return ByTwo(5)

    class Bytes:
        """Not a Counter at all: a value that is bytes, an increment of its own."""

        def __init__(self):
            self.n = 1000

        @property
        def value(self):
            return self.n.to_bytes(16, "big")

        def increment(self):
            self.n += 7

    class Odd:
        """A value list holding numbers outside 0..255, as pyaes packs them."""

        def __init__(self):
            self.v = [300, -1, 2, 3] * 4

        @property
        def value(self):
            return self.v

        def increment(self):
            self.v = [x + 1 for x in self.v]

    for make in (by_two, lambda m: Bytes(), lambda m: Odd()):
        a = pyaes.AESModeOfOperationCTR(key, make(pyaes))
        b = ppyaes.AESModeOfOperationCTR(key, make(ppyaes))
        for n in (3, 40, 0, 200, 534):
            assert b.encrypt(data[:n]) == a.encrypt(data[:n])


def test_a_counter_whose_list_was_tampered_with_falls_back_to_pyaes():
    key = keys()[0]
    data = seeded(100, 6)
    a, b = pyaes.Counter(1), ppyaes.Counter(1)
    a._counter[3] = 300
    b._counter[3] = 300
    ma, mb = pyaes.AESModeOfOperationCTR(key, a), ppyaes.AESModeOfOperationCTR(key, b)
    assert mb.encrypt(data) == ma.encrypt(data)
    assert b.value == a.value


def test_str_input_as_pyaes():
    key = keys()[0]
    a, b = pyaes.AESModeOfOperationCTR(key), ppyaes.AESModeOfOperationCTR(key)
    for text in ("hello", "", "caf\xe9 \xff" * 9, "x" * 33):
        assert b.encrypt(text) == a.encrypt(text)
    # A character past 255: pyaes makes the keystream, then fails to make bytes; the counter
    # has moved on either way.
    raises_same(lambda: a.encrypt("\u20ac" * 20), lambda: b.encrypt("\u20ac" * 20))
    assert b._counter.value == a._counter.value
    assert b.encrypt("after") == a.encrypt("after")
    ea, eb = pyaes.AESModeOfOperationECB(key), ppyaes.AESModeOfOperationECB(key)
    for block in ("0123456789abcdef", "\u0100" + "a" * 15):
        assert eb.encrypt(block) == ea.encrypt(block)
        assert eb.decrypt(block) == ea.decrypt(block)


def test_ecb_and_aes_match_and_refuse_other_lengths():
    for key in keys():
        block = seeded(16, len(key))
        a, b = pyaes.AESModeOfOperationECB(key), ppyaes.AESModeOfOperationECB(key)
        assert b.encrypt(block) == a.encrypt(block)
        assert b.decrypt(block) == a.decrypt(block)
        assert b.decrypt(b.encrypt(block)) == block
        for n in (0, 15, 17, 32):
            raises_same(lambda: a.encrypt(b"x" * n), lambda: b.encrypt(b"x" * n))
            raises_same(lambda: a.decrypt(b"x" * n), lambda: b.decrypt(b"x" * n))
        ra, rb = pyaes.AES(key), ppyaes.AES(key)
        out = rb.encrypt(list(block))
        assert type(out) is list and out == ra.encrypt(list(block))
        assert rb.decrypt(block) == ra.decrypt(block)
        assert rb.encrypt(bytearray(block)) == ra.encrypt(bytearray(block))
        raises_same(lambda: ra.encrypt(block[:15]), lambda: rb.encrypt(block[:15]))
    for bad in (b"", b"x" * 15, b"x" * 33):
        raises_same(lambda: pyaes.AES(bad), lambda: ppyaes.AES(bad))
        raises_same(lambda: pyaes.AESModeOfOperationCTR(bad),
                    lambda: ppyaes.AESModeOfOperationCTR(bad))
    with pytest.raises(TypeError):
        pyaes.AES("x" * 16)
    with pytest.raises(TypeError):
        ppyaes.AES("x" * 16)


@pytest.mark.parametrize("key", keys(), ids=KEY_SIZES)
def test_cbc_cfb_ofb_match(key):
    iv = seeded(16, 11)
    data = seeded(16 * 20, 12)
    a, b = pyaes.AESModeOfOperationCBC(key, iv), ppyaes.AESModeOfOperationCBC(key, iv)
    ca = [a.encrypt(data[i:i + 16]) for i in range(0, len(data), 16)]
    cb = [b.encrypt(data[i:i + 16]) for i in range(0, len(data), 16)]
    assert ca == cb
    a, b = pyaes.AESModeOfOperationCBC(key, iv), ppyaes.AESModeOfOperationCBC(key, iv)
    assert [b.decrypt(c) for c in cb] == [a.decrypt(c) for c in ca]
    assert pyaes.AESModeOfOperationCBC(key).encrypt(data[:16]) == \
        ppyaes.AESModeOfOperationCBC(key).encrypt(data[:16])
    for segment in (1, 4, 16):
        a = pyaes.AESModeOfOperationCFB(key, iv, segment_size=segment)
        b = ppyaes.AESModeOfOperationCFB(key, iv, segment_size=segment)
        assert b.encrypt(data[:64]) == a.encrypt(data[:64])
        assert b.decrypt(data[:32]) == a.decrypt(data[:32])
        if segment > 1:
            raises_same(lambda: a.encrypt(b"x" * (segment + 1)),
                        lambda: b.encrypt(b"x" * (segment + 1)))
    a, b = pyaes.AESModeOfOperationOFB(key, iv), ppyaes.AESModeOfOperationOFB(key, iv)
    for n in (1, 15, 33, 100):
        assert b.encrypt(data[:n]) == a.encrypt(data[:n])
    raises_same(lambda: pyaes.AESModeOfOperationCBC(key, b"short"),
                lambda: ppyaes.AESModeOfOperationCBC(key, b"short"))
    # pyaes's CFB without an IV fails on its first block (list + bytes); so does the drop-in.
    raises_same(lambda: pyaes.AESModeOfOperationCFB(key, None).encrypt(b"ab"),
                lambda: ppyaes.AESModeOfOperationCFB(key, None).encrypt(b"ab"))


@pytest.mark.parametrize("mode", ["ecb", "cbc", "cfb", "ofb", "ctr"])
@pytest.mark.parametrize("padding", ["default", "none"])
def test_feeders_and_streams_match(mode, padding):
    key, iv = keys()[2], seeded(16, 13)

    def make(module):
        cls = module.AESModesOfOperation[mode]
        if mode == "ecb":
            return cls(key)
        if mode == "ctr":
            return cls(key, module.Counter(42))
        return cls(key, iv)

    sizes = (0, 1, 16, 31, 100, 8192 + 5) if padding == "default" else (16, 64, 8192)
    for n in sizes:
        data = seeded(n, n)
        outs = []
        for module in (pyaes, ppyaes):
            if padding == "none" and mode in ("cfb",):
                continue
            try:
                enc = module.Encrypter(make(module), padding=padding)
                ciphertext = enc.feed(data[: n // 3]) + enc.feed(data[n // 3:]) + enc.feed()
                dec = module.Decrypter(make(module), padding=padding)
                plaintext = dec.feed(ciphertext) + dec.feed()
                src, dst = io.BytesIO(data), io.BytesIO()
                module.encrypt_stream(make(module), src, dst, block_size=1000, padding=padding)
                back = io.BytesIO()
                module.decrypt_stream(make(module), io.BytesIO(dst.getvalue()), back, padding=padding)
                outs.append((ciphertext, plaintext, dst.getvalue(), back.getvalue()))
            except Exception as e:  # the same failure both ways counts as the same behaviour
                outs.append((type(e), str(e)))
        if outs:
            assert outs[0] == outs[1], (mode, padding, n)


def test_module_surface_matches():
    for name in pyaes.__all__ if hasattr(pyaes, "__all__") else []:
        assert hasattr(ppyaes, name), name
    for name in ("AES", "AESModeOfOperationCTR", "AESModeOfOperationCBC", "AESModeOfOperationCFB",
                 "AESModeOfOperationECB", "AESModeOfOperationOFB", "AESModesOfOperation", "Counter",
                 "decrypt_stream", "Decrypter", "encrypt_stream", "Encrypter", "PADDING_NONE",
                 "PADDING_DEFAULT"):
        assert hasattr(ppyaes, name), name
    assert ppyaes.PADDING_NONE == pyaes.PADDING_NONE
    assert ppyaes.PADDING_DEFAULT == pyaes.PADDING_DEFAULT
    assert sorted(ppyaes.AESModesOfOperation) == sorted(pyaes.AESModesOfOperation)
    assert ppyaes.AESModeOfOperationCTR.name == pyaes.AESModeOfOperationCTR.name
    assert issubclass(ppyaes.AESModeOfOperationCFB, ppyaes.AESStreamModeOfOperation)


def test_bytes_like_inputs_that_pyaes_refuses_are_taken_as_bytes():
    key = keys()[0]
    data = seeded(100, 14)
    expected = pyaes.AESModeOfOperationCTR(key).encrypt(data)
    for view in (bytearray(data), memoryview(data)):
        assert ppyaes.AESModeOfOperationCTR(key).encrypt(view) == expected
    assert ppyaes.AESModeOfOperationECB(key).encrypt(bytearray(data[:16])) == \
        pyaes.AESModeOfOperationECB(key).encrypt(data[:16])


def test_pyperformance_crypto_pyaes_loop_unchanged_but_for_its_import():
    # bm_crypto_pyaes: encrypt and decrypt a 23,000-byte text with AES-128-CTR.
    cleartext = b"This is a test. What could possibly go wrong? " * 500
    key = b'\xa1\xf6%\x8c\x87}_\xcd\x89dHE8\xbf\xc9,'
    for module in (pyaes, ppyaes):
        aes = module.AESModeOfOperationCTR(key)
        ciphertext = aes.encrypt(cleartext)
        aes = module.AESModeOfOperationCTR(key)
        plaintext = aes.decrypt(ciphertext)
        assert plaintext == cleartext
        if module is pyaes:
            expected = ciphertext
        else:
            assert ciphertext == expected
