"""Shared fixtures: the paraes CLI (from $PARAES_BIN), seeded data, and small helpers.

Nothing here skips: a test that cannot run fails and says why (scripts/test-python.sh sets
PARAES_BIN to target/release/paraes and installs every package the tests import).
"""

import ctypes.util
import hashlib
import os
import pathlib
import random
import subprocess

import pytest

KERNELS = pathlib.Path(__file__).resolve().parents[3] / "kernels"


@pytest.fixture(scope="session")
def paraes_bin():
    path = os.environ.get("PARAES_BIN")
    if not path:
        pytest.fail("PARAES_BIN is not set: point it at a built paraes binary "
                    "(cargo build --release; scripts/test-python.sh sets it)")
    if not os.access(path, os.X_OK):
        pytest.fail(f"PARAES_BIN={path} is not an executable file: build it with cargo build --release")
    return path


@pytest.fixture
def cli(paraes_bin):
    """Runs the CLI; returns the completed process (check=True unless told otherwise)."""

    def run(*args, check=True, **kw):
        proc = subprocess.run([paraes_bin, *map(str, args)], capture_output=True, **kw)
        if check and proc.returncode != 0:
            raise AssertionError(f"paraes {' '.join(map(str, args))} failed ({proc.returncode}): "
                                 f"{proc.stderr.decode(errors='replace')}")
        return proc

    return run


def seeded(n, seed=1):
    """n reproducible pseudo-random bytes."""
    return random.Random(seed).randbytes(n)


@pytest.fixture
def private(tmp_path):
    """Writes a file readable by its owner only (as key and identity files should be)."""

    def write(name, contents):
        path = tmp_path / name
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(contents if isinstance(contents, bytes) else contents.encode())
        return path

    return write


@pytest.fixture(scope="session")
def cuda_driver(tmp_path_factory):
    """The NVIDIA driver where one is installed, else the stand-in, compiled here."""
    if os.environ.get("PARAES_CUDA_STANDIN") or ctypes.util.find_library("cuda"):
        return
    sources = [KERNELS / f for f in ("aes.cu", "ghash.cuh", "emulate/cuda-standin.cpp",
                                     "emulate/cuda-on-cpu.h", "emulate/cuda-threads.h",
                                     "emulate/standin-state.h")]
    digest = hashlib.sha256(b"".join(p.read_bytes() for p in sources)).hexdigest()[:16]
    lib = tmp_path_factory.getbasetemp() / f"libcuda-standin-{digest}.so"
    cxx = os.environ.get("CXX", "c++")
    proc = subprocess.run([cxx, "-O3", "-std=c++17", "-Wno-unknown-pragmas",
                           "-DBLOCKS_PER_THREAD=4", "-DMAX_THREADS=512", "-shared", "-fPIC",
                           "-pthread", "-Wl,-soname,libcuda.so", "-o", str(lib),
                           str(KERNELS / "emulate/cuda-standin.cpp")], capture_output=True)
    if proc.returncode != 0:
        pytest.fail(f"{cxx} could not build the CUDA stand-in: {proc.stderr.decode()}")
    os.environ["PARAES_CUDA_STANDIN"] = str(lib)
