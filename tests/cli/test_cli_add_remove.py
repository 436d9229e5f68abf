"""``rated add | remove``: change a live index's catalog, keeping every other tool's learned state; errors
are one line, a non-zero exit, and leave the store as it was."""

from __future__ import annotations

import importlib.util
import json
import unicodedata
from pathlib import Path

import numpy as np
import pytest
from cli_run import run

from rated.catalog.text import tool_text
from rated.cli import main
from rated.retriever import Retriever
from rated.store.open import open_store

CATALOG = [
    {"id": "mail.a", "name": "send_email", "description": "Send an email message", "provider": "mailcorp"},
    {"id": "mail.b", "name": "email_send", "description": "Send an email message"},
    {"id": "weather", "name": "weather_forecast", "description": "Weather forecast for a city"},
]
SMS = {"id": "sms", "name": "send_sms", "description": "Send an SMS text message to a phone number"}
SMS_QUERY = "send an sms text message to a phone"


def write(path: Path, payload: object) -> Path:
    path.write_text(payload if isinstance(payload, str) else json.dumps(payload), encoding="utf-8")
    return path


@pytest.fixture
def db(tmp_path, capsys):
    catalog = write(tmp_path / "cat.json", CATALOG)
    db = tmp_path / "rated.db"
    assert run(capsys, "index", catalog, "--db", db, "--encoder", "hash-64", "--json")[0] == 0
    # learned state to keep: weather failed twice for a query, mail.a succeeded once
    for tool, outcome in (("weather", "tool_error"), ("weather", "timeout"), ("mail.a", "success")):
        code, _, _ = run(
            capsys, "feedback", tool, "--outcome", outcome, "--query", "weather in Oslo", "--db", db
        )
        assert code == 0
    return db


def tools_json(capsys, db) -> dict[str, dict]:
    """``rated tools --json`` by id, without the policy's components: they move with the wall clock (a
    failing tool recovers over time); the stored states they come from are compared byte for byte."""
    code, out, _ = run(capsys, "tools", "--db", db, "--json")
    assert code == 0
    return {row["id"]: {k: v for k, v in row.items() if k != "components"} for row in json.loads(out)}


def test_add_then_search_finds_the_new_tool_and_the_others_keep_what_they_learned(
    store_contents, db, tmp_path, capsys
):
    before = tools_json(capsys, db)
    assert before["weather"]["failures"] == 2 and before["weather"]["healthy"] is False
    states = store_contents(db)[5]
    new = write(tmp_path / "new.json", [SMS, {"id": "fax", "name": "send_fax", "description": "Send a fax"}])

    code, out, err = run(capsys, "add", new, "--db", db, "--json")
    assert code == 0 and err == ""
    doc = json.loads(out)
    assert doc["added"] == ["sms", "fax"] and doc["count"] == 2 and doc["tools"] == 5

    hits = json.loads(run(capsys, "search", SMS_QUERY, "--db", db, "-k", "1", "--json")[1])["hits"]
    assert hits[0]["id"] == "sms"
    after = tools_json(capsys, db)
    assert {k: after[k] for k in before} == before  # prior, counts, health: all kept
    assert after["sms"]["successes"] == after["sms"]["failures"] == 0
    assert store_contents(db)[5] == states  # the stored learned state itself, byte for byte


def test_remove_drops_the_tool_and_its_state_and_keeps_the_others(store_contents, db, capsys):
    before = tools_json(capsys, db)
    states = store_contents(db)[5]
    assert "mail.a" in states
    code, out, err = run(capsys, "remove", "mail.a", "--db", db, "--json")
    assert code == 0 and err == ""
    assert json.loads(out) == {"db": str(db), "removed": ["mail.a"], "count": 1, "tools": 2}
    after = tools_json(capsys, db)
    assert set(after) == {"mail.b", "weather"}
    assert after["weather"] == before["weather"] and after["mail.b"] == before["mail.b"]
    assert store_contents(db)[5] == {k: v for k, v in states.items() if k != "mail.a"}
    hits = json.loads(run(capsys, "search", "send an email", "--db", db, "-k", "5", "--json")[1])["hits"]
    assert "mail.a" not in {h["id"] for h in hits}


def test_a_retriever_already_open_on_the_db_follows_add_and_remove(db, tmp_path, capsys):
    with Retriever.open(db) as live:  # a service or another process, opened before the change
        assert live.retrieve(SMS_QUERY, k=1)[0].id != "sms"
        assert run(capsys, "add", write(tmp_path / "sms.jsonl", json.dumps(SMS) + "\n"), "--db", db)[0] == 0
        assert live.retrieve(SMS_QUERY, k=1)[0].id == "sms"
        assert run(capsys, "remove", "sms", "weather", "--db", db)[0] == 0
        assert {t.tool.id for t in live.tools()} == {"mail.a", "mail.b"}
        assert live.retrieve(SMS_QUERY, k=1)[0].id != "sms"


def test_human_output_names_what_changed(db, tmp_path, capsys):
    many = [{"id": f"t{i:02d}", "name": f"tool_{i}", "description": f"Tool number {i}"} for i in range(25)]
    code, out, _ = run(capsys, "add", write(tmp_path / "many.json", many), "--db", db)
    assert code == 0 and "added 25 tools to" in out and "(now 28 tools)" in out
    assert "t00, t01" in out and "t19" in out and "t20" not in out and "and 5 more (--json lists all)" in out
    code, out, _ = run(capsys, "remove", "t03", "--db", db)
    assert code == 0 and "removed 1 tool from" in out and "(now 27 tools): t03" in out


