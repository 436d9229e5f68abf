"""A retired endpoint reported over HTTP (``POST /feedback`` with the tool's status) and MCP
(``report_outcome`` with ``status``): the same evidence as in Python (``rated.retired``), the answers and
the outcome log saying what the agents reported. The catalog and its clean history: ``retired_catalog``
(the ``retriever`` and ``client`` fixtures of ``conftest.py``)."""

from __future__ import annotations

import pytest

from rated.retired import load_run

QUERY = "send an email message"


def top(client) -> str:
    return client.post("/retrieve", json={"query": QUERY, "k": 1}).json()["hits"][0]["id"]


@pytest.mark.parametrize("status", [404, 410])
def test_404s_for_different_queries_over_http_demote_the_tool(client, retriever, status):
    assert top(client) == "mail.a"
    answers = [
        client.post("/feedback", json={"tool_id": "mail.a", "status": status, "query": f"email to {who}"})
        for who in ("Ada", "Bob", "Cy")
    ]
    assert [a.status_code for a in answers] == [200] * 3
    # each answer says what was recorded (the agent's caller error) and the health right after it
    assert [(a.json()["outcome"], a.json()["healthy"]) for a in answers] == [
        ("caller_error", True),
        ("caller_error", True),
        ("caller_error", False),
    ]
    assert top(client) == "mail.b"
    row = client.get("/tools/mail.a").json()
    assert (row["successes"], row["failures"], row["caller_errors"]) == (20, 0, 3)
    assert [r.outcome for r in retriever.outcomes("mail.a", limit=3)] == ["caller_error"] * 3
    metrics = client.get("/metrics").text
    assert 'rated_feedback_total{outcome="caller_error"} 3.0' in metrics


def test_one_query_or_another_4xx_over_http_never_does(client, retriever):
    for _ in range(5):
        body = {"tool_id": "mail.a", "status": 404, "query": "email to nobody"}
        assert client.post("/feedback", json=body).json()["healthy"] is True
    for i in range(10):
        body = {"tool_id": "mail.a", "status": 400, "query": f"email to {i}"}
        assert client.post("/feedback", json=body).json()["healthy"] is True
    assert top(client) == "mail.a"
    run = load_run(retriever.store, "mail.a")
    assert run is not None and len(run.queries) == 1 and run.counted == 0


def test_report_outcome_over_mcp_with_a_status_is_weighed_the_same(retriever, report_over_mcp):
    answers = report_over_mcp(
        [{"tool_id": "mail.a", "status": 404, "query": f"email to {who}"} for who in ("Ada", "Bob", "Cy")]
    )
    assert [a["outcome"] for a in answers] == ["caller_error"] * 3
    assert [a["healthy"] for a in answers] == [True, True, False]
    assert [r.outcome for r in retriever.outcomes("mail.a", limit=3)] == ["caller_error"] * 3
