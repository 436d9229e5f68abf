"""The MCP server: in-process through the SDK's client, and as a real ``rated mcp`` subprocess on stdio."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import anyio
import pytest

pytest.importorskip("mcp")

from mcp import Client  # noqa: E402

from rated import Tool  # noqa: E402
from rated.encode.testing import HashEncoder  # noqa: E402
from rated.retriever import Retriever  # noqa: E402
from rated.service.mcp_server import build_mcp_server  # noqa: E402

QUERY = "send an email message"
TOOLS = [
    Tool(id="mail.a", name="send_email", description="Send an email message"),
    Tool(id="mail.b", name="email_send", description="Send an email message"),
    Tool(id="weather", name="weather_forecast", description="Weather forecast for a city"),
]


@pytest.fixture
def retriever():
    r = Retriever.from_catalog(TOOLS, encoder=HashEncoder(64), clock=lambda: 1000.0)
    yield r
    r.close()


def test_tools_are_listed_with_schemas_and_work_in_process(retriever):
    server = build_mcp_server(retriever)

    async def session() -> None:
        async with Client(server) as client:
            listed = {t.name: t for t in (await client.list_tools()).tools}
            assert set(listed) == {"find_tools", "report_outcome"}
            assert listed["find_tools"].input_schema["required"] == ["query"]
            report_schema = listed["report_outcome"].input_schema
            assert {"tool_id", "outcome", "status", "headers", "query", "retry_after"} <= set(
                report_schema["properties"]
            )
            assert report_schema["required"] == ["tool_id"]  # outcome or status: checked by the tool
            assert all(t.input_schema["additionalProperties"] is False for t in listed.values())

            found = await client.call_tool("find_tools", {"query": QUERY, "k": 2})
            assert not found.is_error
            top = found.structured_content["hits"][0]["id"]
            assert {h["id"] for h in found.structured_content["hits"]} == {"mail.a", "mail.b"}

            report = await client.call_tool(
                "report_outcome", {"tool_id": top, "outcome": "tool_error", "query": QUERY}
            )
            assert not report.is_error and report.structured_content["healthy"] is False

            again = await client.call_tool("find_tools", {"query": QUERY, "k": 1})
            assert again.structured_content["hits"][0]["id"] != top

            for name, args, message in [
                ("find_tools", {"query": "  "}, "query is empty"),
                ("find_tools", {"query": QUERY, "k": 500}, "at most"),
                ("find_tools", {"query": QUERY, "k": True}, "valid integer"),  # strict: not 1
                ("find_tools", {"query": QUERY, "k": 1.0}, "valid integer"),
                ("report_outcome", {"tool_id": "mail.a", "outcome": "timeout", "retry_after": "5"}, "number"),
                ("report_outcome", {"tool_id": "nope", "outcome": "success"}, "unknown tool id"),
                ("report_outcome", {"tool_id": "mail.a", "outcome": "exploded"}, "unknown outcome"),
                # a bad value is named, never echoed back (it may be huge, or private)
                ("find_tools", {"query": QUERY, "k": "private-value-0123"}, "valid integer"),
                # unknown arguments are named, not dropped (k would silently be the default)
                ("find_tools", {"query": QUERY, "top_k": 1}, "top_k"),
                (
                    "report_outcome",
                    {"tool_id": "mail.a", "outcome": "rate_limited", "retry_after_s": 9},
                    "retry_after_s",
                ),
            ]:
                bad = await client.call_tool(name, args)
                assert bad.is_error and message in bad.content[0].text
                assert "private-value" not in bad.content[0].text

    anyio.run(session)
    assert [r.outcome for r in retriever.outcomes()] == ["tool_error"]


@pytest.mark.parametrize(
    ("status", "headers", "outcome", "retry_after", "demoted"),
    [
        (200, None, "success", None, False),
        (400, None, "caller_error", None, False),  # the agent's own arguments: no demotion
        (401, None, "auth_error", None, True),
        (429, {"Retry-After": "30"}, "rate_limited", 30.0, True),
        (503, None, "tool_error", None, True),
    ],
)
def test_report_outcome_takes_the_tools_http_status(
    retriever, status, headers, outcome, retry_after, demoted
):
    server = build_mcp_server(retriever)
    args = {"tool_id": "mail.a", "status": status, **({"headers": headers} if headers else {})}

    async def session() -> None:
        async with Client(server) as client:
            result = await client.call_tool("report_outcome", args)
            assert not result.is_error, result.content
            assert result.structured_content == {
                "recorded": True,
                "tool_id": "mail.a",
                "outcome": outcome,
                "retry_after": retry_after,
                "healthy": not demoted,
            }

    anyio.run(session)
    assert [(o.outcome, o.retry_after) for o in retriever.outcomes()] == [(outcome, retry_after)]


def test_a_reported_429_keeps_the_tool_out_only_as_long_as_it_said():
    now = [1000.0]
    retriever = Retriever.from_catalog(TOOLS, encoder=HashEncoder(64), clock=lambda: now[0])
    server = build_mcp_server(retriever)

    async def call(name: str, args: dict) -> dict:
        async with Client(server) as client:
            result = await client.call_tool(name, args)
            assert not result.is_error, result.content
            return result.structured_content

    with retriever:
        limited = {"tool_id": "mail.a", "status": 429, "headers": {"retry-after": "30"}}
        assert anyio.run(call, "report_outcome", limited)["outcome"] == "rate_limited"
        assert anyio.run(call, "report_outcome", {"tool_id": "mail.b", "status": 503})["healthy"] is False
        now[0] = 1029.0
        assert retriever.health("mail.a").healthy is False
        now[0] = 1031.0
        assert retriever.health("mail.a").healthy is True  # a 503 without a hint is an outage:
        assert retriever.health("mail.b").healthy is False  # still demoted
        hits = anyio.run(call, "find_tools", {"query": QUERY, "k": 1})["hits"]
        assert hits[0]["id"] == "mail.a"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"outcome": "success", "status": 200}, "not both"),
        ({}, "give outcome"),
        ({"outcome": "rate_limited", "headers": {"Retry-After": "5"}}, "headers are read only with status"),
        ({"status": 600}, "from 100 to 599, got 600"),
        ({"status": True}, "valid integer"),  # strict: not 1
        ({"status": "429"}, "valid integer"),
        ({"status": 429.0}, "valid integer"),
        ({"status": 429, "headers": ["Retry-After: 5"]}, "must be an object of header names to values"),
        ({"status": 429, "headers": {"Retry-After": 5}}, "not a string"),
        ({"status": 429, "headers": {f"x-{i}": "1" for i in range(101)}}, "101 headers; at most 100"),
        ({"status": 429, "headers": {"n" * 3000: 5}}, "a header name is 3,000 characters long"),
        ({"status": 429, "headers": {"Retry-After": "9" * 9000}}, "is 9,000 characters long; at most 8,192"),
    ],
)
def test_report_outcome_refuses_a_wrong_report_saying_what_and_records_nothing(retriever, args, message):
    server = build_mcp_server(retriever)

    async def session() -> str:
        async with Client(server) as client:
            result = await client.call_tool("report_outcome", {"tool_id": "mail.a", **args})
            assert result.is_error
            return result.content[0].text

    text = anyio.run(session)
    assert message in text and len(text) < 500, text  # a name or value is never echoed in full
    assert retriever.outcomes() == []


@pytest.mark.parametrize("exc", [KeyError("mail.a"), ValueError("shapes (3,) and (2,) differ")])
def test_unexpected_retriever_errors_come_back_as_named_tool_errors(retriever, monkeypatch, caplog, exc):
    def boom(*args, **kwargs):
        raise exc

    monkeypatch.setattr(retriever, "retrieve", boom)
    monkeypatch.setattr(retriever, "feedback", boom)
    server = build_mcp_server(retriever)

    async def session() -> None:
        async with Client(server) as client:
            for name, args in [
                ("find_tools", {"query": QUERY}),
                ("report_outcome", {"tool_id": "mail.a", "outcome": "success"}),
            ]:
                bad = await client.call_tool(name, args)
                text = bad.content[0].text
                assert bad.is_error and f"internal error: {type(exc).__name__}: {exc}" in text, text

    with caplog.at_level("ERROR", logger="rated.service.mcp_server"):
        anyio.run(session)
    assert [r.exc_info[1] for r in caplog.records if r.name == "rated.service.mcp_server"] == [exc, exc]


def test_rated_mcp_speaks_json_rpc_over_stdio(tmp_path, mcp_handshake):
    db = tmp_path / "mcp.db"
    Retriever.from_catalog(TOOLS, db=db, encoder=HashEncoder(64)).close()
    messages = [
        *mcp_handshake,
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
        {
            "jsonrpc": "2.0",
            "id": 3,
            "method": "tools/call",
            "params": {"name": "find_tools", "arguments": {"query": QUERY, "k": 1}},
        },
    ]
    stdin = "".join(json.dumps(m) + "\n" for m in messages)
    env = {**os.environ, "RATED_DB": str(db)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "rated.cli", "mcp"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    replies: dict[int, dict] = {}
    try:
        assert proc.stdin and proc.stdout
        proc.stdin.write(stdin)
        proc.stdin.flush()
        while len(replies) < 3:
            line = proc.stdout.readline()
            assert line, f"server closed stdout early; stderr: {proc.stderr.read() if proc.stderr else ''}"
            msg = json.loads(line)  # every stdout line is JSON-RPC, nothing else
            if "id" in msg:
                replies[msg["id"]] = msg
    finally:
        proc.stdin.close()
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)
    assert replies[1]["result"]["serverInfo"]["name"] == "rated"
    assert {t["name"] for t in replies[2]["result"]["tools"]} == {"find_tools", "report_outcome"}
    result = replies[3]["result"]
    assert result.get("isError") is not True
    assert result["structuredContent"]["hits"][0]["id"] in {"mail.a", "mail.b"}
