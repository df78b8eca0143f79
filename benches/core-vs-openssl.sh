#!/usr/bin/env bash
# Runs `openssl speed` and the criterion engine bench in one go (openssl before and after, to show
# drift on a shared machine) and prints a markdown table of medians for docs/RESULTS.md.
# Usage: benches/core-vs-openssl.sh [criterion filter, e.g. ctr-aes128]
set -euo pipefail
cd "$(dirname "$0")/.."

echo "## machine"
grep -m1 'model name' /proc/cpuinfo
echo "cores: $(nproc); AES flags: $(grep -m1 -o -w 'aes\|vaes\|avx2\|avx512f\|avx512bw\|vpclmulqdq' /proc/cpuinfo | sort -u | tr '\n' ' ')"
rustc --version
openssl version

openssl_row() {
  # Last column of `openssl speed -evp` is the 16 KiB figure in kB/s (1000 bytes).
  for cipher in aes-128-ctr aes-256-ctr aes-128-ecb aes-256-ecb; do
    openssl speed -evp "$cipher" -bytes 16384 -seconds 3 2>/dev/null |
      awk -v c="$cipher" '$1 == toupper(c) || $1 == c { sub(/k$/, "", $NF); printf "| openssl %s 1 thread 16 KiB | %.2f GB/s |\n", c, $NF / 1e6 }'
  done
  openssl speed -multi "$(nproc)" -evp aes-128-ctr -bytes 16384 -seconds 3 2>/dev/null |
    awk -v n="$(nproc)" '$1 == "evp" || $1 == "aes-128-ctr" || $1 == "AES-128-CTR" { sub(/k$/, "", $NF); v = $NF } END { printf "| openssl aes-128-ctr %s threads 16 KiB | %.2f GB/s |\n", n, v / 1e6 }'
}

echo "## openssl (before)"
openssl_row
echo "## criterion"
cargo bench --bench engine -- "$@"
echo "## openssl (after)"
openssl_row

echo "## criterion medians"
benches/criterion_table.py ctr- ecb-
