#!/usr/bin/env python3
"""Criterion rows of two builds, interleaved on one machine: the speed check of a refactor.

Usage: benches/compare.py ROUNDS BASE_DIR NEW_DIR BENCH[:FILTER] ...
  BASE_DIR, NEW_DIR: target/release/deps folders of the two builds; BENCH: a bench binary's
  name (gcm, mac, engine, aes); FILTER: criterion's name filter. Each round runs every bench of
  the base build and the new one back to back (alternating which goes first), with short
  measurement times; the table gives each row's median (and min-max) over the rounds of the
  throughput criterion printed, the median of each round's new/base ratio (paired, so the
  machine's drift between rounds cancels), and the geometric mean of those medians. Only binaries
  built from a benches/ file count (a test binary may share a bench's name).
"""
import glob, math, os, re, statistics, subprocess, sys

UNITS = {"B/s": 1, "KiB/s": 2**10, "MiB/s": 2**20, "GiB/s": 2**30, "TiB/s": 2**40}

def is_bench(path):
    """Whether cargo built `path` from a file under a benches/ folder (a test binary can share a
    bench's name: crates/paraes-sunway-sim/tests/gcm.rs beside crates/paraes-core/benches/gcm.rs)."""
    try:
        with open(path + ".d") as deps:
            first = deps.readline()
    except OSError:
        return False
    return re.search(r"(^|[\s/])benches/", first.split(":", 1)[-1]) is not None

def binary(deps, bench):
    found = [p for p in glob.glob(os.path.join(deps, bench + "-*"))
             if os.access(p, os.X_OK) and not p.endswith(".d") and is_bench(p)]
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
    paired = {}
    for r in range(rounds):
        # Each bench (with its filter) runs for both builds back to back, the first build
        # alternating, so the two runs of a row are seconds apart and the machine's drift over
        # minutes falls out of their ratio.
        for spec in specs:
            order = [("base", base), ("new", new)] if r % 2 == 0 else [("new", new), ("base", base)]
            got = {label: run(deps, spec) for label, deps in order}
            for label, rows in got.items():
                for row, gbs in rows.items():
                    seen[label].setdefault(row, []).append(gbs)
            for row in set(got["base"]) & set(got["new"]):
                paired.setdefault(row, []).append(got["new"][row] / got["base"][row])
        print(f"round {r + 1} of {rounds} done", file=sys.stderr)
    print("| row | base GB/s (min-max) | new GB/s (min-max) | new/base, paired (min-max) |")
    print("|---|---:|---:|---:|")
    ratios = []
    for row in sorted(paired):
        bs, ns, ps = seen["base"][row], seen["new"][row], paired[row]
        b, n, p = statistics.median(bs), statistics.median(ns), statistics.median(ps)
        ratios.append(p)
        print(f"| {row} | {b:.2f} ({min(bs):.2f}-{max(bs):.2f}) | {n:.2f} ({min(ns):.2f}-{max(ns):.2f}) "
              f"| {p:.3f} ({min(ps):.3f}-{max(ps):.3f}) |")
    geo = math.exp(sum(map(math.log, ratios)) / len(ratios))
    print(f"\ngeometric mean of the rows' median paired new/base over {len(ratios)} rows: {geo:.3f}; "
          f"slowest row: {min(ratios):.3f}")

main()
