"""The retired-endpoint rule made visible over HTTP and MCP: a feedback answer says when its 404/410 was
counted as ``tool_error`` (``counted_as``) and gives the tool's run of them (``retired``); ``GET /tools``
and ``GET /tools/{id}`` show each tool's run, whether it holds and from how many queries. The catalog and
its clean history: ``retired_catalog`` (the ``retriever`` and ``client`` fixtures of ``conftest.py``)."""

from __future__ import annotations


def report(client, status: int, query: str | None = None, tool_id: str = "mail.a") -> dict:
    body = {"tool_id": tool_id, "status": status} | ({} if query is None else {"query": query})
    answer = client.post("/feedback", json=body)
    assert answer.status_code == 200, answer.text
    return answer.json()


def test_feedback_says_when_a_404_was_counted_as_tool_error(client):
    answers = [report(client, 404, f"email to {who}") for who in ("Ada", "Bob", "Cy")]
    assert [a["outcome"] for a in answers] == ["caller_error"] * 3  # what was recorded
    assert [a.get("counted_as") for a in answers] == [None, None, "tool_error"]
    assert [(a["retired"]["queries"], a["retired"]["holds"]) for a in answers] == [
        (1, False),
        (2, False),
        (3, True),
    ]
    third = answers[2]["retired"]
    assert (third["need"], third["counted"], third["since"]) == (3, 1, 1060.0)
    assert third["summary"].startswith("404/410 from 3 different queries since the last success")
    again = report(client, 410)  # no query: no new evidence, but the run holds, so it counts
    assert again["counted_as"] == "tool_error" and again["retired"]["counted"] == 2


def test_other_reports_carry_no_run(client):
    report(client, 404, "email to Ada")
    other = report(client, 400, "email to Bob")  # no evidence: nothing read, nothing said (no nulls)
    assert other == {
        "recorded": True,
        "tool_id": "mail.a",
        "outcome": "caller_error",
        "retry_after": None,
        "healthy": True,
    }
    named = client.post("/feedback", json={"tool_id": "mail.a", "outcome": "success"}).json()
    assert "counted_as" not in named and "retired" not in named
    after = report(client, 404, "email to Cy")  # the success ended the run: one query again
    assert after["retired"]["queries"] == 1 and "counted_as" not in after


def test_tools_show_each_tools_run(client):
    for who in ("Ada", "Bob", "Cy"):
        report(client, 404, f"email to {who}")
    report(client, 404, "forecast for Oslo", tool_id="weather")
    rows = {row["id"]: row for row in client.get("/tools").json()["data"]}
    assert rows["mail.a"]["retired"]["holds"] is True and rows["mail.a"]["retired"]["queries"] == 3
    assert rows["weather"]["retired"]["holds"] is False  # one query of the ten a tool with no history needs
    assert rows["weather"]["retired"]["need"] == 10
    assert "retired" not in rows["mail.b"]  # no run: listed as before
    unhealthy = client.get("/tools", params={"unhealthy": "true"}).json()["data"]
    assert [(row["id"], row["retired"]["holds"]) for row in unhealthy] == [("mail.a", True)]
    one = client.get("/tools/mail.a").json()
    assert one["retired"] == rows["mail.a"]["retired"]
    assert client.post("/feedback", json={"tool_id": "mail.a", "outcome": "success"}).status_code == 200
    assert "retired" not in client.get("/tools/mail.a").json()  # a success ends the run


def test_the_schema_documents_it(client):
    schemas = client.get("/openapi.json").json()["components"]["schemas"]
    assert {"counted_as", "retired"} <= set(schemas["FeedbackOut"]["properties"])
    assert "retired" in schemas["ToolOut"]["properties"]
    assert {"holds", "queries", "need", "counted", "since", "summary"} == set(
        schemas["RetiredOut"]["properties"]
    )


def test_report_outcome_over_mcp_says_it_too(report_over_mcp):
    answers = report_over_mcp(
        [{"tool_id": "mail.a", "status": 404, "query": f"email to {who}"} for who in ("Ada", "Bob", "Cy")]
    )
    assert [a.get("counted_as") for a in answers] == [None, None, "tool_error"]
    assert answers[2]["retired"]["holds"] is True and answers[2]["retired"]["queries"] == 3
