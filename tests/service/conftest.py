"""Fixtures the service tests share (a fixture, not an import: the tests folder is not a package)."""

from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator
from typing import Any

import pytest


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
