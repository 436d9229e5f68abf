"""`rated index` and `rated tools --unhealthy` headings: one line however long (logs are grepped line by
line; rich wrapped the index summary at 80 columns when piped), and "1 tool", not "1 tools"."""

from __future__ import annotations

import json

from rated.cli import main
from rated.retriever import Retriever


def _catalog(tmp_path, n: int):
    path = tmp_path / "cat.jsonl"
    rows = [{"id": f"t{i}", "name": f"tool_{i}", "description": f"tool number {i}"} for i in range(n)]
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    return path


def test_the_index_summary_is_one_line_and_counts_one_tool_as_one(tmp_path, capsys):
    folder = tmp_path / ("a_folder_with_a_long_name_" * 3)
    folder.mkdir()
    db = folder / "rated.db"
    assert main(["index", str(_catalog(tmp_path, 1)), "--db", str(db), "--encoder", "hash-64"]) == 0
    out = capsys.readouterr().out
    assert out.count("\n") == 1, out
    assert out.startswith("indexed 1 tool into ") and "policy rated)" in out


def test_the_unhealthy_listing_counts_one_tool_as_one(tmp_path, capsys):
    db = tmp_path / "rated.db"
    assert main(["index", str(_catalog(tmp_path, 2)), "--db", str(db), "--encoder", "hash-64"]) == 0
    with Retriever.open(db) as r:
        r.feedback("t0", "tool_error")
    capsys.readouterr()
    assert main(["tools", "--db", str(db), "--unhealthy"]) == 0
    assert "1 unhealthy tool in " in capsys.readouterr().out


def test_no_unhealthy_tool_is_one_line_not_an_empty_table(tmp_path, capsys):
    db = tmp_path / "rated.db"
    assert main(["index", str(_catalog(tmp_path, 2)), "--db", str(db), "--encoder", "hash-64"]) == 0
    capsys.readouterr()
    assert main(["tools", "--db", str(db), "--unhealthy"]) == 0
    out = capsys.readouterr().out
    assert out == f"no unhealthy tools in {db}\n", out
    assert main(["tools", "--db", str(db), "--unhealthy", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == []
