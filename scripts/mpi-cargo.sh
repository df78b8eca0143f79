# scripts/mpi-cargo.sh: sourced by scripts/test.sh and scripts/test-slurm.sh; builds and runs
# the MPI backend's tests against one MPI library (mpich or openmpi).
#
# rsmpi's mpi-sys does not rebuild when MPICC changes, so each library has a target directory
# of its own, always built with that library's compiler wrapper (mpicc.mpich, mpicc.openmpi:
# Debian's plain mpicc is Open MPI's once that is installed); rsmpi would take MPI_PKG_CONFIG
# or CRAY_MPICH_DIR before MPICC, so they are unset. MPICH's directory is the tests' own
# (target, or $CARGO_TARGET_DIR): built with --workspace and only the feature added, it
# reuses every crate the plain test build compiled and rebuilds paraes alone (52 s against
# 157 s for a directory of its own). Open MPI's is target/mpi-openmpi.

# The target directory of `library`'s MPI build.
mpi_target_dir() {
  case $1 in
    mpich) echo "${CARGO_TARGET_DIR:-target}" ;;
    openmpi) echo target/mpi-openmpi ;;
    *) echo "mpi_target_dir: unknown MPI library $1 (mpich or openmpi)" >&2; return 1 ;;
  esac
}

# `cargo ARGS...` for the MPI backend built against `library`, with PARAES_MPI_LIBRARY naming
# it to the tests (tests/cli/mpi.rs starts ranks with that library's launcher).
mpi_cargo() {
  local library=$1 dir
  shift
  dir=$(mpi_target_dir "$library")
  env -u MPI_PKG_CONFIG -u CRAY_MPICH_DIR "MPICC=mpicc.$library" "CARGO_TARGET_DIR=$dir" \
    "PARAES_MPI_LIBRARY=$library" cargo "$@"
}

# The CLI tests (`--test cli`) with the MPI feature, in the `ci` profile, across the workspace
# so that features resolve as in the plain test build: `mpi_cli_tests LIBRARY [--no-run |
# -- FILTERS...]`.
mpi_cli_tests() {
  local library=$1
  shift
  mpi_cargo "$library" test --workspace --profile ci --features paraes/mpi --test cli "$@"
}
