"""ASCII-armored containers (`paraes enc -a`) from Python: `decrypt_file` reads them as the CLI's
`dec` does, `encrypt_file(armor=True)` writes what the CLI reads, and `Reader` (which reads at
offsets) refuses them in one clear line instead of calling them "not a paraes container"."""

import io

import pytest

import paraes

from conftest import seeded

BEGIN = b"-----BEGIN PARAES ENCRYPTED FILE-----\n"


@pytest.mark.parametrize("n", [0, 16384, 100_000])
def test_the_cli_and_python_read_each_others_armor(tmp_path, cli, private, n):
    key = paraes.generate_key()
    key_file = private("k.key", key.hex() + "\n")
    data = seeded(n, n + 7)
    src = tmp_path / "p.bin"
    src.write_bytes(data)
    cli("enc", "-a", "-k", key_file, src, "-o", tmp_path / "cli.asc")
    ran = paraes.decrypt_file(tmp_path / "cli.asc", tmp_path / "py.out", keys=[key])
    assert (tmp_path / "py.out").read_bytes() == data
    assert ran["bytes_out"] == n
    paraes.encrypt_file(src, tmp_path / "py.asc", keys=[key], armor=True)
    text = (tmp_path / "py.asc").read_bytes()
    assert text.startswith(BEGIN) and text.endswith(b"-----END PARAES ENCRYPTED FILE-----\n")
    assert all(len(line) <= 64 for line in text.splitlines())
    cli("dec", "-k", key_file, tmp_path / "py.asc", "-o", tmp_path / "cli.out")
    assert (tmp_path / "cli.out").read_bytes() == data
    paraes.decrypt_file(tmp_path / "py.asc", tmp_path / "py2.out", keys=[key])
    assert (tmp_path / "py2.out").read_bytes() == data


def test_damaged_armor_is_refused_and_leaves_no_output(tmp_path):
    key = paraes.generate_key()
    src = tmp_path / "p.bin"
    src.write_bytes(seeded(50_000, 3))
    paraes.encrypt_file(src, tmp_path / "a.asc", keys=[key], armor=True)
    lines = (tmp_path / "a.asc").read_bytes().splitlines(keepends=True)
    middle = len(lines) // 2
    lines[middle] = lines[middle][:10] + (b"B" if lines[middle][10:11] != b"B" else b"C") + lines[middle][11:]
    (tmp_path / "bad.asc").write_bytes(b"".join(lines))
    with pytest.raises(paraes.AuthenticationError):
        paraes.decrypt_file(tmp_path / "bad.asc", tmp_path / "out", keys=[key])
    assert not (tmp_path / "out").exists()


def test_the_reader_refuses_armor_in_one_clear_line(tmp_path):
    key = paraes.generate_key()
    src = tmp_path / "p.bin"
    src.write_bytes(b"x" * 1000)
    paraes.encrypt_file(src, tmp_path / "a.asc", keys=[key], armor=True)
    with pytest.raises(ValueError) as refused:
        paraes.Reader(tmp_path / "a.asc", keys=[key])
    message = str(refused.value)
    assert "armor" in message and "decrypt_file" in message and "\n" not in message, message


def test_the_output_is_checked_before_armor_is_read(tmp_path):
    """decrypt_file refuses its output before it reads anything (files.rs: "the output's
    checks come first"); reading armor was put before that check, so a destination that exists
    was refused only after the whole armor was read (a damaged armor said so instead), and
    from a FIFO only once the writer had written or gone."""
    import os
    import threading
    import time

    key = paraes.generate_key()
    src = tmp_path / "p.bin"
    src.write_bytes(b"x" * 1000)
    paraes.encrypt_file(src, tmp_path / "a.asc", keys=[key], armor=True)
    lines = (tmp_path / "a.asc").read_bytes().splitlines(keepends=True)
    lines[1] = b"!" + lines[1][1:]
    (tmp_path / "bad.asc").write_bytes(b"".join(lines))
    (tmp_path / "out").write_bytes(b"kept")
    with pytest.raises(FileExistsError):
        paraes.decrypt_file(tmp_path / "bad.asc", tmp_path / "out", keys=[key])
    fifo = tmp_path / "in.fifo"
    os.mkfifo(fifo)

    def hold_open():
        with open(fifo, "wb"):
            time.sleep(3)

    writer = threading.Thread(target=hold_open, daemon=True)
    writer.start()
    started = time.monotonic()
    with pytest.raises(FileExistsError):
        paraes.decrypt_file(fifo, tmp_path / "out", keys=[key])
    assert time.monotonic() - started < 2, "the refusal waited for the FIFO's writer"
    writer.join(10)
    assert (tmp_path / "out").read_bytes() == b"kept"


