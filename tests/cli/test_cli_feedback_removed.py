"""``rated feedback`` when the tool is gone by the time its health is read (another process removed it, or
rebuilt the index, between the write and the read): the outcome is recorded, so the command says so and
exits 0, as POST /feedback answers ``healthy: null``; an error exit would have the caller report it again."""

from __future__ import annotations

import json

import pytest
from cli_run import run

from rated import Tool
from rated.encode.testing import HashEncoder
from rated.errors import UnknownToolError
from rated.retriever import Retriever

TOOLS = [
    Tool(id="mail", name="send_mail", description="send an email message"),
    Tool(id="weather", name="weather", description="weather forecast for a city"),
]


@pytest.fixture
def db(tmp_path, monkeypatch):
    db = tmp_path / "r.db"
    Retriever.from_catalog(TOOLS, db=db, encoder=HashEncoder(64)).close()

    def removed_meanwhile(self, tool_id, stats=True):
        raise UnknownToolError(tool_id, "removed by another process")

    monkeypatch.setattr(Retriever, "health", removed_meanwhile)
    return db


def test_json_answer_says_recorded_with_health_unknown(db, capsys):
    code, out, err = run(capsys, "feedback", "mail", "--outcome", "tool_error", "--db", db, "--json")
    assert code == 0, err
    answer = json.loads(out)
    assert answer["recorded"] is True and answer["healthy"] is None and answer["tool_id"] == "mail"
    assert "health could not be read" in err
    with Retriever.open(db) as r:
        assert [o.outcome for o in r.outcomes("mail")] == ["tool_error"]  # recorded once


def test_a_404_is_recorded_without_reading_its_run(db, capsys):
    code, out, err = run(capsys, "feedback", "mail", "--status", 404, "--query", "email Ada", "--db", db)
    assert code == 0, err
    assert "recorded caller_error" in out and "health unknown" in out
    assert "retired-endpoint rule" not in out
