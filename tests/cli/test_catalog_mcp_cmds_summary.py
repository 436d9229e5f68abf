"""``rated catalog mcp``'s summary line counts as people read: one tool is ``1 tool``, not ``1 tools``."""

from __future__ import annotations

import shlex
import sys
import textwrap

import pytest

pytest.importorskip("mcp")

from rated.cli import main  # noqa: E402

ONE_TOOL_SERVER = textwrap.dedent(
    """
    from mcp.server.mcpserver import MCPServer

    app = MCPServer("clock")

    @app.tool()
    def get_time() -> str:
        '''Tell the current time.'''
        return "noon"

    app.run()
    """
)


def test_a_single_tool_is_counted_in_the_singular(tmp_path, capsys):
    server = tmp_path / "clock_server.py"
    server.write_text(ONE_TOOL_SERVER)
    out = tmp_path / "tools.jsonl"
    argv = ["catalog", "mcp", "--stdio", shlex.join([sys.executable, str(server)]), "--timeout", "60"]
    assert main([*argv, "--out", str(out)]) == 0
    printed = " ".join(capsys.readouterr().out.split())  # the console wraps long lines
    assert "1 tool -> " in printed and "1 tools" not in printed
