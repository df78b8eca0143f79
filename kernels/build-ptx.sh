#!/usr/bin/env bash
# build-ptx.sh: regenerates kernels/aes.ptx from kernels/aes.cu with NVRTC, no nvcc needed.
#
# Usage: kernels/build-ptx.sh [OUTPUT.ptx]      (default: kernels/aes.ptx)
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
