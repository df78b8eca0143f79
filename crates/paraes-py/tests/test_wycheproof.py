"""Wycheproof's C2SP chunked-encryption vectors (tests/vectors/c2sp/ at the repository's root,
35 for each of Cobblestone-128 and -256) through the bare-message API: ``open_message`` gives
each valid vector's plaintext (msgLength, msgSha512) from bytes, a bytearray and a memoryview,
and refuses each invalid one with the exception its flags call for (ValueError for a key of
the wrong size, NoMatchingKeyError for a commitment that does not match, AuthenticationError
for a message cut short or a chunk that does not verify); ``seal_message`` seals each valid
plaintext again (a fresh salt, so compared by what pyca and paraes open it to).

A missing or short vector file fails the run; nothing is skipped.
"""

import hashlib
import json
import zlib
from pathlib import Path

import pytest
from cryptography.cobblestone import Cobblestone128Decryptor, Cobblestone256Decryptor

import paraes

VECTORS = Path(__file__).resolve().parents[3] / "tests" / "vectors" / "c2sp"
FILES = {
    128: "c2sp_chunked_encryption_aes_128_gcm_test.json",
    256: "c2sp_chunked_encryption_aes_256_gcm_test.json",
}
DECRYPTORS = {128: Cobblestone128Decryptor, 256: Cobblestone256Decryptor}
# Wrong commitments (a changed salt or commitment, a wrong key or context).
COMMITMENT_FLAGS = {"WrongKey", "WrongContext", "ModifiedCiphertext"}


def load():
    vectors = []
    for bits, name in FILES.items():
        path = VECTORS / name
        if not path.is_file():
            raise FileNotFoundError(f"{path}: the committed Wycheproof vectors are missing")
        data = json.loads(path.read_text())
        aead = f"AEAD_AES_{bits}_GCM"
        tests = [t for g in data["testGroups"] if g["aead"] == aead for t in g["tests"]]
        assert data["numberOfTests"] == len(tests) == 35, path
        assert sum(t["result"] == "valid" for t in tests) == 10, path
        vectors += [(bits, t) for t in tests]
    return vectors


ALL = load()


@pytest.mark.parametrize("bits,test", ALL, ids=[f"{b}-tc{t['tcId']}" for b, t in ALL])
def test_vector(bits, test):
    key = bytes.fromhex(test["key"])
    context = bytes.fromhex(test["ctx"])
    message = zlib.decompress(bytes.fromhex(test["ct"]))
    flags = set(test["flags"])
    what = f"Cobblestone-{bits} tcId {test['tcId']} {sorted(flags)}: {test['comment']}"
    if test["result"] == "valid":
        plain = paraes.open_message(key, message, context=context)
        assert len(plain) == test["msgLength"], what
        assert hashlib.sha512(plain).hexdigest() == test["msgSha512"], what
        again = paraes.open_message(bytearray(key), bytearray(message), context=memoryview(context))
        assert again == plain, what
        assert paraes.open_message(key, memoryview(message), context=bytearray(context)) == plain
        sealed = paraes.seal_message(key, plain, context=context)
        assert len(sealed) == len(message), what
        assert sealed[:24] != message[:24], f"{what}: the salt is not fresh"
        d = DECRYPTORS[bits](key, context)
        assert d.update(sealed) + d.finalize() == plain, f"{what}: pyca opens the resealed message"
        assert paraes.open_message(key, sealed, context=context) == plain, what
        return
    assert test["result"] == "invalid", what
    if "InvalidKeySize" in flags:
        expected = ValueError
    elif "HeaderFailure" in flags and flags & COMMITMENT_FLAGS:
        expected = paraes.NoMatchingKeyError
    else:
        expected = paraes.AuthenticationError
    with pytest.raises(expected):
        paraes.open_message(key, message, context=context)
    with pytest.raises(expected):
        paraes.open_message(bytearray(key), bytearray(message), context=bytearray(context))


def test_every_vector_is_collected():
    assert len(ALL) == 70
    assert len({(bits, t["tcId"]) for bits, t in ALL}) == 70
