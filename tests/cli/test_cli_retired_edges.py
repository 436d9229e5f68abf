"""The retired-endpoint rule's state in the CLI at its edges: ``rated tools --json`` rows as ``GET /tools``
lists them, ``rated feedback`` naming the tool as the catalog spells it, and an evidence read that fails
after the report was recorded. The catalog and its clean history: ``retired_catalog`` (the ``db`` fixture
of ``conftest.py``)."""

from __future__ import annotations

import json
import unicodedata

import pytest
from cli_run import run
from fastapi.testclient import TestClient

from rated.errors import StoreError
from rated.retriever import Retriever
from rated.service import Settings, create_app
from rated.store.sqlite import SQLiteStore
from retired_catalog import CAFE


def feedback(capsys, db, tool_id: str, *argv: object) -> tuple[int, str, str]:
    return run(capsys, "feedback", tool_id, *argv, "--db", db)


def test_tools_json_rows_are_the_rows_of_get_tools(db, capsys):
    for who in ("Ada", "Bob", "Cy"):
        feedback(capsys, db, "mail.a", "--status", "404", "--query", f"email {who}")
    feedback(capsys, db, "mail.b", "--status", "400", "--query", "email Dee")  # a caller error, no run
    code, out, _ = run(capsys, "tools", "--db", db, "--json")
    assert code == 0
    cli = {row["id"]: row for row in json.loads(out)}
    with Retriever.open(db) as r, TestClient(create_app(Settings(), retriever=r)) as client:
        http = {row["id"]: row for row in client.get("/tools").json()["data"]}
    assert cli["mail.a"]["retired"]["holds"] is True
    assert "retired" not in cli["mail.b"] and "retired" not in cli[CAFE]  # no run: no null, as over HTTP
    # the same rows (components move with the wall clock between the two reads: their names only)
    assert {t: {**row, "components": sorted(row["components"])} for t, row in cli.items()} == {
        t: {**row, "components": sorted(row["components"])} for t, row in http.items()
    }


def test_feedback_names_the_tool_as_the_catalog_spells_it(db, capsys):
    nfd = unicodedata.normalize("NFD", CAFE)
    for day in ("Mon", "Tue"):
        feedback(capsys, db, nfd, "--status", "404", "--query", f"menu of {day}")
    code, out, _ = feedback(capsys, db, nfd, "--status", "404", "--query", "menu of Wed", "--json")
    answer = json.loads(out)
    assert code == 0 and answer["tool_id"] == CAFE  # as POST /feedback answers
    assert answer["counted_as"] == "tool_error" and answer["retired"]["queries"] == 3
    code, out, _ = feedback(capsys, db, nfd, "--status", "404", "--query", "menu of Thu")
    assert code == 0 and f"for {CAFE};" in out


@pytest.mark.parametrize("as_json", [True, False])
def test_a_failing_evidence_read_after_the_report_still_says_recorded(db, capsys, monkeypatch, as_json):
    for who in ("Ada", "Bob"):
        feedback(capsys, db, "mail.a", "--status", "404", "--query", f"email {who}")

    def fail(*args):
        raise StoreError("database is locked")

    monkeypatch.setattr(SQLiteStore, "load_evidence", fail)  # the read after the report; weigh updates
    monkeypatch.setattr(SQLiteStore, "load_evidence_many", fail, raising=False)
    code, out, err = feedback(
        capsys, db, "mail.a", "--status", "404", "--query", "email Cy", *(["--json"] if as_json else [])
    )
    monkeypatch.undo()
    assert code == 0, err  # recorded: an error exit would have it reported (and recorded) again
    assert "could not read the retired-endpoint evidence: database is locked" in err
    if as_json:
        answer = json.loads(out)
        assert answer["recorded"] is True and answer["counted_as"] == "tool_error"
        assert "retired" not in answer
    else:
        assert "recorded caller_error (HTTP 404) for mail.a" in out and "retired-endpoint rule" not in out
    with Retriever.open(db) as r:
        assert len(r.store.outcomes("mail.a", limit=None)) == 23  # 20 successes, three 404s: once each
