#!/usr/bin/env bash
# The tests of ranks started by Slurm (tests/cli/slurm.rs), under each MPI library: starts a
# one-node Slurm on this machine (scripts/slurm-one-node.sh), then for MPICH (`srun
# --mpi=pmi2`) and Open MPI (`srun --mpi=pmix`) builds the CLI tests against that library, in
# that library's target directory (scripts/mpi-cargo.sh), and runs them.
# Slurm is stopped at the end whatever happens. Exit status: 0 when every library's tests
# passed. Prints how many seconds each part took.
#
#   scripts/test-slurm.sh                 both libraries
#   scripts/test-slurm.sh mpich           one (mpich or openmpi)
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
  echo "== ranks started by srun --mpi=$plugin, built against $lib"
  started=$SECONDS
  if mpi_cli_tests "$lib" -- slurm::; then
    timings+=("$lib (build and tests): $((SECONDS - started)) s")
  else
    timings+=("$lib (build and tests): $((SECONDS - started)) s, FAILED")
    failed+=("$lib")
  fi
done

echo "== seconds taken"
printf '  %s\n' "${timings[@]}"
if [ ${#failed[@]} -gt 0 ]; then
  echo "the Slurm tests FAILED under: ${failed[*]}" >&2
  exit 1
fi
