#!/usr/bin/env bash
# check-ptx.sh: fails when the committed kernels/aes.ptx or its cubins (aes.sm_80.cubin,
# aes.sm_90.cubin) are stale, or when ptxas reports a spill (or any local-memory stack
# frame) for any kernel on sm_80 or sm_90. CI runs this (scripts/test.sh).
#
# Usage: kernels/check-ptx.sh
# Prints the ptxas resource report (registers, shared memory, spills) of every kernel.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

PTXAS_LOG_DIR="$tmp" "$here/build-ptx.sh" "$tmp/aes.ptx"
if ! cmp -s "$tmp/aes.ptx" "$here/aes.ptx"; then
    echo "check-ptx: kernels/aes.ptx is stale (it differs from what kernels/aes.cu compiles to):" >&2
    diff -u "$here/aes.ptx" "$tmp/aes.ptx" | head -40 >&2 || true
    echo "check-ptx: run kernels/build-ptx.sh and commit kernels/aes.ptx and kernels/aes.sm_*.cubin" >&2
    exit 1
fi
for arch in sm_80 sm_90; do
    # ptxas output is deterministic (checked when this was written: two runs, two
    # directories, identical bytes), so the committed cubin must equal the fresh one.
    if ! cmp -s "$tmp/aes.$arch.cubin" "$here/aes.$arch.cubin"; then
        echo "check-ptx: kernels/aes.$arch.cubin is stale or missing (it differs from what ptxas makes of aes.ptx)" >&2
        echo "check-ptx: run kernels/build-ptx.sh and commit kernels/aes.ptx and kernels/aes.sm_*.cubin" >&2
        exit 1
    fi
done
echo "check-ptx: kernels/aes.ptx, aes.sm_80.cubin and aes.sm_90.cubin are up to date"

status=0
for arch in sm_80 sm_90; do
    # One line per kernel: name, registers, shared memory, stack frame and spills.
    awk -v arch="$arch" '
        /Compiling entry function/ { match($0, /'"'"'[^'"'"']*'"'"'/); name = substr($0, RSTART + 1, RLENGTH - 2) }
        /bytes stack frame/ { frame = $0; sub(/^ptxas info *: */, "", frame) }
        /Used [0-9]+ registers/ { used = $0; sub(/^ptxas info *: */, "", used); printf "%s %-26s %s | %s\n", arch, name, used, frame }
    ' "$tmp/$arch.log"
    if grep -E '([1-9][0-9]*) bytes (spill stores|spill loads|stack frame)' "$tmp/$arch.log" >&2; then
        echo "check-ptx: ptxas reports spills or a stack frame for $arch (lines above)" >&2
        status=1
    fi
done
if [ "$status" -ne 0 ]; then exit 1; fi
echo "check-ptx: no spills on sm_80 and sm_90"
