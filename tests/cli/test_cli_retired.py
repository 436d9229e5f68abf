"""``rated feedback --status 404`` from separate runs of the command: the evidence of a retired endpoint
is kept in the database, so each run adds to what the others reported (``rated.retired``). The catalog
and its clean history: ``retired_catalog`` (the ``db`` fixture of ``conftest.py``)."""

from __future__ import annotations

import json

from cli_run import run

from rated.retired import load_run
from rated.retriever import Retriever


def test_feedback_status_404_from_separate_runs_adds_up(db, capsys):
    for who in ("Ada", "Bob", "Cy"):
        code, out, err = run(
            capsys, "feedback", "mail.a", "--status", "404", "--query", f"email {who}", "--db", db, "--json"
        )
        assert code == 0, err
        assert json.loads(out)["outcome"] == "caller_error"
    with Retriever.open(db) as r:
        run_ = load_run(r.store, "mail.a")
        assert run_ is not None and len(run_.queries) == 3 and run_.counted == 1
        assert r.health("mail.a").stats.caller_errors == 3 and r.health("mail.a").stats.failures == 0
    code, out, _ = run(capsys, "feedback", "mail.a", "--status", "400", "--query", "email Dee", "--db", db)
    assert code == 0 and "recorded caller_error (HTTP 400)" in out
    with Retriever.open(db) as r:
        assert load_run(r.store, "mail.a").counted == 1  # a 400 is no evidence
