"""A format v3 file whose second stanza slot its file key does not authenticate (issue 35): the
core opens it, as the CLI does (the body's key commitment decides the one file key), and the
Python package says which slot it ignored with a UserWarning in the CLI's words. The file is
the testkit's (tests/testkit/c256-header-unverified-second-slot.paraes, made by
scripts/make-testkit.py: slot 1 holds a valid slot for another file key).
"""

import hashlib
import json
import pathlib
import shutil
import warnings

import paraes

KIT = pathlib.Path(__file__).resolve().parents[3] / "tests" / "testkit"
NAME = "c256-header-unverified-second-slot.paraes"


def entry():
    for e in json.loads((KIT / "manifest.json").read_text()):
        if e["file"] == NAME:
            return e
    raise AssertionError(f"{NAME} is not in the testkit's manifest")


def test_a_v3_file_opens_and_names_the_ignored_slot(tmp_path):
    e = entry()
    assert e["expect"] == "ok", e
    key = bytes.fromhex(e["identities"][0]["hex"])
    src = tmp_path / NAME
    shutil.copy(KIT / NAME, src)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        paraes.decrypt_file(src, tmp_path / "out", keys=[key])
    said = [str(w.message) for w in caught if issubclass(w.category, UserWarning)]
    assert len(said) == 1, said
    assert "stanza slot 1" in said[0] and "is ignored" in said[0], said
    plain = (tmp_path / "out").read_bytes()
    assert len(plain) == e["plaintext_len"]
    assert hashlib.sha256(plain).hexdigest() == e["plaintext_sha256"]


def test_the_warning_can_be_made_an_error_and_then_nothing_is_written(tmp_path):
    e = entry()
    key = bytes.fromhex(e["identities"][0]["hex"])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        try:
            paraes.decrypt_file(KIT / NAME, tmp_path / "out", keys=[key])
        except UserWarning as w:
            assert "stanza slot 1" in str(w)
        else:
            raise AssertionError("the warning did not become an error")
    assert not (tmp_path / "out").exists()
