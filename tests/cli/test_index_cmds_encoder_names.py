"""``rated index --encoder NAME`` through the shared resolver (``rated.encode.encoder_from_spec``): a name
that is not one is a one-line error naming it (exit 2), never a traceback, and no database is made."""

from __future__ import annotations

import json

import pytest
from cli_run import run


@pytest.fixture
def catalog(tmp_path):
    path = tmp_path / "cat.jsonl"
    path.write_text(json.dumps({"id": "mail", "name": "send_email", "description": "Send an email"}) + "\n")
    return path


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("hash-1", "encoder 'hash-1': expected 'hash' or 'hash-DIM'"),  # was a ValueError traceback
        ("hash-\u00b2", "encoder 'hash-\u00b2': expected 'hash' or 'hash-DIM'"),  # was a ValueError too
        ("{tmp}/no-model", "encoder '{tmp}/no-model': not 'default', 'hash', 'hash-DIM' or an existing ONNX"),
    ],
)
def test_a_bad_encoder_name_is_one_line_naming_it(tmp_path, capsys, catalog, name, message):
    name, message = name.format(tmp=tmp_path), message.format(tmp=tmp_path)
    code, out, err = run(capsys, "index", catalog, "--db", tmp_path / "new.db", "--encoder", name)
    assert code == 2
    assert message in err and "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "new.db").exists()


def test_a_hash_name_indexes_with_that_size(tmp_path, capsys, catalog):
    code, out, _ = run(capsys, "index", catalog, "--db", tmp_path / "h.db", "--encoder", "hash-32", "--json")
    assert code == 0
    assert json.loads(out)["encoder"].startswith("hash-32")
