#!/usr/bin/env python3
"""Criterion rows of two builds, interleaved on one machine: the speed check of a refactor.

Usage: benches/compare.py ROUNDS BASE_DIR NEW_DIR BENCH[:FILTER] ...
  BASE_DIR, NEW_DIR: target/release/deps folders of the two builds; BENCH: a bench binary's
  name (gcm, mac, engine, aes); FILTER: criterion's name filter. Each round runs every bench of
  the base build and then of the new one (alternating which goes first), with short measurement
  times; the table gives each row's median over the rounds of the throughput criterion printed,
  the new/base ratio, and the geometric mean of the ratios.
"""
import glob, math, os, re, statistics, subprocess, sys

UNITS = {"B/s": 1, "KiB/s": 2**10, "MiB/s": 2**20, "GiB/s": 2**30, "TiB/s": 2**40}

def binary(deps, bench):
    found = [p for p in glob.glob(os.path.join(deps, bench + "-*")) if os.access(p, os.X_OK) and not p.endswith(".d")]
    if not found:
        sys.exit(f"no bench binary {bench} in {deps}")
    return max(found, key=os.path.getmtime)

def run(deps, spec):
    bench, _, filt = spec.partition(":")
    cmd = [binary(deps, bench), "--bench", "--warm-up-time", "1", "--measurement-time", "3", "--noplot"]
    if filt:
        cmd.append(filt)
    env = dict(os.environ, CRITERION_HOME="/tmp/criterion-compare")
    out = subprocess.run(cmd, capture_output=True, text=True, env=env).stdout
    rows, name = {}, None
    for line in out.splitlines():
        m = re.match(r"^(\S.*?)\s+time:", line)
        if m:
            name = m.group(1).strip()
        elif line.strip() and not line.startswith(" ") and "time:" not in line:
            name = line.strip()
        m = re.search(r"thrpt:\s+\[\S+ \S+ (\S+) (\S+) \S+ \S+\]", line)
        if m and name:
            rows[f"{bench}: {name}"] = float(m.group(1)) * UNITS[m.group(2)] / 1e9
    return rows

def main():
    rounds, base, new, specs = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4:]
    seen = {"base": {}, "new": {}}
    for r in range(rounds):
        order = [("base", base), ("new", new)] if r % 2 == 0 else [("new", new), ("base", base)]
        for label, deps in order:
            for spec in specs:
                for row, gbs in run(deps, spec).items():
                    seen[label].setdefault(row, []).append(gbs)
        print(f"round {r + 1} of {rounds} done", file=sys.stderr)
    print("| row | base GB/s | new GB/s | new/base |")
    print("|---|---:|---:|---:|")
    ratios = []
    for row in sorted(set(seen["base"]) & set(seen["new"])):
        b, n = statistics.median(seen["base"][row]), statistics.median(seen["new"][row])
        ratios.append(n / b)
        print(f"| {row} | {b:.2f} | {n:.2f} | {n / b:.3f} |")
    geo = math.exp(sum(map(math.log, ratios)) / len(ratios))
    print(f"\ngeometric mean of new/base over {len(ratios)} rows: {geo:.3f}; slowest row: {min(ratios):.3f}")

main()
