#!/usr/bin/env python3
"""Prints criterion's median throughputs (GB/s = 1e9 bytes/s) as a markdown table.

Usage: benches/criterion_table.py [GROUP_PREFIX ...]   (reads target/criterion)
"""
import json
import pathlib
import sys

prefixes = tuple(sys.argv[1:]) or ("",)
rows = []
for est in sorted(pathlib.Path("target/criterion").glob("*/*/**/new/estimates.json")):
    bench = json.loads((est.parent / "benchmark.json").read_text())
    group = bench["group_id"]
    if not group.startswith(prefixes):
        continue
    nbytes = (bench.get("throughput") or {}).get("Bytes")
    if not nbytes:
        continue
    median_ns = json.loads(est.read_text())["median"]["point_estimate"]
    size = bench.get("value_str") or ""
    rows.append((group, int(size) if size.isdigit() else 0, bench["function_id"], nbytes / median_ns))
print("| group | bytes | benchmark | GB/s (median) |")
print("|---|---:|---|---:|")
for group, size, fn, gbs in sorted(rows):
    print(f"| {group} | {size or ''} | {fn} | {gbs:.2f} |")
