"""An index rebuilt under a running MCP server with another encoder or policy: the tools reopen it."""

from __future__ import annotations

import threading

import anyio
import pytest

pytest.importorskip("mcp")

from mcp import Client  # noqa: E402
from mcp.shared.exceptions import MCPDeprecationWarning  # noqa: E402

from rated import Tool  # noqa: E402
from rated.encode.testing import HashEncoder  # noqa: E402
from rated.errors import StoreBusyError, StoreError  # noqa: E402
from rated.retriever import Retriever  # noqa: E402
from rated.service import reopen  # noqa: E402
from rated.service.mcp_server import build_mcp_server  # noqa: E402
from rated.service.reopen import Reopening  # noqa: E402

QUERY = "send an email message"
TOOLS = [
    Tool(id="mail.a", name="send_email", description="Send an email message"),
    Tool(id="weather", name="weather_forecast", description="Weather forecast for a city"),
]
REBUILT = [Tool(id="mail.new", name="email_sender", description="Send an email message quickly"), TOOLS[1]]


def own_encoder(dim: int) -> HashEncoder:
    """An encoder rated cannot load by its name: an index built with it cannot be reopened alone."""
    encoder = HashEncoder(dim)
    encoder.name = "my-own-encoder"
    return encoder


@pytest.fixture
def db(tmp_path):
    path = tmp_path / "mcp.db"
    Retriever.from_catalog(TOOLS, db=path, encoder=HashEncoder(64)).close()
    return path


def rebuild(db, tools=REBUILT, **settings) -> None:
    Retriever.from_catalog(tools, db=db, **{"encoder": HashEncoder(64), **settings}, overwrite=True).close()


@pytest.mark.parametrize(
    "settings", [{"encoder": HashEncoder(32)}, {"policy": "static"}], ids=["other-encoder", "other-policy"]
)
def test_mcp_tools_serve_the_rebuilt_index_instead_of_failing_until_a_restart(db, settings, caplog):
    with Retriever.open(db) as retriever:
        server = build_mcp_server(retriever)

        async def session() -> None:
            async with Client(server) as client:
                before = await client.call_tool("find_tools", {"query": QUERY, "k": 1})
                assert before.structured_content["hits"][0]["id"] == "mail.a"
                rebuild(db, **settings)  # as `rated index --force --db` does from another process
                for _ in range(2):  # was a tool error ("re-indexed ... reopen it") on every call
                    after = await client.call_tool("find_tools", {"query": QUERY, "k": 1})
                    assert not after.is_error, after.content
                    assert after.structured_content["hits"][0]["id"] == "mail.new"
                report = await client.call_tool(
                    "report_outcome", {"tool_id": "mail.new", "outcome": "timeout"}
                )
                assert not report.is_error and report.structured_content["tool_id"] == "mail.new"

        with caplog.at_level("WARNING", logger="rated.service.reopen"):
            anyio.run(session)
    assert sum("was rebuilt" in r.getMessage() for r in caplog.records) == 1  # reopened once
    with Retriever.open(db) as r:
        assert [(o.tool_id, o.outcome) for o in r.outcomes()] == [("mail.new", "timeout")]
        assert r.meta.policy == settings.get("policy", "rated")


def test_an_index_that_cannot_be_reopened_says_so_and_to_restart(db):
    with Retriever.open(db) as retriever:
        server = build_mcp_server(retriever)

        async def session() -> None:
            async with Client(server) as client:
                rebuild(db, encoder=own_encoder(32))
                for name, args in [
                    ("find_tools", {"query": QUERY}),
                    ("report_outcome", {"tool_id": "mail.new", "outcome": "success"}),
                ]:
                    bad = await client.call_tool(name, args)
                    text = bad.content[0].text
                    assert bad.is_error and "re-indexed with encoder my-own-encoder" in text, text
                    assert "cannot load by itself" in text and "restart the MCP server (rated mcp)" in text

        anyio.run(session)


@pytest.mark.parametrize("error", [StoreError("disk I/O error"), StoreBusyError("database is locked")])
def test_other_store_errors_are_answered_as_they_are_without_a_reopen(db, monkeypatch, error):
    def fail(*args, **kwargs):
        raise error

    def no_reopen(*args, **kwargs):
        raise AssertionError("reopened an index that was not rebuilt")

    with Retriever.open(db) as retriever:
        monkeypatch.setattr(retriever, "retrieve", fail)
        monkeypatch.setattr(reopen.Retriever, "open", no_reopen)
        with pytest.raises(type(error), match=str(error)):
            Reopening(retriever).call(lambda r: r.retrieve(QUERY))