def test_damaged_armor_raises_authentication_error_as_a_damaged_container_does(tmp_path):
    """A cut, extended or garbled armor is damaged data, as a cut or extended binary container
    is (AuthenticationError: "damaged, truncated, reordered or tampered with"), from a file or a
    FIFO; it raised a bare OSError ("reading X failed: the armor ends before its end line"),
    which `except paraes.AuthenticationError` misses and which says I/O failed."""
    import os
    import threading

    key = paraes.generate_key()
    src = tmp_path / "p.bin"
    src.write_bytes(seeded(100_000, 5))
    paraes.encrypt_file(src, tmp_path / "a.asc", keys=[key], armor=True)
    text = (tmp_path / "a.asc").read_bytes()
    for what, damaged in [
        ("no end line", text[: text.rindex(b"-----END")]),
        ("cut in the middle", text[: len(text) // 2]),
        ("data after the end line", text + b"junk\n"),
        ("a line that is not base64", text[:60] + b"!" + text[61:]),
    ]:
        (tmp_path / "bad.asc").write_bytes(damaged)
        with pytest.raises(paraes.AuthenticationError):
            paraes.decrypt_file(tmp_path / "bad.asc", tmp_path / "out", keys=[key])
        fifo = tmp_path / "in.fifo"
        os.mkfifo(fifo)

        def write():
            try:
                with open(fifo, "wb") as f:
                    f.write(damaged)
            except BrokenPipeError:
                pass

        writer = threading.Thread(target=write, daemon=True)
        writer.start()
        with pytest.raises(paraes.AuthenticationError):
            paraes.decrypt_file(fifo, tmp_path / "out", keys=[key])
        writer.join(30)
        os.unlink(fifo)
        assert not (tmp_path / "out").exists(), what


@pytest.mark.parametrize("n", [0, 100, 16384, 200_000])
def test_the_writer_writes_armor_to_a_path_and_to_a_file_object(tmp_path, cli, private, n):
    key = paraes.generate_key()
    key_file = private("k.key", key.hex() + "\n")
    data = seeded(n, n + 11)
    with paraes.Writer(tmp_path / "w.asc", keys=[key], armor=True) as w:
        w.write(data[: n // 3])
        w.write(data[n // 3:])
    sink = io.BytesIO()
    with paraes.Writer(sink, keys=[key], armor=True) as w:
        w.write(data)
    for text in ((tmp_path / "w.asc").read_bytes(), sink.getvalue()):
        assert text.startswith(BEGIN) and text.endswith(b"-----END PARAES ENCRYPTED FILE-----\n")
        assert all(len(line) <= 64 for line in text.splitlines())
        (tmp_path / "t.asc").write_bytes(text)
        cli("dec", "-k", key_file, tmp_path / "t.asc", "-o", tmp_path / "t.out", "--force")
        assert (tmp_path / "t.out").read_bytes() == data


def test_an_armored_writer_sends_the_header_at_once():
    """The begin line and the header's text go to the file object when the writer is made,
    as the binary header does (a text sink fails there, not 64 KiB later)."""
    sink = io.BytesIO()
    w = paraes.Writer(sink, keys=[paraes.generate_key()], armor=True)
    assert sink.getvalue().startswith(BEGIN) and len(sink.getvalue()) > len(BEGIN)
    w.abort()
    with pytest.raises(TypeError):
        paraes.Writer(io.StringIO(), keys=[paraes.generate_key()], armor=True)