def test_formats_other_than_tool_records_are_added_too(db, tmp_path, capsys):
    mcp = {"tools": [{"name": "create_event", "description": "Create a calendar event", "inputSchema": {}}]}
    openai = [{"type": "function", "function": {"name": "get_stock_price", "description": "Stock price"}}]
    code, out, _ = run(capsys, "add", write(tmp_path / "mcp.json", mcp), "--db", db, "--json")
    assert code == 0 and json.loads(out)["added"] == ["mcp:create_event"]
    code, out, _ = run(capsys, "add", write(tmp_path / "oa.json", openai), "--db", db, "--json")
    assert code == 0 and json.loads(out)["added"] == ["openai:get_stock_price"]
    assert {"mcp:create_event", "openai:get_stock_price"} <= set(tools_json(capsys, db))


@pytest.mark.parametrize(
    ("argv", "code", "message"),
    [
        (["add", "{tmp}/clash.json"], 4, "1 tool id(s) already indexed: 'weather'"),
        (["add", "{tmp}/empty.json"], 4, "the catalog holds no tools"),
        (["add", "{tmp}/missing.json"], 4, "catalog file not found"),
        (["remove", "nope"], 3, "unknown tool id: 'nope'"),
        (["remove", "mail.a", "nope"], 3, "unknown tool id: 'nope'"),  # all or nothing: mail.a stays
        (
            ["remove", "mail.a", "mail.b", "weather"],
            2,
            "cannot remove every tool: an index needs at least one",
        ),
    ],
)
def test_errors_are_one_line_non_zero_and_change_nothing(
    store_contents, db, tmp_path, capsys, argv, code, message
):
    write(tmp_path / "clash.json", [SMS, {**CATALOG[2], "description": "another weather tool"}])
    write(tmp_path / "empty.json", [])
    before = store_contents(db)
    got, out, err = run(capsys, *[a.format(tmp=tmp_path) for a in argv], "--db", db)
    assert got == code and out == ""
    assert err.count("\n") == 1 and err.startswith("error: ") and message in err, err
    assert store_contents(db) == before


def test_a_malformed_catalog_names_every_problem_and_changes_nothing(store_contents, db, tmp_path, capsys):
    bad = write(tmp_path / "bad.json", [SMS, {"id": "x", "name": ""}, 3, SMS])
    before = store_contents(db)
    code, out, err = run(capsys, "add", bad, "--db", db)
    assert code == 4 and out == ""
    assert "item 1, field 'name'" in err and "item 2: expected a JSON object" in err
    assert "'sms'" in err  # the id repeated in the file
    assert store_contents(db) == before


def test_a_database_without_an_index_is_a_clear_error(tmp_path, capsys):
    new = write(tmp_path / "new.json", [SMS])
    code, out, err = run(capsys, "add", new, "--db", tmp_path / "none.db")
    assert code != 0 and out == "" and err.startswith("error: ") and err.count("\n") == 1


def test_remove_finds_an_id_typed_in_the_other_unicode_form(tmp_path, capsys):
    cafe = unicodedata.normalize("NFC", "café.order")
    catalog = write(tmp_path / "c.json", [{"id": cafe, "name": "order_coffee"}, CATALOG[2]])
    db = tmp_path / "u.db"
    assert run(capsys, "index", catalog, "--db", db, "--encoder", "hash-64")[0] == 0
    code, out, _ = run(capsys, "remove", unicodedata.normalize("NFD", cafe), "--db", db, "--json")
    assert code == 0 and json.loads(out)["removed"] == [cafe]


def test_help_lists_add_and_remove(capsys):
    with pytest.raises(SystemExit):
        main(["--help"])
    out = capsys.readouterr().out
    assert "add       add tools to an index, keeping every other tool's learned state" in out
    assert "remove    remove tools (and their learned state) from an index" in out


def _tiny_bert():
    """The encoder tests' tiny BERT builder (tests/encode/tiny_bert.py), loaded by path: tests folders
    are not packages."""
    path = Path(__file__).parents[1] / "encode" / "tiny_bert.py"
    spec = importlib.util.spec_from_file_location("tiny_bert_for_cli_tests", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_add_encodes_with_the_custom_onnx_model_the_index_was_built_with(tmp_path, capsys):
    from rated.catalog.schema import Tool
    from rated.encode.onnx import OnnxEncoder
    from rated.encode.prepare import export_model_dir

    model_dir = export_model_dir(_tiny_bert().write_tiny_checkpoint(tmp_path / "ckpt"), tmp_path / "model")
    catalog = write(tmp_path / "c.json", CATALOG)
    db = tmp_path / "onnx.db"
    assert run(capsys, "index", catalog, "--db", db, "--encoder", model_dir, "--json")[0] == 0
    code, out, _ = run(capsys, "add", write(tmp_path / "sms.json", [SMS]), "--db", db, "--json")
    assert code == 0 and json.loads(out)["added"] == ["sms"]
    store = open_store(str(db), create=False)
    try:
        cat = store.load_catalog()
    finally:
        store.close()
    expected = OnnxEncoder.load(model_dir).encode_tools([tool_text(Tool(**SMS))])[0]
    row = cat.embeddings[list(cat.ids).index("sms")]
    assert np.allclose(row, expected / np.linalg.norm(expected), atol=1e-5)
