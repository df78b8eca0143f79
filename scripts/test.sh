#!/usr/bin/env bash
# The whole test suite, on a fresh Debian-family machine or a developer's: installs what the
# tests need when it is missing, then runs every test. README.md gives this as the test command
# and .ci/run calls it, so what CI runs is what a user runs.
#
#   1. cargo test --workspace --release           every crate and the CLI end to end; where
#                                                 there is no NVIDIA driver the GPU engine's
#                                                 tests and `paraes --backend gpu` run on the
#                                                 CUDA stand-in (kernels/aes.cu on the CPU,
#                                                 built by the tests with g++; under a minute)
#   2. scripts/second-reader/run_testkit.py      an independent Python reader of format v3,
#                                                 written from docs/FORMAT.md alone, agrees
#                                                 with tests/testkit/manifest.json and
#                                                 tests/testkit/ssh/manifest.json (every
#                                                 stanza kind, X-Wing and SSH included)
#   3. cargo test --release --features mpi ...    the MPI backend under mpiexec -n 1, 2, 3
#   4. kernels/check-ptx.sh                       committed PTX is current; ptxas sm_80/sm_90,
#                                                 no spills (NVRTC/ptxas wheels from PyPI)
#   5. scripts/test-python.sh                     the Python package (crates/paraes-py) built
#                                                 with maturin into target/py-venv; its pytest
#                                                 suite (against pyaes, pyca and this CLI) and
#                                                 the crypto_pyaes benchmark
#   6. scripts/test-install.sh                    README's `cargo install --locked --path .`
#                                                 into a fresh prefix; the installed binary
#                                                 runs README's quick start
#
# Tests that need hardware this machine lacks (a GPU) run on a stand-in and say so loudly.
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== test tools"
# Debian package names: openssl (raw streams are checked against `openssl enc`), util-linux
# (script, setsid), coreutils (mkfifo, head), openssh-client (ssh-keygen makes the SSH keys of
# tests/cli/ssh.rs), mpich + libmpich-dev + libclang-dev (the MPI backend;
# rsmpi's bindings are generated with libclang), python3-pip (the PTX toolchain's wheels),
# g++ (the kernel emulator and the CUDA stand-in compile kernels/aes.cu for the host).
need=()
command -v openssl >/dev/null || need+=(openssl)
command -v script >/dev/null || need+=(util-linux)
command -v mkfifo >/dev/null || need+=(coreutils)
command -v ssh-keygen >/dev/null || need+=(openssh-client)
command -v mpiexec >/dev/null || need+=(mpich)
compgen -G "/usr/include/*/mpich/mpi.h" >/dev/null || [ -e /usr/include/mpich/mpi.h ] \
  || need+=(libmpich-dev)
compgen -G "/usr/lib/llvm-*/lib/libclang.so" >/dev/null || need+=(libclang-dev)
python3 -m pip --version >/dev/null 2>&1 || need+=(python3-pip)
command -v "${CXX:-c++}" >/dev/null || need+=(g++)
if [ ${#need[@]} -gt 0 ]; then
  echo "installing: ${need[*]}"
  sudo=""
  [ "$(id -u)" = 0 ] || sudo=sudo
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${need[@]}"
fi
openssl version
mpiexec --version | sed -n 1,2p  # sed reads to the end: no SIGPIPE under pipefail

echo "== pyca/cryptography (bare messages are checked against it)"
# --format cobblestone must be byte-compatible with pyca/cryptography's cryptography.cobblestone
# (>= 50.0.0): installed from PyPI into git-ignored target/pyca with `pip install --target`
# (no python3-venv needed), and run through a wrapper that puts it on PYTHONPATH.
pyca="$PWD/target/pyca"
if ! PYTHONPATH="$pyca/site" python3 -c 'import cryptography.cobblestone' 2>/dev/null; then
  rm -rf "$pyca" && mkdir -p "$pyca"
  python3 -m pip install -q --target "$pyca/site" 'cryptography>=50,<51'
fi
printf '#!/bin/sh\nPYTHONPATH="%s/site" exec python3 "$@"\n' "$pyca" > "$pyca/python"
chmod +x "$pyca/python"
export PARAES_PYCA="$pyca/python"
"$PARAES_PYCA" -c 'import cryptography; print("pyca/cryptography", cryptography.__version__)'

echo "== unit, property and end-to-end tests"
cargo test --workspace --release

echo "== the second implementation (written from docs/FORMAT.md alone) over the v3 testkit"
"$PARAES_PYCA" scripts/second-reader/run_testkit.py

echo "== the MPI backend under mpiexec"
cargo test --release --features mpi --test cli mpi::

echo "== PTX kernels"
kernels/check-ptx.sh

echo "== the Python package (paraes for Python, paraes.pyaes)"
scripts/test-python.sh

echo "== README's install: cargo install into a fresh prefix, then the quick start"
scripts/test-install.sh
