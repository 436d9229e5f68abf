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
