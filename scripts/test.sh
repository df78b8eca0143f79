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
#   3. cargo test --profile ci --features mpi ... the MPI backend under MPICH's mpiexec and
#                                                 Open MPI's mpirun (-n 1 to 4), a build per
#                                                 library (MPICC=mpicc.LIB, scripts/mpi-cargo.sh),
#                                                 each checked with ldd to link its library;
#      scripts/test-slurm.sh                     then ranks started by srun (--mpi=pmi2 for
#                                                 MPICH, pmix for Open MPI) on a one-node
#                                                 Slurm it starts and stops
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
cargo test --workspace --profile ci

step "the second implementation (written from docs/FORMAT.md alone) over the v3 testkit"
"$PARAES_PYCA" scripts/second-reader/run_testkit.py

# The MPI backend under each library, built with that library's compiler wrapper in a target
# directory of its own (scripts/mpi-cargo.sh: MPICH's is the tests' own, so it rebuilds paraes
# alone). The tests start ranks with the launcher of the library named by PARAES_MPI_LIBRARY
# (tests/cli/mpi.rs), never the plain mpiexec on the PATH, and each launch is killed after a
# deadline (tests/cli/bounded.rs). The filters select every MPI test: `mpi::` the `with_mpi`
# modules and wycheproof's `mpi`, `armor::mpi_` armor's (which `mpi::` alone missed); Slurm's
# tests run in their own step.
. scripts/mpi-cargo.sh
mpi_tests() {
  local library=$1 links other started=$SECONDS
  case $library in
    mpich) links=libmpich.so other=libmpi.so.40 ;;
    openmpi) links=libmpi.so.40 other=libmpich.so ;;
  esac
  local dir
  dir=$(mpi_target_dir "$library")
  echo "== the MPI backend built against $library ($dir)"
  mpi_cli_tests "$library" --no-run
  local binary="$dir/ci/paraes" linked
  links_right() {
    linked=$(ldd "$binary")
    grep -qF "$links" <<<"$linked" && ! grep -qF "$other" <<<"$linked"
  }
  if ! links_right; then
    # A build of another MPICC left in that directory (a developer's plain `cargo build
    # --features mpi` after Open MPI repointed mpicc): mpi-sys once more, with this library's.
    echo "$binary links $(awk '/mpi/{print $1}' <<<"$linked" | xargs): rebuilding mpi-sys with mpicc.$library"
    mpi_cargo "$library" clean --profile ci -p mpi-sys
    mpi_cli_tests "$library" --no-run
  fi
  if ! links_right; then
    echo "error: $binary must link $library's $links and not $other; it links:" >&2
    grep -i mpi <<<"$linked" >&2 || true
    exit 1
  fi
  grep -F "$links" <<<"$linked" | xargs
  echo "== the MPI tests under $library's launcher"
  mpi_cli_tests "$library" -- mpi:: armor::mpi_ --skip slurm::
  echo "the MPI backend under $library: $((SECONDS - started)) s (build and tests)"
}
step "the MPI backend under MPICH and Open MPI (a build per library)"
mpi_tests mpich
mpi_tests openmpi

step "ranks started by Slurm's srun (a one-node Slurm), MPICH and Open MPI"
scripts/test-slurm.sh

step "PTX kernels"
kernels/check-ptx.sh

step "the Python package (paraes for Python, paraes.pyaes)"
PARAES_BIN="$PWD/target/ci/paraes" scripts/test-python.sh

step "README's install: cargo install into a fresh prefix, then the quick start"
scripts/test-install.sh
