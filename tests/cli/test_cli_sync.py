"""``rated sync CATALOG``: keep an index in step with a tools file. New tools are added, changed ones
updated in place with their learned state kept, ``--prune`` removes the rest; errors are one line, a
non-zero exit, and leave the store as it was."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_run import run

from rated.cli import main
from rated.retriever import Retriever

CATALOG = [
    {"id": "mail.a", "name": "send_email", "description": "Send an email message", "provider": "mailcorp"},
    {"id": "mail.b", "name": "email_send", "description": "Send an email message"},
    {"id": "weather", "name": "weather_forecast", "description": "Weather forecast for a city"},
]
FLIGHTS = {
    "id": "weather",
    "name": "weather_forecast",
    "description": "Book a flight ticket between airports",
}
SMS = {"id": "sms", "name": "send_sms", "description": "Send an SMS text message to a phone number"}


def write(path: Path, payload: object) -> Path:
    path.write_text(json.dumps(payload), encoding="utf-8")
    return path


@pytest.fixture
def db(tmp_path, capsys):
    db = tmp_path / "rated.db"
    assert (
        run(capsys, "index", write(tmp_path / "cat.json", CATALOG), "--db", db, "--encoder", "hash-64")[0]
        == 0
    )
    for tool, outcome in (("weather", "tool_error"), ("weather", "timeout"), ("mail.a", "success")):
        assert run(capsys, "feedback", tool, "--outcome", outcome, "--query", "weather", "--db", db)[0] == 0
    return db


def test_sync_adds_updates_and_keeps_learned_state(store_contents, db, tmp_path, capsys):
    states = store_contents(db)[5]
    catalog = write(tmp_path / "new.json", [CATALOG[0], FLIGHTS, SMS])
    code, out, err = run(capsys, "sync", catalog, "--db", db, "--json")
    assert code == 0 and err == ""
    got = json.loads(out)
    assert (got["added"], got["updated"], got["removed"], got["unchanged"]) == (
        ["sms"],
        ["weather"],
        [],
        ["mail.a"],
    )
    assert got["counts"] == {"added": 1, "updated": 1, "removed": 0, "unchanged": 1} and got["tools"] == 4
    assert store_contents(db)[5] == states  # weather's and mail.a's learned state, byte for byte
    with Retriever.open(db) as r:
        hits = r.retrieve("book a flight ticket", k=4)  # ranked down by its failures, matched by its text
        assert max(hits, key=lambda h: h.semantic).id == "weather"


def test_prune_removes_what_the_file_no_longer_holds(db, tmp_path, capsys):
    catalog = write(tmp_path / "new.json", [CATALOG[0], CATALOG[2]])
    code, out, _ = run(capsys, "sync", catalog, "--db", db, "--prune", "--json")
    assert code == 0 and json.loads(out)["removed"] == ["mail.b"] and json.loads(out)["tools"] == 2


def test_a_second_identical_sync_changes_nothing(store_contents, db, tmp_path, capsys):
    catalog = write(tmp_path / "new.json", [CATALOG[0], FLIGHTS, SMS])
    assert run(capsys, "sync", catalog, "--db", db, "--prune")[0] == 0
    before = store_contents(db)
    code, out, _ = run(capsys, "sync", catalog, "--db", db, "--prune")
    assert code == 0 and "holds these 3 tools as given: nothing to do" in out
    assert store_contents(db) == before


def test_human_output_counts_and_names_each_kind(db, tmp_path, capsys):
    catalog = write(tmp_path / "new.json", [FLIGHTS, SMS])
    code, out, _ = run(capsys, "sync", catalog, "--db", db, "--prune")
    assert code == 0 and "(now 2 tools): 1 added, 1 updated, 2 removed, 0 unchanged" in out
    assert "added: sms" in out and "updated: weather" in out and "removed: mail.a, mail.b" in out


@pytest.mark.parametrize(
    ("payload", "prune", "code", "message"),
    [
        ([{"id": "other", "name": "other"}], True, 2, "would remove every indexed tool"),
        ([], False, 4, "the catalog holds no tools"),
        (None, False, 4, "catalog file not found"),
    ],
)
def test_errors_are_one_line_non_zero_and_change_nothing(
    store_contents, db, tmp_path, capsys, payload, prune, code, message
):
    path = tmp_path / "c.json" if payload is None else write(tmp_path / "c.json", payload)
    before = store_contents(db)
    got, out, err = run(capsys, "sync", path, "--db", db, *(["--prune"] if prune else []))
    assert got == code and out == ""
    assert err.count("\n") == 1 and err.startswith("error: ") and message in err, err
    assert store_contents(db) == before


def test_a_malformed_catalog_names_every_problem_and_changes_nothing(store_contents, db, tmp_path, capsys):
    before = store_contents(db)
    code, out, err = run(capsys, "sync", write(tmp_path / "bad.json", [SMS, SMS]), "--db", db, "--prune")
    assert code == 4 and out == "" and "duplicate id 'sms'" in err
    assert store_contents(db) == before


def test_help_lists_sync(capsys):
    with pytest.raises(SystemExit):
        main(["--help"])
    assert "sync      make an index hold a tools file" in capsys.readouterr().out
