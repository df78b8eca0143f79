#!/usr/bin/env python3
"""End-to-end file encryption benchmark: paraes beside cat, cp, openssl enc and age, in one run.

Makes a random file on tmpfs (/dev/shm), then times, round-robin so that drift on a shared
machine hits every contender alike: `cat in > out` (the copy bound), `cp`, `openssl enc
-aes-128-ctr`, `paraes enc` (a v3 container: Cobblestone-256, cpu backend) at one or more
`--chunk-size` batches, `paraes enc --raw`, `paraes dec`, and, when `age` and `age-keygen` are on
PATH, `age -e -r` and `age -d -i` (X25519) on the same file. Each run is wrapped in
/usr/bin/time -v for the peak RSS. Prints a markdown table of medians for docs/RESULTS.md.

Usage: benches/e2e.py [--size 1GiB] [--repeat 5] [--chunk-sizes 1MiB,4MiB] [--binary PATH]
"""

import argparse
import os
import pathlib
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

UNITS = {"": 1, "b": 1, "kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30}


def parse_size(text):
    match = re.fullmatch(r"(\d+)\s*([a-zA-Z]*)", text.strip())
    if not match or match.group(2).lower() not in UNITS:
        sys.exit(f"bad size {text!r}: write e.g. 1GiB or 64MiB")
    return int(match.group(1)) * UNITS[match.group(2).lower()]


def timed(cmd):
    """Runs cmd under /usr/bin/time -v; returns (wall seconds, peak RSS in MiB)."""
    start = time.perf_counter()
    proc = subprocess.run(["/usr/bin/time", "-v", *cmd], capture_output=True, text=True)
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed:\n{proc.stderr}")
    rss_kib = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", proc.stderr).group(1))
    return wall, rss_kib / 1024


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", default="1GiB")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--chunk-sizes", default="1MiB")
    parser.add_argument("--binary", default="target/release/paraes")
    parser.add_argument("--dir", default="/dev/shm")
    args = parser.parse_args()

    paraes = str(pathlib.Path(args.binary).resolve())
    if not os.access(paraes, os.X_OK):
        sys.exit(f"{paraes} not found: run cargo build --release first")
    for tool in ("openssl", "/usr/bin/time"):
        if not shutil.which(tool):
            sys.exit(f"{tool} is needed (apt-get install openssl time)")
    size = parse_size(args.size)

    with tempfile.TemporaryDirectory(dir=args.dir, prefix="paraes-e2e-") as work:
        work = pathlib.Path(work)
        src = work / "input.bin"
        with open("/dev/urandom", "rb") as rnd, open(src, "wb") as out:
            left = size
            while left:
                block = rnd.read(min(left, 16 << 20))
                out.write(block)
                left -= len(block)
        key = work / "key"
        subprocess.run([paraes, "keygen", "--bits", "128", "-o", str(key)], check=True)
        key_hex = key.read_text().strip()
        iv = "00" * 16
        out = work / "out.bin"
        contenders = {
            "cat in > out": ["sh", "-c", 'cat "$0" > "$1"', str(src), str(out)],
            "cp": ["cp", str(src), str(out)],
            "openssl enc -aes-128-ctr": ["openssl", "enc", "-aes-128-ctr", "-K", key_hex,
                                         "-iv", iv, "-in", str(src), "-out", str(out)],
            "paraes enc --raw (ctr, cpu)": [paraes, "enc", "-q", "--raw", "ctr", "--iv", iv, "-k",
                                            str(key), "-b", "cpu", "-f", str(src), "-o", str(out)],
        }
        for chunk in args.chunk_sizes.split(","):
            contenders[f"paraes enc (container, ctr, cpu, chunk {chunk})"] = [
                paraes, "enc", "-q", "-k", str(key), "-b", "cpu", "--chunk-size", chunk, "-f",
                str(src), "-o", str(out)]
        sealed = work / "input.bin.paraes"
        subprocess.run([paraes, "enc", "-q", "-k", str(key), "-f", str(src), "-o", str(sealed)],
                       check=True)
        contenders["paraes dec (container, ctr, cpu, default chunk)"] = [
            paraes, "dec", "-q", "-k", str(key), "-b", "cpu", "-f", str(sealed), "-o", str(out)]
        if shutil.which("age") and shutil.which("age-keygen"):
            identity = work / "age.id"
            subprocess.run(["age-keygen", "-o", str(identity)], check=True, capture_output=True)
            recipient = subprocess.run(["age-keygen", "-y", str(identity)], check=True,
                                       capture_output=True, text=True).stdout.strip()
            aged = work / "input.bin.age"
            subprocess.run(["age", "-e", "-r", recipient, "-o", str(aged), str(src)], check=True)
            contenders["age -e (X25519)"] = ["age", "-e", "-r", recipient, "-o", str(out),
                                             str(src)]
            contenders["age -d (X25519)"] = ["age", "-d", "-i", str(identity), "-o", str(out),
                                             str(aged)]
        else:
            print("age or age-keygen not on PATH: no age rows (apt-get install age)",
                  file=sys.stderr)
        results = {name: [] for name in contenders}
        for _ in range(args.repeat):
            for name, cmd in contenders.items():
                if out.exists():
                    out.unlink()
                results[name].append(timed(cmd))
        cpu = open("/proc/cpuinfo").read()
        model = re.search(r"model name\s*:\s*(.*)", cpu).group(1)
        print(f"machine: {model}, {os.cpu_count()} cores; file {args.size} on {args.dir}; "
              f"median of {args.repeat} round-robin runs")
        cat_median = statistics.median(w for w, _ in results["cat in > out"])
        ossl_median = statistics.median(w for w, _ in results["openssl enc -aes-128-ctr"])
        print("| command | median s | min s | GB/s | vs cat | vs openssl | peak RSS MiB |")
        print("|---|---:|---:|---:|---:|---:|---:|")
        for name, runs in results.items():
            walls = [w for w, _ in runs]
            med = statistics.median(walls)
            rss = max(r for _, r in runs)
            print(f"| {name} | {med:.3f} | {min(walls):.3f} | {size / med / 1e9:.2f} | "
                  f"{med / cat_median:.2f}x | {ossl_median / med:.2f}x faster | {rss:.0f} |")


if __name__ == "__main__":
    main()
