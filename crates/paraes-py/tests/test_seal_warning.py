"""The core's seal warns, as a value, when post-quantum recipients share a file with classical
ones; Python says it as a UserWarning (the CLI prints the same line), before anything is
written: made an error by a warnings filter, it leaves no output."""
import warnings

import pytest

import paraes


def test_mixed_recipients_warn_and_one_kind_alone_does_not(tmp_path):
    _, pq = paraes.generate_identity(pq=True)
    _, classical = paraes.generate_identity()
    src = tmp_path / "plain"
    src.write_bytes(b"x" * 1000)
    with pytest.warns(UserWarning, match="only as safe as those"):
        paraes.encrypt_file(src, tmp_path / "mixed.paraes", recipients=[pq, classical])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        paraes.encrypt_file(src, tmp_path / "pq.paraes", recipients=[pq])
        with pytest.raises(UserWarning):
            paraes.encrypt_file(src, tmp_path / "refused.paraes", recipients=[pq, classical])
    assert not (tmp_path / "refused.paraes").exists()
