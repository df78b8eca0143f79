#!/usr/bin/env python3
"""Writes crates/paraes-core/tests/data/cobblestone.txt: Cobblestone-128/256 messages made by
pyca/cryptography (>= 50.0.0, `cryptography.cobblestone`), which paraes's own implementation must
reproduce byte for byte from the same key, context and salt, and open.

    python3 -m venv /tmp/pyca && /tmp/pyca/bin/pip install 'cryptography>=50'
    /tmp/pyca/bin/python scripts/cobblestone-vectors.py > crates/paraes-core/tests/data/cobblestone.txt

Plaintext of length n is bytes (i * 7 + i // 251) % 256 for i < n (the tests make it the same
way). One line per message: variant, key, context, n, salt, SHA-256 of the whole message, and the
whole message in hex when it is at most 200 bytes (so a test also opens pyca's own bytes).
"""
import hashlib
import os

import cryptography
from cryptography.cobblestone import Cobblestone128Encryptor, Cobblestone256Encryptor


def plaintext(n):
    return bytes((i * 7 + i // 251) % 256 for i in range(n))


print(f"# made by scripts/cobblestone-vectors.py with pyca/cryptography {cryptography.__version__}")
print("# variant key context length salt sha256(message) [message]")
for variant, encryptor in ((128, Cobblestone128Encryptor), (256, Cobblestone256Encryptor)):
    for n, context in ((0, b""), (1, b"paraes"), (100, b""), (16383, b"ctx"), (16384, b""),
                       (16385, b"a longer context, with spaces"), (32768, b""), (50000, b"x")):
        key = os.urandom(variant // 8)
        enc = encryptor(key, context)
        # Fed in uneven pieces: the message must not depend on how the plaintext arrives.
        data = plaintext(n)
        message = enc.update(data[:777]) + enc.update(data[777:]) + enc.finalize()
        fields = [f"cobblestone{variant}", key.hex(), context.hex() or "-", str(n),
                  message[:24].hex(), hashlib.sha256(message).hexdigest()]
        if len(message) <= 200:
            fields.append(message.hex())
        print(" ".join(fields))
