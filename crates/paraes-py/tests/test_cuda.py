"""paraes.cuda (issue 38): v3 containers decrypted straight into device memory, on the CUDA
stand-in where there is no NVIDIA driver (built here from kernels/emulate/cuda-standin.cpp,
as crates/paraes-gpu/tests/support/standin.rs builds it, and named by PARAES_CUDA_STANDIN
before the engine starts). Sizes at a chunk's edges; identity with the CLI; tampering refused.
"""

import pytest

import paraes
import paraes.cuda

from conftest import seeded

CHUNK = 16 * 1024
SIZES = [0, 1, CHUNK - 1, CHUNK, CHUNK + 1, 3 * CHUNK + 5]


@pytest.fixture(scope="module", autouse=True)
def driver(cuda_driver):
    """The NVIDIA driver or the stand-in (conftest's cuda_driver)."""
    return cuda_driver


def test_load_gives_the_plaintext_of_python_and_cli_containers(tmp_path, cli, private):
    key = paraes.generate_key()
    key_file = private("k.key", key.hex() + "\n")
    for n in SIZES:
        data = seeded(n, n)
        src = tmp_path / f"p{n}.bin"
        src.write_bytes(data)
        cli("enc", "-k", key_file, src, "-o", tmp_path / f"cli{n}.paraes")
        paraes.encrypt_file(src, tmp_path / f"py{n}.paraes", keys=[key])
        for made_by, keys in (("cli", [key_file]), ("py", [key])):
            buf = paraes.cuda.load(tmp_path / f"{made_by}{n}.paraes", keys=keys)
            assert isinstance(buf, paraes.cuda.DeviceBuffer)
            assert (buf.nbytes, buf.device) == (n, 0)
            assert buf.to_bytes() == data, (made_by, n)
            cai = buf.__cuda_array_interface__
            assert cai["version"] == 3 and cai["typestr"] == "|u1"
            assert cai["shape"] == (n,) and cai["strides"] is None and cai["stream"] is None
            assert isinstance(cai["data"][0], int) and cai["data"][1] is False


def test_tampered_or_wrong_key_raises_and_returns_nothing(tmp_path):
    key = paraes.generate_key()
    src = tmp_path / "p.bin"
    src.write_bytes(seeded(2 * CHUNK + 7, 9))
    paraes.encrypt_file(src, tmp_path / "c.paraes", keys=[key])
    body = bytearray((tmp_path / "c.paraes").read_bytes())
    body[-CHUNK] ^= 1  # a byte of the body, well past the header
    (tmp_path / "t.paraes").write_bytes(bytes(body))
    with pytest.raises(paraes.AuthenticationError, match="tampered"):
        paraes.cuda.load(tmp_path / "t.paraes", keys=[key])
    with pytest.raises(paraes.Error):
        paraes.cuda.load(tmp_path / "c.paraes", keys=[paraes.generate_key()])
    for device in (1, -1, 2**70, -(2**70)):
        with pytest.raises(ValueError, match="device 0 only"):
            paraes.cuda.load(tmp_path / "c.paraes", keys=[key], device=device)


def test_saved_buffers_open_with_the_cli_and_python(tmp_path, cli, private):
    key = paraes.generate_key()
    key_file = private("k.key", key.hex() + "\n")
    for n in SIZES:
        data = seeded(n, n + 1)
        (tmp_path / f"p{n}.bin").write_bytes(data)
        paraes.encrypt_file(tmp_path / f"p{n}.bin", tmp_path / f"in{n}.paraes", keys=[key])
        buf = paraes.cuda.load(tmp_path / f"in{n}.paraes", keys=[key])
        out = tmp_path / f"out{n}.paraes"
        assert paraes.cuda.save(buf, out, keys=[key_file], bits=128) == out.stat().st_size
        cli("dec", "-k", key_file, out, "-o", tmp_path / f"cli{n}.out")
        assert (tmp_path / f"cli{n}.out").read_bytes() == data
        assert paraes.cuda.load(out, keys=[key]).to_bytes() == data
    # An existing file is kept unless replace=True; a key file is never the output.
    before = out.read_bytes()
    with pytest.raises(FileExistsError):
        paraes.cuda.save(buf, out, keys=[key])
    assert out.read_bytes() == before
    paraes.cuda.save(buf, out, keys=[key], replace=True)
    assert out.read_bytes() != before
    with pytest.raises(ValueError, match="same file as key file"):
        paraes.cuda.save(buf, key_file, keys=[key_file], replace=True)
    assert key_file.read_text() == key.hex() + "\n"


def test_a_buffer_released_on_another_thread_is_zeroed_and_freed(tmp_path):
    """Review finding: DeviceBuffer was `unsendable`, so when its last reference went on another
    thread (a DataLoader worker, a thread pool) pyo3 reported an unraisable error and leaked it:
    its plaintext was never zeroed nor its device memory freed. It must also be usable there."""
    import sys
    import threading

    key = paraes.generate_key()
    data = seeded(CHUNK + 3, 5)
    (tmp_path / "p.bin").write_bytes(data)
    paraes.encrypt_file(tmp_path / "p.bin", tmp_path / "c.paraes", keys=[key])
    held = [paraes.cuda.load(tmp_path / "c.paraes", keys=[key])]
    seen, errors = [], []
    hook = sys.unraisablehook
    sys.unraisablehook = lambda u: errors.append(repr(u.exc_value))
    try:
        def elsewhere():
            seen.append(held[0].to_bytes())
            held.pop()  # the last reference, released on this thread
        thread = threading.Thread(target=elsewhere)
        thread.start()
        thread.join()
    finally:
        sys.unraisablehook = hook
    assert seen == [data]
    assert errors == []
