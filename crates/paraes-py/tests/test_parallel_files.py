"""encrypt_file and decrypt_file run a large file as `paraes enc`/`dec` do, through the same
code (paraes-files' run_stream): many chunks in flight on the engine's threads (two at least),
read at offsets from a regular input and written at offsets into the unnamed output; the dict
each returns says so with the keys of the CLI's `--stats json`. The bytes are the CLI's, a
stream input is read in order, a small file runs in turn, and a failure leaves nothing."""

import json
import os
import threading

import pytest

import paraes

from conftest import seeded

# Several windows (4 MiB) of chunks, and a short last one.
LARGE = 9 * (1 << 20) + 12_345


def files_in(path):
    return sorted(p.name for p in path.iterdir())


def workers():
    return max(2, paraes.threads())


def io_of(stats):
    """The io dict of `stats` less `records_in_place`, checked first: a bool, true where the
    CPU engine has threads to share the records out (it then seals and opens them in place)."""
    io = dict(stats["io"])
    in_place = io.pop("records_in_place")
    assert isinstance(in_place, bool)
    assert in_place or paraes.threads() == 1
    return io


def test_a_large_file_runs_at_offsets_and_gives_the_cli_s_bytes(tmp_path, cli, private):
    key = paraes.generate_key()
    key_file = private("k.key", key.hex() + "\n")
    data = seeded(LARGE, 37)
    src = tmp_path / "p.bin"
    src.write_bytes(data)

    stats = paraes.encrypt_file(src, tmp_path / "py.paraes", keys=[key])
    container_len = (tmp_path / "py.paraes").stat().st_size
    assert io_of(stats) == {"read": "offsets", "write": "offsets", "workers": workers()}
    assert stats == {"bytes_in": LARGE, "bytes_out": container_len, "io": stats["io"]}
    cli("dec", "-k", key_file, tmp_path / "py.paraes", "-o", tmp_path / "cli.out")
    assert (tmp_path / "cli.out").read_bytes() == data

    cli("enc", "-k", key_file, src, "-o", tmp_path / "cli.paraes")
    stats = paraes.decrypt_file(tmp_path / "cli.paraes", tmp_path / "py.out", keys=[key])
    assert io_of(stats) == {"read": "offsets", "write": "offsets", "workers": workers()}
    assert stats["bytes_out"] == LARGE
    assert (tmp_path / "py.out").read_bytes() == data
    # The CLI's run of the same container says the same of itself, and writes the same bytes.
    proc = cli("dec", "-q", "-k", key_file, tmp_path / "cli.paraes", "-o",
               tmp_path / "cli2.out", "--stats", "json")
    assert io_of(json.loads(proc.stderr)) == {"read": "offsets", "write": "offsets",
                                              "workers": workers()}
    assert (tmp_path / "cli2.out").read_bytes() == (tmp_path / "py.out").read_bytes()


def test_a_stream_input_is_read_in_order_and_a_small_file_runs_in_turn(tmp_path):
    key = paraes.generate_key()
    data = seeded(LARGE, 38)
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)

    def feed(contents):
        with open(fifo, "wb") as f:
            f.write(contents)

    writer = threading.Thread(target=feed, args=(data,))
    writer.start()
    stats = paraes.encrypt_file(fifo, tmp_path / "c.paraes", keys=[key])
    writer.join()
    assert io_of(stats) == {"read": "stream", "write": "offsets", "workers": workers()}
    assert stats["bytes_in"] == LARGE

    writer = threading.Thread(target=feed, args=((tmp_path / "c.paraes").read_bytes(),))
    writer.start()
    stats = paraes.decrypt_file(fifo, tmp_path / "out", keys=[key])
    writer.join()
    assert stats["io"]["read"] == "stream"
    assert (tmp_path / "out").read_bytes() == data

    small = seeded(100_000, 39)
    (tmp_path / "small").write_bytes(small)
    stats = paraes.encrypt_file(tmp_path / "small", tmp_path / "small.paraes", keys=[key])
    assert stats["io"] is None and stats["bytes_in"] == len(small)
    stats = paraes.decrypt_file(tmp_path / "small.paraes", tmp_path / "small.out", keys=[key])
    assert stats == {"bytes_in": (tmp_path / "small.paraes").stat().st_size - 4096 - 56,
                     "bytes_out": len(small), "io": None}
    assert (tmp_path / "small.out").read_bytes() == small


def test_a_failure_at_offsets_leaves_nothing(tmp_path):
    key = paraes.generate_key()
    data = seeded(LARGE, 40)
    (tmp_path / "p.bin").write_bytes(data)
    paraes.encrypt_file(tmp_path / "p.bin", tmp_path / "c.paraes", keys=[key])
    good = (tmp_path / "c.paraes").read_bytes()
    for at in (len(good) // 3, len(good) - 100):
        bad = bytearray(good)
        bad[at] ^= 1
        (tmp_path / "bad.paraes").write_bytes(bad)
        before = files_in(tmp_path)
        with pytest.raises(paraes.AuthenticationError, match="failed authentication"):
            paraes.decrypt_file(tmp_path / "bad.paraes", tmp_path / "out", keys=[key])
        assert files_in(tmp_path) == before
