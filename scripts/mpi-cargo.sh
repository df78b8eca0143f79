# scripts/mpi-cargo.sh: sourced by scripts/test-mpi.sh; builds and runs the MPI backend's tests
# against one MPI library (mpich or openmpi).
#
# Both libraries build in the tests' own target directory (target, or $CARGO_TARGET_DIR):
# built with --workspace and only the feature added, a library's build reuses every crate the
# plain test build compiled and rebuilds rsmpi, paraes-mpi and paraes alone (about 55 s, against
# 150-230 s and half a GiB of disk for a directory of its own). rsmpi's mpi-sys does not rebuild
# when MPICC changes, so `mpi_build` checks with `ldd` which library the binary links and, when
# it is the other one, cleans mpi-sys and builds again with this library's compiler wrapper
# (mpicc.mpich, mpicc.openmpi: Debian's plain mpicc is Open MPI's once that is installed).
# rsmpi would take MPI_PKG_CONFIG or CRAY_MPICH_DIR before MPICC, so they are unset.

# The target directory of the MPI builds.
mpi_target_dir() {
  echo "${CARGO_TARGET_DIR:-target}"
}

# `cargo ARGS...` for the MPI backend built against `library`, with PARAES_MPI_LIBRARY naming
# it to the tests (tests/cli/mpi.rs starts ranks with that library's launcher).
mpi_cargo() {
  local library=$1
  shift
  case $library in
    mpich | openmpi) ;;
    *) echo "mpi_cargo: unknown MPI library $library (mpich or openmpi)" >&2; return 1 ;;
  esac
  env -u MPI_PKG_CONFIG -u CRAY_MPICH_DIR "MPICC=mpicc.$library" \
    "CARGO_TARGET_DIR=$(mpi_target_dir)" "PARAES_MPI_LIBRARY=$library" cargo "$@"
}

# The CLI tests (`--test cli`) with the MPI feature, in the `ci` profile, across the workspace
# so that features resolve as in the plain test build: `mpi_cli_tests LIBRARY [--no-run |
# -- FILTERS...]`.
mpi_cli_tests() {
  local library=$1
  shift
  mpi_cargo "$library" test --workspace --profile ci --features paraes/mpi --test cli "$@"
}

# Builds the MPI CLI tests against `library` and checks with `ldd` that the paraes binary
# links that library's shared object and not the other's; rebuilds mpi-sys once when a build
# against the other library is in the directory. Fails, saying what it links, otherwise.
mpi_build() {
  local library=$1 links other binary linked
  case $library in
    mpich) links=libmpich.so other=libmpi.so.40 ;;
    openmpi) links=libmpi.so.40 other=libmpich.so ;;
    *) echo "mpi_build: unknown MPI library $library (mpich or openmpi)" >&2; return 1 ;;
  esac
  binary="$(mpi_target_dir)/ci/paraes"
  mpi_cli_tests "$library" --no-run
  linked=$(ldd "$binary")
  if ! grep -qF "$links" <<<"$linked" || grep -qF "$other" <<<"$linked"; then
    echo "$binary links $(awk '/mpi/{print $1}' <<<"$linked" | xargs): rebuilding mpi-sys with mpicc.$library"
    mpi_cargo "$library" clean --profile ci -p mpi-sys
    mpi_cli_tests "$library" --no-run
    linked=$(ldd "$binary")
  fi
  if ! grep -qF "$links" <<<"$linked" || grep -qF "$other" <<<"$linked"; then
    echo "error: $binary must link $library's $links and not $other; it links:" >&2
    grep -i mpi <<<"$linked" >&2 || true
    return 1
  fi
  grep -F "$links" <<<"$linked" | xargs
}
