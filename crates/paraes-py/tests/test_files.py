"""Containers from Python: whole files, the writable stream and the seekable reader, read by the
paraes CLI and reading what it writes (format v3), with every kind of key; and the promise that
a failure leaves no output behind."""

import gc
import io
import json
import os
import warnings

import pytest

import paraes

from conftest import seeded

SIZES = (0, 1, 16383, 16384, 100_000, (1 << 20) + 12_345)


def files_in(path):
    return sorted(p.name for p in path.iterdir())


def test_python_and_the_cli_read_each_others_containers(tmp_path, cli, private):
    key = paraes.generate_key()
    key_file = private("k.key", key.hex() + "\n")
    for n in SIZES:
        data = seeded(n, n)
        src = tmp_path / f"p{n}.bin"
        src.write_bytes(data)
        # Python writes, the CLI reads (and says it is format v3).
        paraes.encrypt_file(src, tmp_path / f"py{n}.paraes", keys=[key_file])
        info = json.loads(cli("info", "--json", tmp_path / f"py{n}.paraes").stdout)
        assert info["format"] == 3, info
        cli("dec", "-k", key_file, tmp_path / f"py{n}.paraes", "-o", tmp_path / f"cli{n}.out")
        assert (tmp_path / f"cli{n}.out").read_bytes() == data
        # The CLI writes, Python reads: the whole file, and at random places.
        cli("enc", "-k", key_file, src, "-o", tmp_path / f"cli{n}.paraes")
        paraes.decrypt_file(tmp_path / f"cli{n}.paraes", tmp_path / f"py{n}.out", keys=[key])
        assert (tmp_path / f"py{n}.out").read_bytes() == data
        with paraes.Reader(tmp_path / f"cli{n}.paraes", keys=[key]) as r:
            assert r.size == n
            for at in sorted({0, n // 3, max(n - 5, 0), n}):
                r.seek(at)
                assert r.read(70_000) == data[at:at + 70_000]
            assert r.seek(0, io.SEEK_END) == n and r.read() == b""


def test_every_kind_of_key_both_ways(tmp_path, cli, private):
    data = seeded(50_000, 5)
    src = tmp_path / "p.bin"
    src.write_bytes(data)
    raw = paraes.generate_key(128)
    raw_file = private("raw.key", raw)
    identity, recipient = paraes.generate_identity()
    identity_file = private("me.id", "# mine\n" + identity + "\n")
    pq_identity, pq_recipient = paraes.generate_identity(pq=True)
    assert paraes.recipient_of(pq_identity) == pq_recipient
    pass_file = private("pw.txt", "correct horse battery staple\n")

    # Classical and post-quantum recipients together: the core's seal warns (test_seal_warning.py).
    with pytest.warns(UserWarning, match="only as safe as those"):
        paraes.encrypt_file(src, tmp_path / "all.paraes", keys=[raw],
                            recipients=[recipient, pq_recipient],
                            passphrase="correct horse battery staple")
    for how in (["-k", raw_file], ["-i", identity_file], ["--passphrase-file", pass_file]):
        out = tmp_path / "out.bin"
        cli("dec", *how, tmp_path / "all.paraes", "-o", out, "--force")
        assert out.read_bytes() == data, how
    for how in ({"keys": [raw_file]}, {"keys": [bytearray(raw)]}, {"identities": [identity]},
                {"identities": [identity_file]}, {"identities": [pq_identity.encode()]},
                {"passphrase": b"correct horse battery staple"}):
        paraes.decrypt_file(tmp_path / "all.paraes", tmp_path / "back.bin", overwrite=True, **how)
        assert (tmp_path / "back.bin").read_bytes() == data, how

    cli_id = tmp_path / "cli.id"
    keygen = cli("keygen", "--x25519", "-o", cli_id)
    cli_recipient = paraes.recipient_of(cli_id.read_text().splitlines()[-1])
    assert cli_recipient.encode() in keygen.stderr
    recipients_file = tmp_path / "people.txt"
    recipients_file.write_text(f"# team\n{cli_recipient}\n")
    paraes.encrypt_file(src, tmp_path / "r.paraes", recipients=[recipients_file], bits=128)
    cli("dec", "-i", cli_id, tmp_path / "r.paraes", "-o", tmp_path / "r.out")
    assert (tmp_path / "r.out").read_bytes() == data
    cli("enc", "--passphrase-file", pass_file, "-r", recipient, src, "-o", tmp_path / "c.paraes")
    paraes.decrypt_file(tmp_path / "c.paraes", tmp_path / "c1.out", identities=[identity_file])
    paraes.decrypt_file(tmp_path / "c.paraes", tmp_path / "c2.out",
                        passphrase="correct horse battery staple")
    assert (tmp_path / "c1.out").read_bytes() == data == (tmp_path / "c2.out").read_bytes()


def test_writer_to_a_path_and_to_a_file_object(tmp_path, cli, private):
    key = paraes.generate_key()
    key_file = private("k.key", key)
    data = seeded(3_000_000, 6)
    dst = tmp_path / "w.paraes"
    with paraes.Writer(dst, keys=[key_file]) as w:
        assert not dst.exists()  # nothing under the name until close
        for at in range(0, len(data), 77_777):
            assert w.write(memoryview(data)[at:at + 77_777]) == len(data[at:at + 77_777])
    cli("dec", "-k", key_file, dst, "-o", tmp_path / "w.out")
    assert (tmp_path / "w.out").read_bytes() == data
    for n in (0, 1 << 20, (1 << 20) + 1):
        sink = io.BytesIO()
        with paraes.Writer(sink, keys=[key]) as w:
            w.write(data[:n])
        (tmp_path / "s.paraes").write_bytes(sink.getvalue())
        cli("dec", "-k", key_file, tmp_path / "s.paraes", "-o", tmp_path / "s.out", "--force")
        assert (tmp_path / "s.out").read_bytes() == data[:n]


def test_failures_leave_nothing_behind(tmp_path):
    key = paraes.generate_key()
    data = seeded(2_000_000, 7)
    (tmp_path / "p.bin").write_bytes(data)
    paraes.encrypt_file(tmp_path / "p.bin", tmp_path / "c.paraes", keys=[key])
    before = files_in(tmp_path)

    # A damaged chunk near the end: decryption fails after much plaintext went through.
    bad = bytearray((tmp_path / "c.paraes").read_bytes())
    bad[-40_000] ^= 0x40
    (tmp_path / "bad.paraes").write_bytes(bad)
    with pytest.raises(paraes.AuthenticationError, match="failed authentication"):
        paraes.decrypt_file(tmp_path / "bad.paraes", tmp_path / "out.bin", keys=[key])
    with pytest.raises(paraes.NoMatchingKeyError, match="opens with: key file"):
        paraes.decrypt_file(tmp_path / "c.paraes", tmp_path / "out.bin",
                            keys=[paraes.generate_key()])
    with pytest.raises(paraes.AuthenticationError):
        (tmp_path / "cut.paraes").write_bytes(bytes(bad[:-20_000]))
        paraes.decrypt_file(tmp_path / "cut.paraes", tmp_path / "out.bin", keys=[key])
    with pytest.raises(paraes.Error, match="not a paraes container"):
        paraes.decrypt_file(tmp_path / "p.bin", tmp_path / "out.bin", keys=[key])
    assert files_in(tmp_path) == sorted(before + ["bad.paraes", "cut.paraes"])

    # A writer that fails or is abandoned leaves no file.
    with pytest.raises(RuntimeError):
        with paraes.Writer(tmp_path / "w.paraes", keys=[key]) as w:
            w.write(data)
            raise RuntimeError("stop")
    w = paraes.Writer(tmp_path / "w.paraes", keys=[key])
    w.write(data)
    w.abort()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ResourceWarning)
        w = paraes.Writer(tmp_path / "w.paraes", keys=[key])
        w.write(data)
        del w
        gc.collect()
    assert files_in(tmp_path) == sorted(before + ["bad.paraes", "cut.paraes"])


def test_a_file_the_call_reads_is_never_its_output(tmp_path, private):
    """A key, identity or recipients file given as the output (by its name or a link to it)
    is refused even with overwrite=True, and left as it was: writing it would lose the key of
    every other file it opens."""
    key = paraes.generate_key()
    key_file = private("k.key", key.hex() + "\n")
    identity, recipient = paraes.generate_identity()
    identity_file = private("id.txt", identity + "\n")
    recipients_file = private("team.txt", recipient + "\n")
    link = tmp_path / "link"
    link.symlink_to(key_file)
    src = tmp_path / "p.bin"
    src.write_bytes(b"data")
    sealed = tmp_path / "c.paraes"
    paraes.encrypt_file(src, sealed, keys=[key_file], recipients=[recipients_file])
    kept = {p: p.read_bytes() for p in (key_file, identity_file, recipients_file)}
    calls = [
        (lambda dst: paraes.encrypt_file(src, dst, keys=[key_file], overwrite=True),
         (key_file, link)),
        (lambda dst: paraes.encrypt_file(src, dst, recipients=[recipients_file],
                                         overwrite=True), (recipients_file,)),
        (lambda dst: paraes.decrypt_file(sealed, dst, keys=[key_file], overwrite=True),
         (key_file, link)),
        (lambda dst: paraes.decrypt_file(sealed, dst, identities=[identity_file],
                                         overwrite=True), (identity_file,)),
        (lambda dst: paraes.Writer(dst, keys=[str(key_file)], overwrite=True), (key_file,)),
    ]
    for call, outputs in calls:
        for dst in outputs:
            with pytest.raises(ValueError, match="is the same file as (key|identity|recipients) file"):
                call(dst)
    assert {p: p.read_bytes() for p in kept} == kept


def test_existing_outputs_and_bad_arguments(tmp_path):
    key = paraes.generate_key()
    (tmp_path / "p.bin").write_bytes(b"data")
    paraes.encrypt_file(tmp_path / "p.bin", tmp_path / "c.paraes", keys=[key])
    with pytest.raises(FileExistsError, match="overwrite=True"):
        paraes.encrypt_file(tmp_path / "p.bin", tmp_path / "c.paraes", keys=[key])
    paraes.encrypt_file(tmp_path / "p.bin", tmp_path / "c.paraes", keys=[key], overwrite=True)
    with pytest.raises(ValueError, match="is the same file as the input"):
        paraes.decrypt_file(tmp_path / "c.paraes", tmp_path / "c.paraes", keys=[key],
                            overwrite=True)
    with pytest.raises(FileNotFoundError, match="cannot open"):
        paraes.encrypt_file(tmp_path / "missing", tmp_path / "x", keys=[key])
    with pytest.raises(FileNotFoundError, match="key file"):
        paraes.encrypt_file(tmp_path / "p.bin", tmp_path / "x", keys=[tmp_path / "no.key"])
    with pytest.raises(ValueError, match="is not a key"):
        paraes.encrypt_file(tmp_path / "p.bin", tmp_path / "x", keys=[b"not-a-key"])
    identity, recipient = paraes.generate_identity()
    with pytest.raises(ValueError, match="holds an identity, not a key"):
        paraes.encrypt_file(tmp_path / "p.bin", tmp_path / "x", keys=[identity.encode()])
    with pytest.raises(ValueError, match="not a paraes recipient"):
        paraes.encrypt_file(tmp_path / "p.bin", tmp_path / "x", recipients=["paraes1nope"])
    with pytest.raises(ValueError, match="at least one way to open it"):
        paraes.encrypt_file(tmp_path / "p.bin", tmp_path / "x")
    with pytest.raises(TypeError, match="is a list"):
        paraes.encrypt_file(tmp_path / "p.bin", tmp_path / "x", keys=key)
    with pytest.raises(ValueError, match="128 or 256"):
        paraes.encrypt_file(tmp_path / "p.bin", tmp_path / "x", keys=[key], bits=192)
    assert not (tmp_path / "x").exists()
    for e in (paraes.AuthenticationError, paraes.NoMatchingKeyError):
        assert issubclass(e, paraes.Error)


def test_reader_reports_damage_where_it_reads(tmp_path):
    key = paraes.generate_key()
    data = seeded(200_000, 8)
    (tmp_path / "p.bin").write_bytes(data)
    paraes.encrypt_file(tmp_path / "p.bin", tmp_path / "c.paraes", keys=[key])
    raw = bytearray((tmp_path / "c.paraes").read_bytes())
    raw[len(raw) // 2] ^= 1
    (tmp_path / "bad.paraes").write_bytes(raw)
    with paraes.Reader(tmp_path / "bad.paraes", keys=[key]) as r:
        assert r.read(1000) == data[:1000]  # the chunks before the damage are fine
        with pytest.raises(paraes.AuthenticationError):
            r.read()
    buffered = io.BufferedReader(paraes.Reader(tmp_path / "c.paraes", keys=[key]))
    assert buffered.read(10) == data[:10]
    buf = bytearray(5000)
    r = paraes.Reader(tmp_path / "c.paraes", keys=[key])
    r.seek(-5000, io.SEEK_END)
    assert r.readinto(buf) == 5000 and buf == data[-5000:]
    assert r.tell() == len(data)
    r.close()
    with pytest.raises(ValueError):
        r.read(1)
