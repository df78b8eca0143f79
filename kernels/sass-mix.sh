#!/usr/bin/env bash
# sass-mix.sh: the SASS instruction mix of each kernel for an architecture (default sm_90),
# from ptxas + nvdisasm (pinned PyPI wheel, installed into kernels/.venv/sass on first use).
# Not part of CI; it answers "how many ALU/FMA-pipe instructions and shared loads per AES
# block", the numbers docs/GPU.md derives the kernel's expected bound from.
#
# Usage: kernels/sass-mix.sh [sm_90|sm_80] [KERNEL_NAME_FILTER]
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
arch="${1:-sm_90}"
filter="${2:-aes}"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
"$here/build-ptx.sh" "$tmp/fresh.ptx" 2>/dev/null  # installs ptxas on first use
site="$here/.venv/sass"
if [ ! -x "$site/nvidia/cu13/bin/nvdisasm" ]; then
    mkdir -p "$site"
    python3 -m pip install --quiet --disable-pip-version-check --no-deps --require-hashes \
        --only-binary=:all: --target "$site" -r "$here/requirements-sass.txt"
    chmod +x "$site/nvidia/cu13/bin/nvdisasm"
fi
"$here/.venv/site/nvidia/cuda_nvcc/bin/ptxas" -arch="$arch" "$here/aes.ptx" -o "$tmp/aes.cubin"
"$site/nvidia/cu13/bin/nvdisasm" "$tmp/aes.cubin" 2>/dev/null >"$tmp/aes.sass"
for k in $(grep -oE '^\.text\.[a-z0-9_]+:' "$tmp/aes.sass" | sed 's/^\.text\.//; s/://' | grep "$filter" | sort); do
    awk -v k="$k" '$0 == ".text." k ":" {f=1; next} f && /^\/\/-+ \.text\./ {f=0} f' "$tmp/aes.sass" |
        grep -oE '^\s+/\*[0-9a-f]+\*/\s+(@!?U?P[0-9T] )?[A-Z0-9_.]+' | awk '{print $NF}' | sed 's/\..*//' |
        sort | uniq -c | sort -rn | awk -v k="$k" 'BEGIN{printf "%-22s", k} NR<=8 {printf " %s=%s", $2, $1} END{print ""}'
done
