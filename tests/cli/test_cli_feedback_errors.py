"""``rated feedback`` and ``POST /feedback`` handle the same errors alike, on the same database:

- a user error (an unknown tool, a status or hint out of range, an unknown outcome) records nothing and is
  refused in one clear line: the CLI exits non-zero with one ``error:`` line (never a traceback), the
  service answers 4xx naming the error class;
- a failure after the outcome was recorded (the read of the tool's 404/410 run), whatever its type, does
  not fail the report: both say recorded, without the run, so that the caller does not report (and record)
  it again. The catalog and its clean history: ``retired_catalog`` (the ``db`` fixture of conftest.py)."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from cli_run import run
from fastapi.testclient import TestClient

from rated.errors import StoreError
from rated.retriever import Retriever
from rated.service import Settings, create_app
from rated.store.sqlite import SQLiteStore

USER_ERRORS = [  # (CLI arguments after the tool id, the same as a POST /feedback body, the HTTP status)
    (["nope", "--outcome", "timeout"], {"tool_id": "nope", "outcome": "timeout"}, 404),
    (["mail.a", "--status", "700"], {"tool_id": "mail.a", "status": 700}, 422),
    (["mail.a", "--outcome", "bogus"], {"tool_id": "mail.a", "outcome": "bogus"}, 422),
    (
        ["mail.a", "--outcome", "timeout", "--retry-after", "-3"],
        {"tool_id": "mail.a", "outcome": "timeout", "retry_after": -3},
        422,
    ),
]


@pytest.fixture
def client(db) -> Iterator[TestClient]:
    with Retriever.open(db) as r, TestClient(create_app(Settings(), retriever=r)) as c:
        yield c


def recorded(db) -> int:
    with Retriever.open(db) as r:
        return len(r.store.outcomes(None, limit=None))


@pytest.mark.parametrize(("argv", "body", "status"), USER_ERRORS)
def test_a_user_error_records_nothing_and_is_refused_in_one_line_by_both(
    db, capsys, client, argv, body, status
):
    before = recorded(db)
    code, out, err = run(capsys, "feedback", *argv, "--db", db)
    assert code != 0 and out == ""
    assert err.startswith("error: ") and len(err.strip().splitlines()) == 1 and "Traceback" not in err
    answer = client.post("/feedback", json=body)
    assert answer.status_code == status and answer.json()["error"], answer.text
    assert recorded(db) == before


@pytest.mark.parametrize(
    "failure",
    [StoreError("database is locked"), ConnectionResetError("a store of one's own lost its server")],
    ids=["rated", "other"],
)
def test_a_failing_evidence_read_after_the_report_is_recorded_once_by_both(
    db, capsys, client, monkeypatch, failure
):
    def fail(*args):
        raise failure

    monkeypatch.setattr(SQLiteStore, "load_evidence_many", fail, raising=False)  # the read after it
    before = recorded(db)
    code, out, err = run(
        capsys, "feedback", "mail.a", "--status", "404", "--query", "email Ada", "--db", db, "--json"
    )
    assert code == 0, err  # recorded: an error exit would have it reported (and recorded) again
    assert "Traceback" not in err and "could not read the retired-endpoint evidence" in err
    assert str(failure) in err
    cli = json.loads(out)
    answer = client.post("/feedback", json={"tool_id": "mail.a", "status": 404, "query": "email Bob"})
    assert answer.status_code == 200, answer.text
    assert cli == answer.json()  # recorded, health read, no run
    assert cli["recorded"] is True and "retired" not in cli
    assert recorded(db) == before + 2  # once each
