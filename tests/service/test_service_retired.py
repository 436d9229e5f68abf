"""A retired endpoint reported over HTTP (``POST /feedback`` with the tool's status) and MCP
(``report_outcome`` with ``status``): the same evidence as in Python (``rated.retired``), the answers and
the outcome log saying what the agents reported."""

from __future__ import annotations

import anyio
import pytest
from fastapi.testclient import TestClient

from rated import Tool
from rated.encode.testing import HashEncoder
from rated.retired import load_run
from rated.retriever import Retriever
from rated.service import Settings, create_app

QUERY = "send an email message"
TOOLS = [
    Tool(id="mail.a", name="send_email", description="Send an email message to a recipient"),
    Tool(id="mail.b", name="email_send", description="Send an email"),
    Tool(id="weather", name="weather_forecast", description="Weather forecast for a city"),
]


@pytest.fixture
def now() -> list[float]:
    return [1000.0]


@pytest.fixture
def retriever(now):
    r = Retriever.from_catalog(TOOLS, encoder=HashEncoder(64), clock=lambda: now[0])
    for i in range(20):  # a clean history: three different queries are enough evidence
        r.feedback("mail.a", "success", query=f"email message number {i}")
    now[0] += 60
    yield r
    r.close()


@pytest.fixture
def client(retriever):
    with TestClient(create_app(Settings(), retriever=retriever)) as c:
        yield c


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


def test_report_outcome_over_mcp_with_a_status_is_weighed_the_same(retriever):
    pytest.importorskip("mcp")
    from mcp import Client

    from rated.service.mcp_server import build_mcp_server

    server = build_mcp_server(retriever)
    healthy = []

    async def session() -> None:
        async with Client(server) as c:
            for who in ("Ada", "Bob", "Cy"):
                args = {"tool_id": "mail.a", "status": 404, "query": f"email to {who}"}
                result = await c.call_tool("report_outcome", args)
                assert not result.is_error, result.content
                assert result.structured_content["outcome"] == "caller_error"
                healthy.append(result.structured_content["healthy"])

    anyio.run(session)
    assert healthy == [True, True, False]
    assert [r.outcome for r in retriever.outcomes("mail.a", limit=3)] == ["caller_error"] * 3
