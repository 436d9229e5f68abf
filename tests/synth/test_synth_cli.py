"""`rated synth` end to end against the fake endpoint; errors become one line and an exit code."""

from __future__ import annotations

import json

from rated.catalog.loaders import load_catalog, save_catalog
from rated.catalog.schema import Tool
from rated.cli import main
from rated.synth.records import read_pairs


def _catalog(tmp_path, n=8):
    tools = [Tool(id=f"t{i}", name=f"tool{i}", description=f"Tool {i} helps with job {i}") for i in range(n)]
    return save_catalog(tools, tmp_path / "catalog.jsonl")


def test_synth_cli_writes_pairs_and_catalog_snapshot(tmp_path, chat_server, capsys):
    cat = _catalog(tmp_path)
    out = tmp_path / "syn.jsonl"
    argv = [
        "synth",
        "--catalog",
        str(cat),
        "--out",
        str(out),
        "--base-url",
        chat_server.base_url,
        "--model",
        "fake",
        "--queries",
        "4",
        "--limit",
        "5",
        "--encoder",
        "none",
        "--json",
    ]
    assert main(argv) == 0
    stats = json.loads(capsys.readouterr().out)
    assert stats["targeted_tools"] == 5 and stats["catalog_tools"] == 8 and stats["generated_now"] == 5
    recs = read_pairs(out)
    assert len(recs) == 20 and len({r.tool_id for r in recs}) == 5
    assert all(len(r.random_negatives) == 1 and not r.hard_negatives for r in recs)  # --encoder none
    assert [t.id for t in load_catalog(tmp_path / "syn.tools.jsonl")] == [f"t{i}" for i in range(8)]
    # rerun: nothing generated again
    assert main(argv) == 0
    assert json.loads(capsys.readouterr().out)["generated_now"] == 0


def test_synth_cli_reads_a_dataset_folder_and_reports_bad_key(tmp_path, chat_server, capsys):
    folder = tmp_path / "ds"
    folder.mkdir()
    _catalog(folder).rename(folder / "tools.jsonl")
    chat_server.status_always = 401
    code = main(
        [
            "synth",
            "--catalog",
            str(folder),
            "--out",
            str(tmp_path / "s.jsonl"),
            "--base-url",
            chat_server.base_url,
            "--model",
            "m",
            "--encoder",
            "none",
        ]
    )
    assert code == 2  # ConfigError
    assert "401" in capsys.readouterr().err


def test_synth_cli_without_endpoint_is_a_config_error(tmp_path, monkeypatch, capsys):
    monkeypatch.delenv("RATED_SYNTH_BASE_URL", raising=False)
    code = main(["synth", "--catalog", str(_catalog(tmp_path)), "--out", str(tmp_path / "s.jsonl")])
    assert code == 2 and "RATED_SYNTH_BASE_URL" in capsys.readouterr().err


def test_reuse_only_rebuilds_from_the_log_without_an_endpoint(tmp_path, chat_server, monkeypatch, capsys):
    cat = _catalog(tmp_path)
    out = tmp_path / "syn.jsonl"
    base = [
        "synth",
        "--catalog",
        str(cat),
        "--out",
        str(out),
        "--encoder",
        "none",
        "--json",
        "--queries",
        "3",
    ]
    assert main([*base, "--base-url", chat_server.base_url, "--model", "m", "--limit", "2"]) == 0
    capsys.readouterr()
    monkeypatch.delenv("RATED_SYNTH_BASE_URL", raising=False)
    n_requests = len(chat_server.requests)
    assert main([*base, "--reuse-only", "--max-per-tool", "1"]) == 0
    stats = json.loads(capsys.readouterr().out)
    assert (
        stats["generator"] == "log"
        and stats["generated_now"] == 0
        and len(chat_server.requests) == n_requests
    )
    assert len(read_pairs(out)) == 2
