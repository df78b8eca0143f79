#!/usr/bin/env python3
"""Writes tests/vectors/c2sp-sparse.json: C2SP chunked-encryption (Cobblestone-128/256) chunks
at high chunk indices, which the Wycheproof vectors (they stop at index 257) do not reach,
computed independently of paraes with pyca/cryptography's AESGCM and HKDFExpand and the
spec's derivations (c2sp.org/chunked-encryption, v1):

    key || base_nonce || commitment = HKDF-Expand-SHA512(PRK = input key, info =
        "c2sp.org/chunked-encryption@v1+" || AEAD name || 0x00 || salt || context)
    chunk i = AES-GCM(key, nonce = base_nonce XOR be96(i), aad = "", plaintext piece i)

    target/pyca/python scripts/sparse-vectors.py > tests/vectors/c2sp-sparse.json

(target/pyca/python is the pyca/cryptography 50 that scripts/test.sh installs.) The output is
deterministic: keys, salts and contexts come from SHA-512 of fixed labels. Each entry is one
message of `messageChunks` chunks of which only the listed ones are given (a reader sees the
others as absent, e.g. zeros of a sparse file): a full chunk at 2^32 + 5 with the short final
chunk after it (the 32-bit boundary of the nonce's counter), a full chunk at 2^38 - 2 with the
final chunk at 2^38 - 1 (the largest index the spec allows: "if the chunk counter reaches or
exceeds 2^38 ... implementations MUST abort"), and, invalid, a final chunk at 2^38 whose GCM
tag is correct but whose index a reader must refuse. Plaintext byte j of every chunk is
(7 * j + 13) mod 256 (ptRule), so only the ciphertexts are stored.

The script checks its own derivation first: a one-chunk message built the same way opens with
pyca's Cobblestone decryptor, and a message pyca's encryptor makes opens with the derived keys.
tests/cli/wycheproof.rs runs it under CI and compares its output with the committed file.
"""
import hashlib
import json
import sys

import cryptography
from cryptography.cobblestone import (
    Cobblestone128Decryptor,
    Cobblestone128Encryptor,
    Cobblestone256Decryptor,
    Cobblestone256Encryptor,
)
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDFExpand

CHUNK = 16384
LABEL = b"c2sp.org/chunked-encryption@v1+"
VARIANTS = (
    (128, b"AEAD_AES_128_GCM", Cobblestone128Encryptor, Cobblestone128Decryptor),
    (256, b"AEAD_AES_256_GCM", Cobblestone256Encryptor, Cobblestone256Decryptor),
)
# (name, result, [(index, plaintext length)], chunks in the message)
MESSAGES = (
    ("past 2^32", "valid", ((2**32 + 5, CHUNK), (2**32 + 6, 1000)), 2**32 + 7),
    ("the largest index", "valid", ((2**38 - 2, CHUNK), (2**38 - 1, 777)), 2**38),
    ("past the limit", "invalid", ((2**38, 100),), 2**38 + 1),
)


def seeded(label, n):
    """n bytes from SHA-512 of a fixed label: the same every run."""
    return hashlib.sha512(b"paraes sparse vectors: " + label).digest()[:n]


def plaintext(n):
    return bytes((7 * j + 13) % 256 for j in range(n))


def derive(aead, input_key, salt, context):
    info = LABEL + aead + b"\x00" + salt + context
    okm = HKDFExpand(hashes.SHA512(), len(input_key) + 12 + 32, info).derive(input_key)
    n = len(input_key)
    return okm[:n], okm[n:n + 12], okm[n + 12:]


def nonce(base_nonce, index):
    return bytes(b ^ c for b, c in zip(base_nonce, index.to_bytes(12, "big")))


def self_check(aead, encryptor, decryptor, key_len):
    """The derivation agrees with pyca's own Cobblestone, both ways."""
    input_key, salt, context = seeded(b"check key", key_len), seeded(b"check salt", 24), b"ctx"
    key, base_nonce, commitment = derive(aead, input_key, salt, context)
    data = plaintext(300)
    ours = salt + commitment + AESGCM(key).encrypt(nonce(base_nonce, 0), data, None)
    d = decryptor(input_key, context)
    assert d.update(ours) + d.finalize() == data, "pyca does not open the derived message"
    e = encryptor(input_key, context)
    theirs = e.update(data) + e.finalize()
    key, base_nonce, commitment = derive(aead, input_key, theirs[:24], context)
    assert theirs[24:56] == commitment, "pyca's commitment differs from the derived one"
    assert AESGCM(key).decrypt(nonce(base_nonce, 0), theirs[56:], None) == data


def main():
    vectors = []
    for bits, aead, encryptor, decryptor in VARIANTS:
        self_check(aead, encryptor, decryptor, bits // 8)
        for name, result, chunks, message_chunks in MESSAGES:
            tag = f"{bits} {name}".encode()
            input_key = seeded(b"key " + tag, bits // 8)
            salt = seeded(b"salt " + tag, 24)
            context = seeded(b"context " + tag, 9)
            key, base_nonce, commitment = derive(aead, input_key, salt, context)
            entries = []
            for index, length in chunks:
                n = nonce(base_nonce, index)
                ct = AESGCM(key).encrypt(n, plaintext(length), None)
                entries.append({"index": index, "last": index == message_chunks - 1,
                                "ptLen": length, "nonce": n.hex(), "ct": ct.hex()})
            vectors.append({
                "name": f"Cobblestone-{bits} {name}", "aead": aead.decode(), "result": result,
                "key": input_key.hex(), "ctx": context.hex(), "salt": salt.hex(),
                "commitment": commitment.hex(), "aeadKey": key.hex(),
                "baseNonce": base_nonce.hex(), "messageChunks": message_chunks,
                "chunks": entries,
            })
    json.dump({
        "about": "C2SP chunked-encryption chunks at high indices (scripts/sparse-vectors.py)",
        "generator": f"scripts/sparse-vectors.py, pyca/cryptography {cryptography.__version__}",
        "ptRule": "byte j of each chunk's plaintext is (7 * j + 13) mod 256",
        "vectors": vectors,
    }, sys.stdout, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
