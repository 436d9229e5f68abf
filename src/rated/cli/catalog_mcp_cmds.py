"""``rated catalog mcp``: write a catalog of the tools your MCP servers serve, for ``rated index``.

A catalog command rather than an ``index`` option: the file it writes is what ``rated index``, ``add``
and ``sync`` read, so one listing serves a first index and keeps one in step later (``rated sync
tools.jsonl --prune`` after a server changed its tools), and it can be read and edited before indexing.

Servers: ``--stdio "CMD ARGS"``, ``--url URL`` (streamable HTTP), ``--sse URL`` (the older transport) or
``--config FILE`` (a host's ``mcpServers`` file), each repeatable. ``--name``, ``--env``, ``--cwd`` and
``--header`` apply to the server given just before them. A stdio server runs with this shell's
environment, as if typed here. All or nothing: the first server that fails names itself and nothing is
written, so a ``sync --prune`` never drops a server's tools because it was down.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from rich.markup import escape
from rich.table import Table

from rated.cli.output import console, n_tools, print_json
from rated.errors import ConfigError

__all__ = ["register"]

_SERVER_OPTIONS = "--stdio, --url, --sse or --config"


def register(cmds: argparse._SubParsersAction) -> None:
    """Add ``mcp`` to the ``rated catalog`` sub-commands."""
    from rated.catalog.collect.mcp_servers import DEFAULT_TIMEOUT

    p = cmds.add_parser(
        "mcp",
        help="list the tools of running MCP servers (stdio commands or URLs) into a catalog",
        description="Ask MCP servers for their tools (tools/list, every page) and write them as a catalog "
        "that `rated index` reads. Tool ids are SERVER.TOOL; the server's name is the one it gives "
        "(serverInfo) unless --name says otherwise. --name, --env, --cwd and --header apply to the "
        "server given just before them.",
    )
    servers = p.add_argument_group("servers (each repeatable, in any mix)")
    servers.add_argument(
        "--stdio", action=_AddServer, dest="servers", metavar="'CMD ARGS'", help="a server to start"
    )
    servers.add_argument(
        "--url", action=_AddServer, dest="servers", metavar="URL", help="a streamable HTTP server"
    )
    servers.add_argument("--sse", action=_AddServer, dest="servers", metavar="URL", help="an SSE server")
    servers.add_argument(
        "--config",
        action=_AddServer,
        dest="servers",
        metavar="FILE",
        help="every server of an agent host's MCP file ({'mcpServers': ...} or VS Code's {'servers': ...}); "
        "each named by its key",
    )
    each = p.add_argument_group("options of the server given just before")
    each.add_argument(
        "--name", action=_SetOnServer, dest="servers", metavar="NAME", help="id prefix and provider"
    )
    each.add_argument(
        "--env",
        action=_SetOnServer,
        dest="servers",
        metavar="KEY=VALUE",
        help="environment of a stdio server",
    )
    each.add_argument(
        "--cwd", action=_SetOnServer, dest="servers", metavar="DIR", help="folder a stdio server runs in"
    )
    each.add_argument(
        "--header",
        action=_SetOnServer,
        dest="servers",
        metavar="'NAME: VALUE'",
        help="HTTP header for a URL server (e.g. 'Authorization: Bearer ...'); never written to the catalog",
    )
    p.add_argument("--out", required=True, metavar="FILE", help="the catalog to write (JSONL)")
    p.add_argument(
        "--timeout",
        type=float,
        default=DEFAULT_TIMEOUT,
        metavar="S",
        help=f"seconds each server has to start and list its tools ({DEFAULT_TIMEOUT:g})",
    )
    p.add_argument("--json", action="store_true", help="print one JSON document instead of a table")
    p.set_defaults(handler=_mcp, servers=None)


class _AddServer(argparse.Action):
    """Appends ``{"kind": --stdio|--url|--sse|--config, "value": ...}`` to ``namespace.servers``."""

    def __call__(
        self, parser: Any, namespace: argparse.Namespace, values: Any, option: str | None = None
    ) -> None:
        entries = list(getattr(namespace, self.dest) or [])
        entries.append({"kind": option, "value": values, "env": {}, "headers": {}})
        setattr(namespace, self.dest, entries)


class _SetOnServer(argparse.Action):
    """Sets ``--name`` / ``--cwd``, or adds an ``--env`` / ``--header``, on the last server given."""

    def __call__(
        self, parser: Any, namespace: argparse.Namespace, values: Any, option: str | None = None
    ) -> None:
        entries = getattr(namespace, self.dest) or []
        if not entries:
            raise argparse.ArgumentError(self, f"give a server ({_SERVER_OPTIONS}) before {option}")
        last = entries[-1]
        kind = last["kind"]
        allowed = {"--name": ("--stdio", "--url", "--sse"), "--cwd": ("--stdio",), "--env": ("--stdio",)}
        allowed["--header"] = ("--url", "--sse")
        if kind not in allowed[option or ""]:
            raise argparse.ArgumentError(self, f"{option} does not apply to a server given by {kind}")
        if option == "--env":
            key, eq, value = str(values).partition("=")
            if not eq or not key:
                raise argparse.ArgumentError(self, f"expected KEY=VALUE, got {values!r}")
            last["env"][key] = value
        elif option == "--header":
            key, colon, value = str(values).partition(":")
            if not colon or not key.strip():
                raise argparse.ArgumentError(self, "expected 'NAME: VALUE'")
            last["headers"][key.strip()] = value.strip()
        else:
            if option in last:
                raise argparse.ArgumentError(
                    self, f"given twice for one server ({last[option]!r}, {values!r})"
                )
            last[option] = values


def _servers(entries: list[dict[str, Any]] | None) -> list[Any]:
    from rated.catalog.collect.mcp_config import servers_from_config
    from rated.catalog.collect.mcp_servers import McpServer

    if not entries:
        raise ConfigError(f"give at least one MCP server: {_SERVER_OPTIONS}")
    servers: list[McpServer] = []
    for e in entries:
        kind, value, name = e["kind"], e["value"], e.get("--name")
        if kind == "--config":
            servers.extend(servers_from_config(value, inherit_env=True))
        elif kind == "--stdio":
            servers.append(
                McpServer.stdio(value, name=name, env=e["env"], cwd=e.get("--cwd"), inherit_env=True)
            )
        else:
            servers.append(McpServer.http(value, name=name, headers=e["headers"], sse=kind == "--sse"))
    return servers


def _mcp(args: argparse.Namespace) -> int:
    from rated.catalog.collect.mcp_servers import read_servers
    from rated.catalog.loaders import save_catalog
    from rated.cli.outpath import check_out_file

    servers = _servers(args.servers)
    out = check_out_file(Path(args.out).expanduser())
    with console.status("starting", spinner="dots") if not args.json else _Quiet() as status:
        listings = read_servers(
            servers,
            timeout=args.timeout,
            on_server=lambda s: status.update(f"listing the tools of {escape(s.label)}"),
        )
    tools = [tool for listing in listings for tool in listing.tools]
    save_catalog(tools, out)
    report = {
        "out": str(out),
        "tools": len(tools),
        "servers": [
            {
                "name": s.name,
                "server": s.server.label,
                "transport": s.server.transport,
                "version": s.version,
                "tools": len(s.tools),
                "seconds": round(s.seconds, 3),
                "warnings": list(s.warnings),
            }
            for s in listings
        ],
    }
    if args.json:
        print_json(report)
        return 0
    table = Table(title="MCP servers")
    for col in ("name", "server", "tools", "seconds"):
        table.add_column(col, justify="right" if col in ("tools", "seconds") else "left")
    for s in listings:
        table.add_row(escape(s.name), escape(s.server.label), str(len(s.tools)), f"{s.seconds:.1f}")
    console.print(table)
    for s in listings:
        for warning in s.warnings:
            console.print(f"[yellow]warning[/] {escape(s.name)}: {escape(warning)}")
    shown_out = escape(str(out))
    summary = f"{n_tools(len(tools))} -> [bold]{shown_out}[/]"
    console.print(f"{summary} (index it: rated index {shown_out} --db DB)")
    return 0


class _Quiet:
    """``console.status``'s stand-in under ``--json``: nothing on the terminal."""

    def __enter__(self) -> _Quiet:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def update(self, *_args: object, **_kwargs: object) -> None:
        return None
