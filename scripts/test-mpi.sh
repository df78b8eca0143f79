#!/usr/bin/env bash
# The MPI backend's tests under each MPI library: for MPICH and then Open MPI, builds the CLI
# tests against that library (scripts/mpi-cargo.sh: `mpi_build`, checked with ldd) and runs
# every MPI test with it: ranks started by the library's own launcher (`mpiexec.mpich`;
# `mpirun.openmpi`), and ranks started by Slurm's srun on a one-node Slurm that this script
# starts first (scripts/slurm-one-node.sh; MPICH under `srun --mpi=pmi2`, Open MPI under
# `srun --mpi=pmix`) and stops at the end whatever happens. Exit status: 0 when every
# library's tests passed. Prints how many seconds each part took.
#
# The filters select every MPI test: `mpi::` the `with_mpi` modules and wycheproof's `mpi`,
# `armor::mpi_` armor's (which `mpi::` alone missed), `slurm::` srun's. The tests start ranks
# with the launcher of the library named by PARAES_MPI_LIBRARY (tests/cli/mpi.rs), never the
# plain mpiexec on the PATH, and each launch is killed after a deadline (tests/cli/bounded.rs).
#
#   scripts/test-mpi.sh                 both libraries
#   scripts/test-mpi.sh mpich           one (mpich or openmpi)
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/mpi-cargo.sh

libraries=(mpich openmpi)
[ $# -eq 0 ] || libraries=("$@")
for lib in "${libraries[@]}"; do
  case "$lib" in
    mpich | openmpi) ;;
    *)
      echo "usage: $0 [mpich|openmpi]..." >&2
      exit 2
      ;;
  esac
done

# Each library's compiler wrapper (Debian's suffixed names: installing Open MPI repoints the
# plain mpicc at it), and libclang for rsmpi's bindings.
need=()
command -v mpicc.mpich >/dev/null || need+=(mpich libmpich-dev)
command -v mpicc.openmpi >/dev/null || need+=(openmpi-bin libopenmpi-dev)
compgen -G "/usr/lib/llvm-*/lib/libclang.so" >/dev/null || need+=(libclang-dev)
if [ ${#need[@]} -gt 0 ]; then
  echo "installing: ${need[*]}"
  sudo=""
  [ "$(id -u)" = 0 ] || sudo=sudo
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${need[@]}"
fi

echo "== a one-node Slurm"
started=$SECONDS
trap 'scripts/slurm-one-node.sh stop' EXIT
eval "$(scripts/slurm-one-node.sh start)"
sinfo
timings=("Slurm setup: $((SECONDS - started)) s")

failed=()
for lib in "${libraries[@]}"; do
  plugin=pmi2
  [ "$lib" = openmpi ] && plugin=pmix
  echo "== the MPI backend built against $lib: its launcher, and srun --mpi=$plugin"
  started=$SECONDS
  if mpi_build "$lib" && mpi_cli_tests "$lib" -- mpi:: armor::mpi_ slurm::; then
    timings+=("$lib (build and tests): $((SECONDS - started)) s")
  else
    timings+=("$lib (build and tests): $((SECONDS - started)) s, FAILED")
    failed+=("$lib")
  fi
done

echo "== seconds taken"
printf '  %s\n' "${timings[@]}"
if [ ${#failed[@]} -gt 0 ]; then
  echo "the MPI tests FAILED under: ${failed[*]}" >&2
  exit 1
fi
