"""The MCP servers an agent host's configuration file lists, as ``McpServer``s to read tools from.

Agent developers already list their servers for a host: ``{"mcpServers": {name: entry}}`` (Claude
Desktop, Claude Code's ``.mcp.json``, Cursor's ``mcp.json``) or ``{"servers": {name: entry}}`` (VS
Code's ``.vscode/mcp.json``). An entry is a stdio command (``command``, ``args``, ``env``, ``cwd``) or a
URL (``url``, ``headers``; ``"type": "sse"`` for the older SSE transport); ``"disabled": true`` entries
are skipped. The entry's key becomes the server's name (its tools' id prefix and provider), as hosts
name them. ``${VAR}``, ``${VAR:-default}`` and ``${env:VAR}`` in strings are filled from the
environment; one that cannot be (an unset variable, VS Code's ``${input:...}`` prompts) is an error
naming the server, never sent to the server as written.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rated.catalog.collect.mcp_servers import McpServer
from rated.errors import ConfigError
from rated.shown import shown

__all__ = ["servers_from_config"]

_PLACEHOLDER = re.compile(r"\$\{([^}]*)\}")
_VAR = re.compile(r"(?:env:)?([A-Za-z_][A-Za-z0-9_]*)(?::-(.*))?", re.S)
_STDIO_TYPES = frozenset({"stdio", None})
_URL_TYPES = {"http": False, "streamable-http": False, "streamableHttp": False, "sse": True}


def servers_from_config(
    path: str | Path, *, environ: Mapping[str, str] | None = None, inherit_env: bool = False
) -> list[McpServer]:
    """The enabled servers of a host's MCP configuration file, in file order.

    ``environ`` fills placeholders (default: this process's environment); ``inherit_env`` is passed to
    each stdio server (see ``McpServer``). ``ConfigError`` names the file and server of any problem.
    """
    file = Path(path).expanduser()
    try:
        doc = json.loads(file.read_text(encoding="utf-8-sig"))
    except FileNotFoundError:
        raise ConfigError(f"{file}: MCP configuration file not found") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{file}: cannot read it ({getattr(exc, 'strerror', None) or exc})") from None
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{file}: not JSON ({exc.msg}, line {exc.lineno})") from None
    entries = doc.get("mcpServers", doc.get("servers")) if isinstance(doc, dict) else None
    if not isinstance(entries, dict):
        raise ConfigError(f"{file}: expected an object with 'mcpServers' (or VS Code's 'servers')")
    env = os.environ if environ is None else environ
    servers = []
    for name, entry in entries.items():
        where = f"{file}: server {name!r}"
        if not isinstance(entry, dict):
            raise ConfigError(f"{where}: expected an object, got {type(entry).__name__}")
        if entry.get("disabled") is True:
            continue
        try:
            servers.append(_server(name, _filled(entry, env), inherit_env))
        except ConfigError as exc:
            raise ConfigError(f"{where}: {exc}") from None
    if not servers:
        raise ConfigError(f"{file}: lists no enabled MCP server")
    return servers


def _server(name: str, entry: dict[str, Any], inherit_env: bool) -> McpServer:
    kind = entry.get("type")
    if "url" in entry or (kind is not None and kind not in _STDIO_TYPES):
        if kind not in _URL_TYPES and kind is not None:
            raise ConfigError(f"unknown type {shown(kind)} (expected stdio, http or sse)")
        url = entry.get("url")
        if not isinstance(url, str):
            raise ConfigError("'url' must be a string")
        return McpServer.http(
            url, name=name, headers=_strings(entry, "headers"), sse=_URL_TYPES.get(kind, False)
        )
    command, args = entry.get("command"), entry.get("args", [])
    if not isinstance(command, str) or not command.strip():
        raise ConfigError("needs a 'command' (or a 'url')")
    if not isinstance(args, list) or not all(isinstance(a, (str, int, float)) for a in args):
        raise ConfigError("'args' must be a list of strings")
    cwd = entry.get("cwd")
    if cwd is not None and not isinstance(cwd, str):
        raise ConfigError("'cwd' must be a string")
    return McpServer.stdio(
        [command, *map(str, args)], name=name, env=_strings(entry, "env"), cwd=cwd, inherit_env=inherit_env
    )


def _strings(entry: dict[str, Any], key: str) -> dict[str, str]:
    value = entry.get(key) or {}
    if not isinstance(value, dict) or not all(isinstance(v, (str, int, float)) for v in value.values()):
        raise ConfigError(f"'{key}' must be an object of strings")
    return {str(k): str(v) for k, v in value.items()}


def _filled(value: Any, env: Mapping[str, str]) -> Any:
    """``value`` with every ``${...}`` placeholder in its strings filled from ``env``."""
    if isinstance(value, dict):
        return {k: _filled(v, env) for k, v in value.items()}
    if isinstance(value, list):
        return [_filled(v, env) for v in value]
    if not isinstance(value, str):
        return value

    def fill(match: re.Match[str]) -> str:
        var = _VAR.fullmatch(match.group(1))
        if var is None:
            raise ConfigError(f"cannot fill {match.group(0)} (only ${{VAR}} and ${{env:VAR}} are read)")
        if var.group(1) in env:
            return env[var.group(1)]
        if var.group(2) is not None:
            return var.group(2)
        raise ConfigError(f"{match.group(0)}: environment variable {var.group(1)} is not set")

    return _PLACEHOLDER.sub(fill, value)
