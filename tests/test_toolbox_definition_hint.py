"""A catalog dict in a toolbox has no callable: ``run`` says to call it yourself inside ``track``, and names
an MCP session only for MCP ``Tool`` objects (a dict may describe any HTTP API)."""

from __future__ import annotations

import pytest

from rated import Toolbox
from rated.encode.testing import HashEncoder
from rated.errors import ConfigError


def double(x: int) -> int:
    """Double a number."""
    return 2 * x


def test_a_tool_definition_is_not_sent_to_an_mcp_session():
    definition = {"id": "calc.add", "name": "add", "description": "Add two numbers"}
    with Toolbox([definition, double], encoder=HashEncoder(64)) as box:
        with pytest.raises(ConfigError) as refused:
            box.run("calc.add", {"a": 1})
        message = str(refused.value)
        assert "'calc.add' is a tool definition, not a callable" in message
        assert "toolbox.retriever.track('calc.add', query)" in message
        assert "MCP" not in message
        assert box.retriever.outcomes(None) == []
