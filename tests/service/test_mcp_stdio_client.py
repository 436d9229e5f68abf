"""``rated mcp`` as an agent host runs it: a subprocess driven by the official SDK client over stdio."""

from __future__ import annotations

import json
import sys

import anyio
import pytest

pytest.importorskip("mcp")

from mcp import ClientSession  # noqa: E402
from mcp.client.stdio import StdioServerParameters, stdio_client  # noqa: E402

from rated import Tool  # noqa: E402
from rated.cli import main  # noqa: E402
from rated.encode.testing import HashEncoder  # noqa: E402
from rated.retriever import Retriever  # noqa: E402

QUERY = "send an email message"
TOOLS = [
    Tool(id="mail.a", name="send_email", description="Send an email message"),
    Tool(id="mail.b", name="email_send", description="Send an email message"),
    Tool(id="weather", name="weather_forecast", description="Weather forecast for a city"),
]
BAD_CALLS = [  # (tool, arguments, what the error message must say)
    ("find_tools", {"query": ""}, "query is empty"),
    ("find_tools", {"query": "x" * 20_000}, "max_query_chars"),
    ("find_tools", {"query": QUERY, "k": 0}, "k must be an integer >= 1"),
    ("find_tools", {"query": QUERY, "k": 7}, "at most 6 tools (max_k)"),
    ("find_tools", {"query": QUERY, "k": "2"}, "valid integer"),
    ("find_tools", {"query": 5}, "valid string"),
    ("find_tools", {}, "Field required"),
    ("report_outcome", {"tool_id": "nope", "outcome": "success"}, "unknown tool id: 'nope'"),
    ("report_outcome", {"tool_id": "mail.a", "outcome": "exploded"}, "unknown outcome 'exploded'"),
    ("report_outcome", {"tool_id": "mail.a", "outcome": "timeout", "retry_after": -5}, "retry_after"),
    ("report_outcome", {"tool_id": 5, "outcome": "success"}, "valid string"),
    ("no_such_tool", {}, "Unknown tool"),
]


def test_an_sdk_client_drives_rated_mcp_and_its_writes_reach_the_database(tmp_path, capsys):
    db = tmp_path / "mcp.db"
    Retriever.from_catalog(TOOLS, db=db, encoder=HashEncoder(64)).close()
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "rated.cli", "mcp", "--db", str(db)],
        env={"RATED_MAX_K": "6", "RATED_DEFAULT_K": "2"},
    )
    seen: dict[str, object] = {}

    async def session() -> None:
        with anyio.fail_after(60):
            await session_body()

    async def session_body() -> None:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as client:
            await client.initialize()
            seen["tools"] = {t.name: t for t in (await client.list_tools()).tools}
            found = await client.call_tool("find_tools", {"query": QUERY})
            assert not found.is_error and found.structured_content["k"] == 2  # RATED_DEFAULT_K
            top = found.structured_content["hits"][0]["id"]
            seen["top"] = top
            for name, args, message in BAD_CALLS:  # each one an error result; the server lives on
                bad = await client.call_tool(name, args)
                assert bad.is_error and message in bad.content[0].text, (name, args, bad.content)
            report = await client.call_tool(
                "report_outcome", {"tool_id": top, "outcome": "tool_error", "query": QUERY}
            )
            assert not report.is_error and report.structured_content["healthy"] is False
            limited = await client.call_tool(
                "report_outcome", {"tool_id": "weather", "outcome": "rate_limited", "retry_after": 30}
            )
            assert not limited.is_error
            again = await client.call_tool("find_tools", {"query": QUERY, "k": 1})
            assert again.structured_content["hits"][0]["id"] != top

    anyio.run(session)

    tools = seen["tools"]
    assert set(tools) == {"find_tools", "report_outcome"}  # type: ignore[arg-type]
    find, report = tools["find_tools"], tools["report_outcome"]  # type: ignore[index]
    for tool in (find, report):  # written for a model to read: no docstring indentation or rst markup
        assert tool.description and "\n " not in tool.description and "``" not in tool.description
        assert all(p.get("description") for p in tool.input_schema["properties"].values()), tool.name
    assert find.input_schema["properties"]["k"] | {"default": 2} == {
        **find.input_schema["properties"]["k"],
        "minimum": 1,
        "maximum": 6,
    }
    assert report.input_schema["properties"]["outcome"]["enum"] == [
        "success", "tool_error", "timeout", "rate_limited", "auth_error", "caller_error"
    ]  # fmt: skip

    # what MCP wrote is in the database for every other reader
    with Retriever.open(db) as r:
        assert [(o.tool_id, o.outcome) for o in r.outcomes()] == [
            (seen["top"], "tool_error"),
            ("weather", "rate_limited"),
        ]
        assert not r.health(seen["top"]).healthy  # type: ignore[arg-type]
    assert main(["search", QUERY, "--db", str(db), "-k", "3", "--json"]) == 0
    hits = json.loads(capsys.readouterr().out)["hits"]
    assert next(h for h in hits if h["id"] == seen["top"])["healthy"] is False
