#!/usr/bin/env bash
# The whole test suite, on a fresh Debian-family machine or a developer's: installs what the
# tests need when it is missing, then runs every test. README.md gives this as the test command
# and .ci/run calls it, so what CI runs is what a user runs.
#
#   1. cargo test --workspace --profile ci        every crate and the CLI end to end; where
#                                                 there is no NVIDIA driver the GPU engine's
#                                                 tests and `paraes --backend gpu` run on the
#                                                 CUDA stand-in (kernels/aes.cu on the CPU,
#                                                 built by the tests with g++; under a minute)
#   2. scripts/second-reader/run_testkit.py      an independent Python reader of format v3,
#                                                 written from docs/FORMAT.md alone, agrees
#                                                 with tests/testkit/manifest.json and
#                                                 tests/testkit/ssh/manifest.json (every
#                                                 stanza kind, X-Wing and SSH included)
#      gpu_bench --cobblestone --quick            the device runs' issue-38 benchmark at toy
#                                                 sizes, so it cannot rot without a GPU
#   3. scripts/test-mpi.sh                       the MPI backend under MPICH's mpiexec and
#                                                 Open MPI's mpirun (-n 1 to 4), a build per
#                                                 library (MPICC=mpicc.LIB, scripts/mpi-cargo.sh),
#                                                 each checked with ldd to link its library,
#                                                 and ranks started by srun (--mpi=pmi2 for
#                                                 MPICH, pmix for Open MPI) on a one-node
#                                                 Slurm it starts and stops
#   4. kernels/check-ptx.sh                       committed PTX is current; ptxas sm_80/sm_90,
#                                                 no spills (NVRTC/ptxas wheels from PyPI); it
#                                                 runs beside steps 5 and 6
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
. scripts/steps.sh

step "test tools"
# Debian package names: openssl (raw streams are checked against `openssl enc`), util-linux
# (script, setsid), coreutils (mkfifo, head), openssh-client (ssh-keygen makes the SSH keys of
# tests/cli/ssh.rs), mpich + libmpich-dev, openmpi-bin + libopenmpi-dev and libclang-dev (the
# MPI backend is tested under both libraries; rsmpi's bindings are generated with libclang;
# installing Open MPI points Debian's plain mpicc and mpiexec at it, so everything below names
# the suffixed commands: mpicc.mpich, mpiexec.mpich, mpicc.openmpi, mpirun.openmpi), python3-pip (the PTX toolchain's wheels),
# g++ (the kernel emulator and the CUDA stand-in compile kernels/aes.cu for the host).
need=()
command -v openssl >/dev/null || need+=(openssl)
command -v script >/dev/null || need+=(util-linux)
command -v mkfifo >/dev/null || need+=(coreutils)
command -v ssh-keygen >/dev/null || need+=(openssh-client)
command -v mpiexec.mpich >/dev/null || need+=(mpich)
compgen -G "/usr/include/*/mpich/mpi.h" >/dev/null || [ -e /usr/include/mpich/mpi.h ] \
  || need+=(libmpich-dev)
command -v mpirun.openmpi >/dev/null || need+=(openmpi-bin)
compgen -G "/usr/lib/*/openmpi/include/mpi.h" >/dev/null || need+=(libopenmpi-dev)
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
mpiexec.mpich --version | sed -n 2p | xargs  # sed reads to the end: no SIGPIPE under pipefail
mpirun.openmpi --version | sed -n 1p

step "pyca/cryptography (bare messages are checked against it)"
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

step "build the tests (the ci profile)"
# The `ci` profile (Cargo.toml): optimized, no LTO; what users build keeps the release profile.
cargo test --workspace --profile ci --no-run
step "unit, property and end-to-end tests"
# cargo-nextest (on every machine of this project's kind) runs the tests of every binary side
# by side, two at a time on two cores: `cargo test` runs one binary after another, and several
# of ours spend most of their time in one long test on one core. The same tests either way;
# without nextest, `cargo test` runs them (slower) and says so.
if cargo nextest --version >/dev/null 2>&1; then
  cargo nextest run --workspace --cargo-profile ci --no-fail-fast --status-level fail \
    --final-status-level slow
  cargo test --workspace --profile ci --doc
else
  echo "cargo-nextest is not installed: cargo test runs the same tests one binary at a time"
  cargo test --workspace --profile ci
fi

step "the second implementation (written from docs/FORMAT.md alone) over the v3 testkit"
"$PARAES_PYCA" scripts/second-reader/run_testkit.py

# The device runs' benchmark must not rot between the rare sessions that have a GPU: its
# Cobblestone section (issue 38: the records kernels, the v3 body end to end, a container
# loaded into device memory) at toy sizes, each figure checked as on a GPU; on the stand-in
# every line says it is not a GPU.
step "gpu_bench's Cobblestone section at toy sizes (the CUDA stand-in where there is no driver)"
standin=()
if ! ldconfig -p 2>/dev/null | grep -q 'libcuda\.so\.1'; then
  lib=$(ls -t target/tmp/libcuda-standin.so-* 2>/dev/null | head -1)
  [ -n "$lib" ] || { echo "the tests built no CUDA stand-in (target/tmp/libcuda-standin.so-*)" >&2; exit 1; }
  standin=(env "PARAES_CUDA_STANDIN=$PWD/$lib")
fi
smoke="$(mktemp -d)"
"${standin[@]}" cargo run -q --profile ci -p paraes-gpu --example gpu_bench -- --cobblestone \
  --quick --reps 2 --kernel-bytes 1048576 --load-bytes 3000000 --shm "$smoke" --json "$smoke/c.json"
rm -rf "$smoke"

# The MPI backend under MPICH and then Open MPI, each build checked with ldd to link its
# library, with ranks started by that library's launcher and by Slurm's srun on a one-node
# Slurm (scripts/test-mpi.sh; the builds share the tests' target directory, where only rsmpi,
# paraes-mpi and paraes are rebuilt for each library).
step "the MPI backend under MPICH and Open MPI: their launchers and Slurm's srun"
scripts/test-mpi.sh

# The PTX check spends most of its time in NVRTC on one core; the Python package and the
# install are cargo builds with long one-core stretches (their LTO links) and downloads. So the
# check runs beside them, its output kept in a file and shown, with its verdict, after them.
step "PTX kernels (started; they run beside the next two steps)"
ptx_log="$(mktemp)"
kernels/check-ptx.sh >"$ptx_log" 2>&1 &
ptx_pid=$!

step "the Python package (paraes for Python, paraes.pyaes)"
PARAES_BIN="$PWD/target/ci/paraes" scripts/test-python.sh

step "README's install: cargo install into a fresh prefix, then the quick start"
scripts/test-install.sh

step "PTX kernels (waiting for the check to end)"
ptx_status=0
wait "$ptx_pid" || ptx_status=$?
cat "$ptx_log"
rm -f "$ptx_log"
if [ "$ptx_status" -ne 0 ]; then
  echo "kernels/check-ptx.sh FAILED (exit status $ptx_status; its output is above)" >&2
  exit 1
fi
