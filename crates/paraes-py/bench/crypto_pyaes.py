#!/usr/bin/env python3
"""The seed's workload, measured: pyperformance's ``crypto_pyaes`` loop with pyaes 1.6.1, with
pyca/cryptography's AES-CTR, and with ``paraes.pyaes``, in one run.

One loop (bm_crypto_pyaes): make an AES-128-CTR object, encrypt a 23,000-byte text, make another,
decrypt, and drop it. pyca's loop is the same with ``Cipher(AES(KEY), CTR(counter 1))``, the
counter block pyaes's default ``Counter()`` starts from, so all three produce the same bytes
(checked). Each implementation runs in rounds of about --round seconds, interleaved with the
others so that drift on a shared machine hits all three alike; the figure is the median of the
rounds' per-loop times.

    python crypto_pyaes.py               # about 10 s
    python crypto_pyaes.py --quick       # about 2 s
    python crypto_pyaes.py --check       # exit 1 unless paraes.pyaes is no slower than pyca
"""

import argparse
import json
import os
import platform
import statistics
import sys
import time

import pyaes
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

import paraes
import paraes.pyaes

# pyperformance's bm_crypto_pyaes
CLEARTEXT = b"This is a test. What could possibly go wrong? " * 500
# 128-bit key (16 bytes)
KEY = b'\xa1\xf6%\x8c\x87}_\xcd\x89dHE8\xbf\xc9,'


def pyaes_loop(module):
    def run(loops):
        t0 = time.perf_counter()
        for _ in range(loops):
            aes = module.AESModeOfOperationCTR(KEY)
            ciphertext = aes.encrypt(CLEARTEXT)
            # need to reset IV for decryption
            aes = module.AESModeOfOperationCTR(KEY)
            plaintext = aes.decrypt(ciphertext)
            # explicitly destroy the pyaes object
            aes = None
        dt = time.perf_counter() - t0
        if plaintext != CLEARTEXT:
            raise Exception("decrypt error!")
        return dt, ciphertext

    return run


def pyca_loop(loops):
    counter = (1).to_bytes(16, "big")
    t0 = time.perf_counter()
    for _ in range(loops):
        aes = Cipher(algorithms.AES(KEY), modes.CTR(counter)).encryptor()
        ciphertext = aes.update(CLEARTEXT) + aes.finalize()
        aes = Cipher(algorithms.AES(KEY), modes.CTR(counter)).decryptor()
        plaintext = aes.update(ciphertext) + aes.finalize()
        aes = None
    dt = time.perf_counter() - t0
    if plaintext != CLEARTEXT:
        raise Exception("decrypt error!")
    return dt, ciphertext


def machine():
    model = "unknown"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    try:
        load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        load = "unknown"
    return {
        "cpu": model,
        "nproc": os.cpu_count(),
        "load": load,
        "python": platform.python_version(),
        "paraes_aes": paraes.implementation(),
        "paraes_threads": paraes.threads(),
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer, shorter rounds")
    parser.add_argument("--rounds", type=int, default=None, help="rounds per implementation")
    parser.add_argument("--round", type=float, default=None, help="seconds per round")
    parser.add_argument("--check", action="store_true",
                        help="exit 1 unless paraes.pyaes is at least as fast as pyca")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args()
    rounds = args.rounds or (3 if args.quick else 7)
    seconds = args.round or (0.15 if args.quick else 0.4)

    runs = {
        "pyaes 1.6.1": pyaes_loop(pyaes),
        "pyca/cryptography AES-CTR": pyca_loop,
        "paraes.pyaes": pyaes_loop(paraes.pyaes),
    }
    # Same bytes from all three, and loop counts that fill a round.
    outputs = {name: run(1)[1] for name, run in runs.items()}
    assert len(set(outputs.values())) == 1, "the three do not produce the same ciphertext"
    loops = {}
    for name, run in runs.items():
        n = 1
        while True:
            dt, _ = run(n)
            if dt >= seconds / 10:
                loops[name] = max(1, int(n * seconds / dt))
                break
            n *= 4
    per_loop = {name: [] for name in runs}
    for _ in range(rounds):
        for name, run in runs.items():
            dt, _ = run(loops[name])
            per_loop[name].append(dt / loops[name])
    median = {name: statistics.median(times) for name, times in per_loop.items()}

    info = machine()
    pyaes_t, pyca_t, ours_t = (median[n] for n in runs)
    result = {
        "machine": info,
        "median_seconds_per_loop": median,
        "rounds": rounds,
        "loops_per_round": loops,
        "pyaes_over_paraes": pyaes_t / ours_t,
        "pyca_over_paraes": pyca_t / ours_t,
        "pyaes_over_pyca": pyaes_t / pyca_t,
    }
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print(f"crypto_pyaes loop (23,000 bytes, AES-128-CTR, encrypt + decrypt), median of "
              f"{rounds} rounds")
        print(f"machine: {info['cpu']}, {info['nproc']} cores, load {info['load']}, "
              f"Python {info['python']}, paraes AES {info['paraes_aes']}")
        for name in runs:
            t = median[name]
            unit = f"{t * 1e3:9.3f} ms" if t >= 1e-3 else f"{t * 1e6:9.2f} us"
            print(f"  {name:28s} {unit} per loop  ({pyaes_t / t:8.1f}x pyaes)")
        print(f"  paraes.pyaes vs pyca: {pyca_t / ours_t:.2f}x "
              f"({'faster' if ours_t <= pyca_t else 'SLOWER'})")
    if args.check and ours_t > pyca_t:
        print("FAIL: paraes.pyaes is slower than pyca/cryptography's AES-CTR on this loop",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
