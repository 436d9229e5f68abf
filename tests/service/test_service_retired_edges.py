"""The retired-endpoint rule's state over HTTP at its edges: a clock gone back past the tool's last success,
an evidence read that fails after the report was persisted, the cost of ``GET /tools`` with a large
catalog, a tool typed in another Unicode form, and a run that ended or expired. The catalog and its clean
history: ``retired_catalog`` (the ``retriever`` and ``client`` fixtures of ``conftest.py``)."""

from __future__ import annotations

import unicodedata

import pytest

from rated.errors import StoreError
from retired_catalog import CAFE, TOOLS


def report(client, status: int, query: str | None, tool_id: str = "mail.a") -> dict:
    answer = client.post("/feedback", json={"tool_id": tool_id, "status": status, "query": query})
    assert answer.status_code == 200, answer.text
    return answer.json()


def test_a_clock_gone_back_past_the_last_success_still_shows_the_run(client, now):
    now[0] -= 600  # NTP stepped the clock back: the 404s log earlier than the last success
    answers = [report(client, 404, f"email to {who}") for who in ("Ada", "Bob", "Cy")]
    assert answers[2]["counted_as"] == "tool_error"  # the rule holds: the policy learned a tool error
    rows = {row["id"]: row for row in client.get("/tools").json()["data"]}
    assert rows["mail.a"]["last_outcome"] == "success"  # the latest by time
    assert rows["mail.a"]["retired"]["holds"] is True  # shown all the same, as the feedback said
    assert client.get("/tools/mail.a").json()["retired"] == rows["mail.a"]["retired"]


def test_get_tools_reads_all_runs_at_once(client, retriever):
    for tool in TOOLS:  # every tool with a caller error logged, one of them with a run
        report(client, 400, "bad arguments", tool.id)
    report(client, 404, "forecast for Oslo", "weather")
    calls: list[str] = []
    store = retriever.store
    for name in ("load_evidence", "load_evidence_many"):
        method = getattr(store, name, None)
        if method is None:
            continue

        def counted(*args, _name=name, _method=method):
            calls.append(_name)
            return _method(*args)

        setattr(store, name, counted)
    rows = {row["id"]: row for row in client.get("/tools").json()["data"]}
    assert rows["weather"]["retired"]["queries"] == 1 and "retired" not in rows["mail.a"]
    assert calls == ["load_evidence_many"]  # one read for the catalog, not one per tool
    calls.clear()
    assert client.get("/dashboard").status_code == 200
    assert calls == ["load_evidence_many"]  # the dashboard's rows too


@pytest.mark.parametrize("error", [StoreError("the store went away"), RuntimeError("a bug in a store")])
def test_a_failing_evidence_read_after_the_report_still_answers_recorded(client, retriever, error, caplog):
    for who in ("Ada", "Bob"):
        report(client, 404, f"email to {who}")

    def fail(*args):
        raise error

    retriever.store.load_evidence = fail
    retriever.store.load_evidence_many = fail
    before = len(retriever.store.outcomes("mail.a", limit=None))
    answer = report(client, 404, "email to Cy")  # persisted first: an error now would have it sent twice
    assert len(retriever.store.outcomes("mail.a", limit=None)) == before + 1
    assert answer["recorded"] is True  # and the health read did not fail: not "removed since" (null)
    assert answer["healthy"] is retriever.health("mail.a").healthy is not None
    assert answer["counted_as"] == "tool_error"  # what the policy learned, known without the read
    assert "retired" not in answer  # the run could not be read: left out, not made up
    assert "retired-endpoint evidence" in caplog.text  # and the server log says why


def test_a_tool_typed_in_another_unicode_form(client):
    nfd = unicodedata.normalize("NFD", CAFE)
    answers = [report(client, 404, f"menu of {day}", nfd) for day in ("Mon", "Tue", "Wed")]
    assert [a["tool_id"] for a in answers] == [CAFE] * 3  # as the catalog spells it
    assert answers[2]["counted_as"] == "tool_error" and answers[2]["retired"]["queries"] == 3
    rows = {row["id"]: row for row in client.get("/tools").json()["data"]}
    assert rows[CAFE]["retired"]["holds"] is True
    assert client.get(f"/tools/{nfd}").json()["retired"] == rows[CAFE]["retired"]


def test_no_run_once_it_ended_or_expired(client, now):
    for who in ("Ada", "Bob", "Cy"):
        report(client, 404, f"email to {who}")
    assert client.get("/tools/mail.a").json()["retired"]["holds"] is True
    now[0] += 86_400 + 1  # a day on: the evidence is older than the window
    assert "retired" not in client.get("/tools/mail.a").json()
    assert "retired" not in client.get("/tools").json()["data"][0]
    report(client, 404, "email to Dee")  # a new run of one query
    assert client.get("/tools/mail.a").json()["retired"]["queries"] == 1
    assert client.post("/feedback", json={"tool_id": "mail.a", "outcome": "success"}).status_code == 200
    assert "retired" not in client.get("/tools/mail.a").json()  # a success ended it
