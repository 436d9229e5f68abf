"""``rated data prepare``: a failed or interrupted run leaves the previous --out folder as it was."""

from __future__ import annotations

import errno
import os

import pytest

import rated.bench.datasets as datasets
from rated.bench.dataset import Dataset, Query
from rated.bench.datasets import Prepared
from rated.catalog.schema import Tool
from rated.cli import main


def _tiny(version: int) -> Prepared:
    tools = [Tool(id=f"t{i}", name=f"tool_{i}_v{version}", description=f"does {i}") for i in range(2)]
    queries = [Query(id=f"q{i}", text=f"do {i} v{version}", relevant=(f"t{i}",)) for i in range(2)]
    return Prepared(
        Dataset(name="tiny", tools=tools, queries=queries),
        irrelevance=[{"id": "x", "text": f"joke {version}"}],
    )


def _snapshot(folder) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


@pytest.mark.parametrize(
    ("error", "code", "message"),
    [
        (OSError(errno.ENOSPC, "No space left on device"), 1, "cannot write {out}: No space left on device"),
        (KeyboardInterrupt(), 130, "interrupted"),
    ],
)
def test_a_failed_prepare_keeps_the_previous_folder(tmp_path, capsys, monkeypatch, error, code, message):
    out = tmp_path / "tiny"
    monkeypatch.setitem(datasets.LOADERS, "tiny", lambda: _tiny(1))
    assert main(["data", "prepare", "tiny", "--out", str(out)]) == 0
    assert "tiny: 2 tools, 2 queries (test 2)" in capsys.readouterr().out
    before = _snapshot(out)

    def fail(rows, path):
        raise error

    monkeypatch.setitem(datasets.LOADERS, "tiny", lambda: _tiny(2))
    monkeypatch.setattr(datasets, "write_jsonl", fail)  # after tools, queries and meta were written
    assert main(["data", "prepare", "tiny", "--out", str(out)]) == code
    err = capsys.readouterr().err
    assert message.format(out=out) in err and "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert _snapshot(out) == before and os.listdir(tmp_path) == ["tiny"]