def test_calls_failing_together_reopen_the_index_once(db, monkeypatch):
    opened = []
    real_open = Retriever.open

    def counting_open(*args, **kwargs):
        opened.append(args)
        return real_open(*args, **kwargs)

    with Retriever.open(db) as retriever:
        serving = Reopening(retriever)
        rebuild(db, encoder=HashEncoder(32))
        monkeypatch.setattr(reopen.Retriever, "open", counting_open)
        results: list[str] = []
        start = threading.Barrier(4)

        def worker() -> None:
            start.wait()
            results.append(serving.call(lambda r: r.retrieve(QUERY, k=1))[0].tool.id)

        threads = [threading.Thread(target=worker) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
        assert results == ["mail.new"] * 4 and len(opened) == 1
        assert serving.current is not retriever and serving.current.store is retriever.store


def test_a_reopen_keeps_the_served_retrievers_clock_cache_size_and_the_encoder_the_rebuild_kept(tmp_path):
    """A retriever passed with its own encoder, clock and query cache: a policy-only rebuild is served
    with that encoder (rated cannot load it by its name), and outcomes keep the retriever's clock."""
    path = tmp_path / "own.db"
    encoder = own_encoder(64)
    Retriever.from_catalog(TOOLS, db=path, encoder=encoder).close()
    with Retriever.open(path, encoder, clock=lambda: 1234.0, query_cache=0) as retriever:
        serving = Reopening(retriever)
        rebuild(path, encoder=encoder, policy="static")
        assert serving.call(lambda r: r.retrieve(QUERY, k=1))[0].tool.id == "mail.new"
        serving.call(lambda r: r.feedback("mail.new", "success"))
        fresh = serving.current
        assert fresh is not retriever and fresh.meta.policy == "static"
        assert [o.time for o in fresh.outcomes()] == [1234.0]
        assert fresh._query_cache.size == 0
        rebuild(path, encoder=own_encoder(32))  # another custom encoder: nothing to reopen it with
        with pytest.raises(StoreError, match="cannot load by itself"):
            serving.call(lambda r: r.retrieve(QUERY, k=1))


def test_a_store_busy_while_reopening_is_a_busy_error_and_the_next_call_reopens(db, monkeypatch):
    """A lock held by a writer for a moment is retryable (503 with Retry-After), not a StoreError telling
    the user to restart the server."""
    real_open = Retriever.open
    calls = []

    def busy_once(*args, **kwargs):
        calls.append(args)
        if len(calls) == 1:
            raise StoreBusyError("database is locked")
        return real_open(*args, **kwargs)

    with Retriever.open(db) as retriever:
        serving = Reopening(retriever)
        rebuild(db, encoder=HashEncoder(32))
        monkeypatch.setattr(reopen.Retriever, "open", busy_once)
        with pytest.raises(StoreBusyError, match="database is locked") as info:
            serving.call(lambda r: r.retrieve(QUERY, k=1))
        assert "restart" not in str(info.value)
        with monkeypatch.context() as m:  # busy while looking whether the index was rebuilt
            m.setattr(retriever.store, "get_meta", busy_once)
            calls.clear()
            with pytest.raises(StoreBusyError):  # was the stale "re-indexed ...: reopen it", for good
                serving.call(stale)
        assert serving.call(lambda r: r.retrieve(QUERY, k=1))[0].tool.id == "mail.new"


def stale(retriever: Retriever) -> None:
    raise StoreError("re-indexed with another encoder: reopen it")


def test_a_ping_and_listing_the_tools_never_reopen_the_index_and_the_next_tool_call_does(db, monkeypatch):
    """What an agent host sends to check on the server (ping, tools/list, resources, prompts) answers
    without the index: only a tool call reopens it after a rebuild."""
    opened: list[object] = []
    real_open = Retriever.open

    def counting_open(*args, **kwargs) -> Retriever:
        opened.append(args[0])
        return real_open(*args, **kwargs)

    with Retriever.open(db) as retriever:
        server = build_mcp_server(retriever)

        async def session() -> None:
            async with Client(server, mode="legacy") as client:  # ping is a legacy-protocol request
                rebuild(db, encoder=HashEncoder(32))
                monkeypatch.setattr(reopen.Retriever, "open", counting_open)
                for _ in range(2):
                    with pytest.warns(MCPDeprecationWarning, match="ping"):
                        assert await client.send_ping() is not None
                    assert {t.name for t in (await client.list_tools()).tools} == {
                        "find_tools",
                        "report_outcome",
                    }
                    await client.list_resources()
                    await client.list_prompts()
                assert not opened
                found = await client.call_tool("find_tools", {"query": QUERY, "k": 1})
                assert found.structured_content["hits"][0]["id"] == "mail.new" and len(opened) == 1

        anyio.run(session)
