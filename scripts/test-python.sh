#!/usr/bin/env bash
# The Python tests (issue 30): builds the `paraes` Python package from crates/paraes-py with
# maturin, exactly as README says (`pip install ./crates/paraes-py`), into a virtual environment
# in git-ignored target/py-venv, with what the tests check against (pytest, pyaes==1.6.1,
# pyca/cryptography 50, numpy), then runs crates/paraes-py/tests (Python and the CLI read each
# other's containers: the CLI is $PARAES_BIN, or target/release/paraes built here) and the
# crypto_pyaes benchmark, which fails unless paraes.pyaes is at least as fast as pyca's AES-CTR.
#
# scripts/test.sh calls this after its test build (target/ci/paraes). Needs CPython >= 3.11 (the wheel targets
# the 3.11 stable ABI) and Rust. Nothing is skipped: whatever cannot run fails the script, loudly.
#
#   scripts/test-python.sh            reuse target/py-venv if it works (the package is rebuilt)
#   scripts/test-python.sh --fresh    start from a new virtual environment
set -euo pipefail
cd "$(dirname "$0")/.."

fail() {
  echo "" >&2
  echo "!!!!!!!! scripts/test-python.sh FAILED: $*" >&2
  echo "" >&2
  exit 1
}
trap 'fail "the command on line $LINENO exited with status $?"' ERR

venv="$PWD/target/py-venv"
[ "${1:-}" = "--fresh" ] && rm -rf "$venv"
start=$SECONDS

echo "== Python: interpreter and virtual environment"
python=${PYTHON:-python3}
command -v "$python" >/dev/null || fail "no $python on PATH: install CPython 3.11 or newer"
"$python" -c 'import sys; sys.exit(sys.version_info < (3, 11))' \
  || fail "$("$python" --version 2>&1) is too old: paraes for Python needs CPython 3.11 or newer (abi3-py311)"
if ! "$venv/bin/python" -c 'import sys' 2>/dev/null; then
  rm -rf "$venv"
  if ! "$python" -m venv "$venv" 2>/dev/null; then
    # Debian's python3 keeps venv in its own package.
    echo "python3 -m venv failed: installing python3-venv"
    rm -rf "$venv"
    sudo=""
    [ "$(id -u)" = 0 ] || sudo=sudo
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq python3-venv
    "$python" -m venv "$venv" || fail "cannot create a virtual environment in $venv"
  fi
fi
"$venv/bin/python" --version
"$venv/bin/python" -m pip install -q --upgrade pip
"$venv/bin/python" -m pip install -q pytest 'pyaes==1.6.1' 'cryptography>=50,<51' numpy

echo "== Python: pip install ./crates/paraes-py (maturin, release build in crates/paraes-py/target)"
"$venv/bin/python" -m pip install -q --force-reinstall --no-deps ./crates/paraes-py \
  || fail "pip install ./crates/paraes-py failed (see above)"
"$venv/bin/python" -c 'import paraes, paraes.pyaes, sys; print("paraes", paraes.__version__, "for Python: AES", paraes.implementation(), "on", paraes.threads(), "threads")' \
  || fail "the paraes package did not install (see the pip output above)"

echo "== Python: the paraes CLI the tests compare with"
# scripts/test.sh names the binary its tests built (PARAES_BIN); run alone, this builds the
# release binary (a no-op when it is current, never a stale one left from an older checkout).
if [ -z "${PARAES_BIN:-}" ]; then
  cargo build --release
  PARAES_BIN="$PWD/target/release/paraes"
fi
[ -x "$PARAES_BIN" ] || fail "PARAES_BIN=$PARAES_BIN is not an executable paraes"
export PARAES_BIN
echo "$PARAES_BIN"

echo "== Python: pytest crates/paraes-py/tests"
(cd crates/paraes-py && PYTHONDONTWRITEBYTECODE=1 "$venv/bin/python" -m pytest -p no:cacheprovider -q tests) \
  || fail "pytest failed"

echo "== Python: the crypto_pyaes loop (pyaes vs pyca vs paraes.pyaes)"
"$venv/bin/python" crates/paraes-py/bench/crypto_pyaes.py --quick --check \
  || fail "paraes.pyaes was slower than pyca/cryptography on the crypto_pyaes loop"

echo "== Python: all passed in $((SECONDS - start)) s"
