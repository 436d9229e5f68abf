"""Fixtures the service tests share (a fixture, not an import: the tests folder is not a package).

``now``, ``retriever`` and ``client`` are the retired-endpoint tests' set-up (``retired_catalog``): a
module with another catalog defines its own ``retriever`` (or ``now``), which the shared ``client`` then
serves."""

from __future__ import annotations

import http.server
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from rated.encode.testing import HashEncoder
from rated.probing import Prober
from rated.retriever import Retriever
from rated.service import Settings, create_app
from retired_catalog import TOOLS, record_clean_history


@pytest.fixture
def now() -> list[float]:
    """The retriever's clock (``now[0]``, seconds): a test moves it to age the evidence."""
    return [1000.0]


@pytest.fixture
def retriever(now: list[float]) -> Iterator[Retriever]:
    """The retired-endpoint catalog with a clean history, a minute before the test starts reporting."""
    r = Retriever.from_catalog(TOOLS, encoder=HashEncoder(64), clock=lambda: now[0])
    record_clean_history(r)
    now[0] += 60
    yield r
    r.close()


@pytest.fixture
def client(retriever: Retriever) -> Iterator[TestClient]:
    """The HTTP app with default settings around the test's ``retriever``."""
    with TestClient(create_app(Settings(), retriever=retriever)) as c:
        yield c


@pytest.fixture
def report_over_mcp(retriever: Retriever) -> Callable[[list[dict[str, Any]]], list[dict[str, Any]]]:
    """Calls MCP ``report_outcome`` with each argument dict in turn, in one in-memory session on the test's
    ``retriever``; returns the structured answers, each checked to be no tool error."""
    pytest.importorskip("mcp")
    import anyio
    from mcp import Client

    from rated.service.mcp_server import build_mcp_server

    def report(calls: list[dict[str, Any]]) -> list[dict[str, Any]]:
        answers: list[dict[str, Any]] = []

        async def session() -> None:
            async with Client(build_mcp_server(retriever)) as c:
                for args in calls:
                    result = await c.call_tool("report_outcome", args)
                    assert not result.is_error, result.content
                    answers.append(result.structured_content)

        anyio.run(session)
        return answers

    return report


class HeldRead:
    """A prober's read of its targets (``Retriever.probe_targets``), held until a task on the event loop
    lets it go once the prober is told to stop (``let_go_at_stop``): a shutdown that blocks the loop while
    it waits for the prober never lets it go."""

    WAIT = 20.0  # seconds a step the test waits for gets on a busy machine

    def __init__(self) -> None:
        self.reading, self.released = threading.Event(), threading.Event()

    async def started(self) -> None:
        """Once the prober is reading its targets."""
        import anyio

        with anyio.fail_after(self.WAIT):
            while not self.reading.is_set():
                await anyio.sleep(0.01)

    async def let_go_at_stop(self, prober: Prober) -> None:
        """Let the read go once ``prober`` is stopping: runs only while the loop is free."""
        import anyio

        while not prober._stop.is_set():
            await anyio.sleep(0.01)
        self.released.set()


@pytest.fixture
def held_read(monkeypatch: pytest.MonkeyPatch) -> HeldRead:
    """Every prober's read of its targets held (``HeldRead``) for the test."""
    held, real = HeldRead(), Retriever.probe_targets

    def probe_targets(self: Retriever, budget: int = 3) -> list[str]:
        held.reading.set()
        held.released.wait(held.WAIT)
        return real(self, budget)

    monkeypatch.setattr(Retriever, "probe_targets", probe_targets)
    return held


@pytest.fixture
def mcp_handshake() -> list[dict[str, Any]]:
    """How a client opens an MCP session on stdio: ``initialize`` (id 1), then the ``initialized`` note."""
    return [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "test", "version": "0"},
            },
        },
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
    ]


class _Up(http.server.BaseHTTPRequestHandler):
    def do_HEAD(self):  # noqa: N802 - http.server's naming
        self.send_response(200)
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def endpoint() -> Iterator[str]:
    """The URL of a local HTTP endpoint that answers every HEAD with 200 (a tool that is up, for probes)."""
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Up)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/send"
    httpd.shutdown()
    httpd.server_close()
