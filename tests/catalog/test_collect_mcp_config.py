"""rated.catalog.collect.mcp_config: the servers of an agent host's MCP file (nothing is started here)."""

from __future__ import annotations

import json

import pytest

from rated.catalog.collect.mcp_config import servers_from_config
from rated.errors import ConfigError


def _write(tmp_path, doc) -> str:
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps(doc) if not isinstance(doc, str) else doc)
    return str(path)


def test_claude_and_vscode_files_give_named_servers_with_placeholders_filled(tmp_path):
    claude = {
        "mcpServers": {
            "github": {
                "command": "npx",
                "args": ["-y", "@scope/server-github", "--root", "${HOME_DIR:-/srv}"],
                "env": {"GITHUB_TOKEN": "${env:GH}"},
                "cwd": "/tmp",
            },
            "docs": {"url": "https://docs.example.com/mcp", "headers": {"Authorization": "Bearer ${GH}"}},
            "old": {"type": "sse", "url": "http://localhost:9000/sse"},
            "off": {"command": "never-started", "disabled": True},
        }
    }
    github, docs, old = servers_from_config(_write(tmp_path, claude), environ={"GH": "tok"})
    assert (github.name, github.transport, github.command, github.cwd) == (
        "github", "stdio", ("npx", "-y", "@scope/server-github", "--root", "/srv"), "/tmp"
    )  # fmt: skip
    assert dict(github.env) == {"GITHUB_TOKEN": "tok"} and not github.inherit_env
    assert (docs.name, docs.transport, dict(docs.headers)) == (
        "docs",
        "http",
        {"Authorization": "Bearer tok"},
    )
    assert (old.name, old.transport, old.url) == ("old", "sse", "http://localhost:9000/sse")

    vscode = {"inputs": [], "servers": {"fs": {"type": "stdio", "command": "mcp-fs", "args": [1]}}}
    (fs,) = servers_from_config(_write(tmp_path, vscode), environ={}, inherit_env=True)
    assert (fs.name, fs.command, fs.inherit_env) == ("fs", ("mcp-fs", "1"), True)


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        ("{not json", "not JSON"),
        ({"tools": []}, "expected an object with 'mcpServers'"),
        ({"mcpServers": {}}, "lists no enabled MCP server"),
        ({"mcpServers": {"a": {"args": ["x"]}}}, "server 'a': needs a 'command'"),
        ({"mcpServers": {"a": {"command": "x", "args": "y"}}}, "'args' must be a list"),
        ({"mcpServers": {"a": {"url": "ws://h/"}}}, "server 'a': MCP server URL 'ws://h/'"),
        ({"mcpServers": {"a": {"type": "grpc", "url": "http://h/"}}}, "unknown type 'grpc'"),
        ({"mcpServers": {"a": {"command": "x", "env": {"K": "${UNSET_VAR}"}}}}, "UNSET_VAR is not set"),
        ({"servers": {"a": {"command": "x", "env": {"K": "${input:key}"}}}}, r"cannot fill \$\{input:key\}"),
    ],
)
def test_a_bad_file_is_one_error_naming_it(tmp_path, doc, message):
    path = _write(tmp_path, doc)
    with pytest.raises(ConfigError, match=message) as err:
        servers_from_config(path, environ={})
    assert str(err.value).startswith(path)


def test_a_missing_file(tmp_path):
    with pytest.raises(ConfigError, match="MCP configuration file not found"):
        servers_from_config(tmp_path / "nope.json")
