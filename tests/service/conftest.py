"""Fixtures the service tests share (a fixture, not an import: the tests folder is not a package)."""

from __future__ import annotations

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
