#!/usr/bin/env bash
# build-ptx.sh: regenerates kernels/aes.ptx from kernels/aes.cu with NVRTC, no nvcc needed,
# and assembles it with the pinned ptxas into the machine code the engine loads on Ampere
# and Hopper without any JIT: aes.sm_80.cubin (compute capability 8.x) and aes.sm_90.cubin
# (9.x). ptxas is deterministic (same PTX and flags -> byte-identical cubin, whatever the
# directory), so check-ptx.sh compares all three files byte for byte.
#
# Usage: kernels/build-ptx.sh [OUTPUT.ptx]      (default: kernels/aes.ptx; the cubins go
#        beside it as OUTPUT.sm_80.cubin and OUTPUT.sm_90.cubin, minus the .ptx)
# With PTXAS_LOG_DIR set, ptxas runs with -v and writes sm_80.log / sm_90.log there.
#
# Installs the pinned wheels of requirements.txt (NVRTC and ptxas from PyPI) into the
# git-ignored kernels/.venv on first use, with `pip install --target` (works on Debian
# without python3-venv and without touching the system site-packages), then compiles
# through NVRTC's C API from Python's ctypes (build-ptx.py). Needs python3 with pip and
# network access to PyPI the first time; x86-64 Linux.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
out="${1:-$here/aes.ptx}"
site="$here/.venv/site"
stamp="$site/.paraes-requirements"

if ! cmp -s "$here/requirements.txt" "$stamp" 2>/dev/null; then
    echo "build-ptx: installing the pinned NVRTC/ptxas wheels into $site" >&2
    rm -rf "$site"
    mkdir -p "$site"
    python3 -m pip install --quiet --disable-pip-version-check --no-deps --require-hashes \
        --only-binary=:all: --target "$site" -r "$here/requirements.txt"
    cp "$here/requirements.txt" "$stamp"
fi

python3 "$here/build-ptx.py" --site "$site" "$here/aes.cu" "$out"

ptxas="$site/nvidia/cuda_nvcc/bin/ptxas"
chmod +x "$ptxas"
# One ptxas per architecture, side by side (each runs on one core).
assemble() {
    local arch=$1 cubin="${out%.ptx}.$1.cubin"
    if [ -n "${PTXAS_LOG_DIR:-}" ]; then
        "$ptxas" -v -O3 -arch="$arch" "$out" -o "$cubin" >"$PTXAS_LOG_DIR/$arch.log" 2>&1 || {
            cat "$PTXAS_LOG_DIR/$arch.log" >&2
            return 1
        }
    else
        "$ptxas" -O3 -arch="$arch" "$out" -o "$cubin"
    fi
    echo "build-ptx: wrote $cubin ($(wc -c <"$cubin") bytes, ptxas -O3 -arch=$arch)" >&2
}
pids=()
for arch in sm_80 sm_90; do
    assemble "$arch" &
    pids+=("$!")
done
failed=0
for pid in "${pids[@]}"; do wait "$pid" || failed=1; done
[ "$failed" = 0 ] || { echo "build-ptx: ptxas failed (output above)" >&2; exit 1; }
