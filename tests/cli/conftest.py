"""Fixtures the CLI tests share (a fixture, not an import: the tests folder is not a package).

``db`` is the retired-endpoint tests' set-up (``retired_catalog``), indexed by ``rated index``: a module
with another catalog defines its own ``db``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rated.cli import main
from rated.retriever import Retriever
from retired_catalog import TOOLS, record_clean_history


@pytest.fixture
def db(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    """A database indexed from the retired-endpoint catalog as a JSONL file (UTF-8, ids as typed), with a
    clean history recorded after the command exits, as another process would."""
    catalog, db = tmp_path / "cat.jsonl", tmp_path / "rated.db"
    rows = [{"id": t.id, "name": t.name, "description": t.description} for t in TOOLS]
    catalog.write_text(
        "\n".join(json.dumps(row, ensure_ascii=False) for row in rows) + "\n", encoding="utf-8"
    )
    assert main(["index", str(catalog), "--db", str(db), "--encoder", "hash-64"]) == 0, capsys.readouterr()
    capsys.readouterr()  # the index command's report: not what the test reads
    with Retriever.open(db) as r:
        record_clean_history(r)
    return db
