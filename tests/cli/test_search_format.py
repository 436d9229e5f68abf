"""``rated search --format``: the retrieved tools as a model API's definitions, with the name -> id map."""

from __future__ import annotations

import json

import pytest
from cli_run import run

from rated.catalog.loaders import load_catalog
from rated.cli import main

CATALOG = [
    {"id": "gmail.send", "name": "send_email", "description": "Send an email message"},
    {"id": "outlook.send", "name": "send_email", "description": "Send an email message now"},
    {
        "id": "weather",
        "name": "weather_forecast",
        "description": "Weather forecast for a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
    },
]


@pytest.fixture
def db(tmp_path, capsys):
    path = tmp_path / "cat.jsonl"
    path.write_text("\n".join(json.dumps(t) for t in CATALOG) + "\n")
    db = tmp_path / "rated.db"
    assert main(["index", str(path), "--db", str(db), "--encoder", "hash-64", "--json"]) == 0
    capsys.readouterr()
    return db


def search(capsys, db, *extra: str) -> tuple[int, str, str]:
    return run(capsys, "search", "send an email", "--db", db, "-k", 2, *extra)


@pytest.mark.parametrize("fmt", ["openai", "openai_responses", "anthropic", "mcp"])
def test_search_prints_definitions_and_the_ids_of_their_names(db, capsys, fmt):
    code, out, _ = search(capsys, db, "--format", fmt)
    assert code == 0
    doc = json.loads(out)
    assert doc["format"] == fmt and doc["query"] == "send an email" and doc["degraded"] is False
    assert len(doc["tools"]) == 2
    expected = {"gmail.send", "outlook.send"}
    assert set(doc["tool_ids"].values()) == expected
    # the output is itself a catalog file rated reads: each tool comes back under the name it is called by
    loaded = load_catalog(doc)
    assert {t.name for t in loaded} == set(doc["tool_ids"])
    if fmt == "mcp":
        assert doc["tool_ids"] == {"gmail.send": "gmail.send", "outlook.send": "outlook.send"}
    else:
        assert doc["tool_ids"] == {"gmail_send": "gmail.send", "outlook_send": "outlook.send"}


def test_format_replaces_the_table_and_json_answers(db, capsys):
    _, with_json, _ = search(capsys, db, "--json", "--format", "anthropic")
    _, alone, _ = search(capsys, db, "--format", "anthropic")
    assert with_json == alone and json.loads(alone)["tools"][0]["input_schema"]["type"] == "object"
    _, plain, _ = search(capsys, db, "--json")
    assert "tool_ids" not in json.loads(plain) and "call_name" not in plain


def test_an_unknown_format_is_refused_by_the_parser(db, capsys):
    with pytest.raises(SystemExit) as info:
        main(["search", "send an email", "--db", str(db), "--format", "gemini"])
    assert info.value.code == 2
    assert "openai_responses" in capsys.readouterr().err
