"""Key arguments as a new user meets them (issue 36), by the CLI's rules: an identity file's text
as str or bytes, a key file given as an identity told as a key (and the other way round), a short
passphrase warned about, the Argon2id cap and unverified slots as keyword arguments, and SSH keys
as recipients and identities (a locked one unlocked with ssh_passphrase=, never a prompt)."""

import pathlib
import re
import shutil
import subprocess
import warnings

import pytest

import paraes

from conftest import seeded

V2_FIXTURES = pathlib.Path(__file__).resolve().parents[3] / "tests" / "fixtures" / "v2"


def user_warnings(call):
    """Runs `call`; returns the messages of the UserWarnings it gave."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        call()
    return [str(w.message) for w in caught if issubclass(w.category, UserWarning)]


def ssh_keygen(directory, name, key_type, passphrase=""):
    """A new SSH key pair `name` (OpenSSH format) in `directory`; returns its public key line."""
    if shutil.which("ssh-keygen") is None:
        pytest.fail("ssh-keygen is needed for the SSH key tests: install openssh-client")
    args = ["ssh-keygen", "-q", "-t", key_type, "-N", passphrase, "-C", name,
            "-f", str(directory / name)]
    if key_type == "rsa":
        args += ["-b", "2048"]
    subprocess.run(args, check=True, stdin=subprocess.DEVNULL, capture_output=True)
    return (directory / f"{name}.pub").read_text().strip()


@pytest.fixture
def plain(tmp_path):
    data = seeded(70_000, 36)
    (tmp_path / "p.bin").write_bytes(data)
    return data


def test_an_identity_file_s_text_is_taken_as_str_as_well_as_bytes(tmp_path, cli, plain):
    identity, recipient = paraes.generate_identity()
    # As `paraes keygen` writes it: comment lines first.
    cli("keygen", "--x25519", "-o", tmp_path / "cli.id")
    cli_text = (tmp_path / "cli.id").read_text()
    cli_recipient = cli("keygen", "-y", tmp_path / "cli.id").stdout.decode().strip()
    paraes.encrypt_file(tmp_path / "p.bin", tmp_path / "c.paraes",
                        recipients=[recipient, cli_recipient])
    for text in (f"# mine\n# recipient: {recipient}\n{identity}\n", cli_text):
        for given in (text, text.encode()):
            paraes.decrypt_file(tmp_path / "c.paraes", tmp_path / "out", identities=[given],
                                overwrite=True)
            assert (tmp_path / "out").read_bytes() == plain
            with paraes.Reader(tmp_path / "c.paraes", identities=[given]) as r:
                assert r.read() == plain


def test_a_key_given_as_an_identity_is_told_as_a_key_and_the_other_way_round(tmp_path, private):
    key = paraes.generate_key()
    (tmp_path / "p.bin").write_bytes(b"data")
    paraes.encrypt_file(tmp_path / "p.bin", tmp_path / "c.paraes", keys=[key])
    hex_file = private("hex.key", key.hex() + "\n")
    raw_file = private("raw.key", key)
    for given in (hex_file, raw_file, key, key.hex().encode()):
        with pytest.raises(ValueError, match="holds a key, not an identity: give it in keys=") as e:
            paraes.decrypt_file(tmp_path / "c.paraes", tmp_path / "out", identities=[given])
        assert "checksum" not in str(e.value) and key.hex()[:8] not in str(e.value)
    assert not (tmp_path / "out").exists()
    identity, _ = paraes.generate_identity()
    ssh_keygen(tmp_path, "id_ed25519", "ed25519")
    for given, what in ((identity.encode(), "an identity"),
                        (tmp_path / "id_ed25519", "a private key (an SSH key?)")):
        with pytest.raises(ValueError, match=re.escape(f"holds {what}, not a key: give it in identities=")):
            paraes.encrypt_file(tmp_path / "p.bin", tmp_path / "x", keys=[given])
    assert not (tmp_path / "x").exists()


def test_a_short_passphrase_is_warned_about_when_encrypting(tmp_path, plain):
    src, dst = tmp_path / "p.bin", tmp_path / "c.paraes"
    said = user_warnings(lambda: paraes.encrypt_file(src, dst, passphrase="hunter2"))
    assert len(said) == 1 and "shorter than 10 characters" in said[0], said

    def write():
        with paraes.Writer(tmp_path / "w.paraes", passphrase=b"short") as w:
            w.write(plain)

    said = user_warnings(write)
    assert len(said) == 1 and "shorter than 10 characters" in said[0], said
    # Opening with it says nothing (the CLI warns only when encrypting); 10 characters are enough.
    assert user_warnings(lambda: paraes.decrypt_file(dst, tmp_path / "out", passphrase="hunter2")) == []
    assert (tmp_path / "out").read_bytes() == plain
    assert user_warnings(lambda: paraes.encrypt_file(src, tmp_path / "ok.paraes",
                                                     passphrase="ten chars!")) == []
    # A warning made an error stops the call before anything is written.
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(UserWarning, match="shorter than"):
            paraes.encrypt_file(src, tmp_path / "no.paraes", passphrase="hunter2")
    assert not (tmp_path / "no.paraes").exists()


def test_the_argon2id_cap_is_a_keyword_argument(tmp_path, plain):
    passphrase = "correct horse battery staple"
    paraes.encrypt_file(tmp_path / "p.bin", tmp_path / "c.paraes", passphrase=passphrase)
    opens = (
        lambda **kw: paraes.decrypt_file(tmp_path / "c.paraes", tmp_path / "out",
                                         passphrase=passphrase, overwrite=True, **kw),
        lambda **kw: paraes.Reader(tmp_path / "c.paraes", passphrase=passphrase, **kw).close(),
    )
    for open_it in opens:
        with pytest.raises(paraes.Error, match="above the cap of 1 MiB") as e:
            open_it(max_kdf_mib=1)
        cost = re.search(r"allow it with max_kdf_mib=(\d+)$", str(e.value))
        assert cost, str(e.value)
        open_it(max_kdf_mib=int(cost.group(1)))
        open_it(max_kdf_mib=None)  # the CLI's default cap
    assert (tmp_path / "out").read_bytes() == plain
    with pytest.raises(paraes.Error, match="above the cap"):
        paraes.decrypt_file(tmp_path / "c.paraes", tmp_path / "cli", passphrase=passphrase,
                            max_kdf_mib=int(cost.group(1)) - 1)
    assert not (tmp_path / "cli").exists()


def test_a_v2_file_with_an_unverified_slot_opens_only_when_allowed(tmp_path):
    planted = V2_FIXTURES / "ctr-multi-planted-slot.paraes"
    identity = V2_FIXTURES / "x25519.identity"
    plain = (V2_FIXTURES / "plain.txt").read_bytes()
    with pytest.raises(paraes.Error, match="allow_unverified_slot=True"):
        paraes.decrypt_file(planted, tmp_path / "out", identities=[identity])
    with pytest.raises(paraes.Error, match="allow_unverified_slot=True"):
        paraes.Reader(planted, identities=[identity])
    assert not (tmp_path / "out").exists()
    said = user_warnings(lambda: paraes.decrypt_file(planted, tmp_path / "out",
                                                     identities=[identity],
                                                     allow_unverified_slot=True))
    assert len(said) == 1 and "stanza slot 1 (generation 7) is ignored" in said[0], said
    assert (tmp_path / "out").read_bytes() == plain
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        with paraes.Reader(planted, keys=[V2_FIXTURES / "k256.key"],
                           allow_unverified_slot=True) as r:
            assert r.read() == plain


def test_ssh_keys_are_recipients_and_identities(tmp_path, cli, plain):
    ed25519 = ssh_keygen(tmp_path, "id_ed25519", "ed25519")
    rsa = ssh_keygen(tmp_path, "id_rsa", "rsa")
    assert ed25519.startswith("ssh-ed25519 ") and rsa.startswith("ssh-rsa ")
    (tmp_path / "authorized_keys").write_text(f"# team\n{ed25519}\n{rsa}\n")
    src = tmp_path / "p.bin"
    paraes.encrypt_file(src, tmp_path / "lines.paraes", recipients=[ed25519, rsa])
    paraes.encrypt_file(src, tmp_path / "file.paraes", recipients=[tmp_path / "authorized_keys"])
    for container in ("lines.paraes", "file.paraes"):
        for name in ("id_ed25519", "id_rsa"):
            key = tmp_path / name
            for given in (key, str(key), key.read_text(), key.read_bytes()):
                paraes.decrypt_file(tmp_path / container, tmp_path / "out", identities=[given],
                                    overwrite=True)
                assert (tmp_path / "out").read_bytes() == plain, (container, name)
            # The CLI opens what Python sealed to the SSH keys.
            out = cli("dec", "-i", key, tmp_path / container, "-o", "-").stdout
            assert out == plain
    # And Python opens what the CLI sealed to one.
    cli("enc", "-r", ed25519, src, "-o", tmp_path / "cli.paraes")
    with paraes.Reader(tmp_path / "cli.paraes", identities=[tmp_path / "id_ed25519"]) as r:
        assert r.read() == plain


def test_a_locked_ssh_key_opens_with_ssh_passphrase_and_never_prompts(tmp_path, plain):
    locked = ssh_keygen(tmp_path, "locked", "ed25519", passphrase="pass words")
    paraes.encrypt_file(tmp_path / "p.bin", tmp_path / "c.paraes", recipients=[locked])
    key = tmp_path / "locked"
    for given in (key, key.read_text()):
        with pytest.raises(paraes.Error, match="it has a passphrase: give it with ssh_passphrase="):
            paraes.decrypt_file(tmp_path / "c.paraes", tmp_path / "out", identities=[given])
        with pytest.raises(paraes.Error, match="the passphrase is wrong"):
            paraes.decrypt_file(tmp_path / "c.paraes", tmp_path / "out", identities=[given],
                                ssh_passphrase="wrong words")
        assert not (tmp_path / "out").exists()
        for passphrase in ("pass words", b"pass words"):
            paraes.decrypt_file(tmp_path / "c.paraes", tmp_path / "out", identities=[given],
                                ssh_passphrase=passphrase, overwrite=True)
            assert (tmp_path / "out").read_bytes() == plain
        with paraes.Reader(tmp_path / "c.paraes", identities=[given],
                           ssh_passphrase="pass words") as r:
            assert r.read() == plain
        (tmp_path / "out").unlink()
    # A file that is not for the locked key never needs its passphrase.
    other_key = paraes.generate_key()
    paraes.encrypt_file(tmp_path / "p.bin", tmp_path / "other.paraes", keys=[other_key])
    paraes.decrypt_file(tmp_path / "other.paraes", tmp_path / "other", keys=[other_key],
                        identities=[key])
    assert (tmp_path / "other").read_bytes() == plain
