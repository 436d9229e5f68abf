"""``rated serve`` (HTTP API) and ``rated mcp`` (MCP on stdio) over an index built by ``rated index``."""

from __future__ import annotations

import argparse
import contextlib
import sys
from typing import TYPE_CHECKING

from rated.extras import SERVICE_MODULES, require_extra

if TYPE_CHECKING:
    from rated.retriever import Retriever
    from rated.service import Settings

__all__ = ["register"]


def register(sub: argparse._SubParsersAction) -> None:
    """Add this group's sub-commands to the ``rated`` parser."""
    from rated.cli.index_cmds import add_db_argument

    p = sub.add_parser("serve", help="run the HTTP API (retrieve, feedback, tools, health, metrics)")
    add_db_argument(p)
    p.add_argument("--host", default=None, help="interface to bind (default $RATED_HOST or 127.0.0.1)")
    p.add_argument("--port", type=int, default=None, help="port (default $RATED_PORT or 8000)")
    p.add_argument(
        "--workers",
        type=int,
        default=None,
        metavar="N",
        help="worker processes, each with its own copy of the index (default $RATED_WORKERS or 1)",
    )
    _probe_arguments(p, "worker")
    p.add_argument("--log-level", default="info", choices=["critical", "error", "warning", "info", "debug"])
    p.set_defaults(handler=_serve)

    p = sub.add_parser("mcp", help="run an MCP server on stdio (tools: find_tools, report_outcome)")
    add_db_argument(p)
    _probe_arguments(p, "server")
    p.set_defaults(handler=_mcp)


def _probe_arguments(p: argparse.ArgumentParser, each: str) -> None:
    p.add_argument(
        "--probe-every",
        type=float,
        default=None,
        metavar="SECONDS",
        help="health-check the tools seen failing every SECONDS (1 or more; an MCP ping for tools of MCP "
        "servers over HTTP, a request to other http(s) endpoints), so that a recovered tool comes back "
        "without an agent paying a failed call (default $RATED_PROBE_EVERY, off)",
    )
    p.add_argument(
        "--probe-budget",
        type=int,
        default=None,
        metavar="N",
        help=f"tools checked per round, in each {each} process (default $RATED_PROBE_BUDGET or 3)",
    )


def _serve(args: argparse.Namespace) -> int:
    require_extra("rated serve", "service", SERVICE_MODULES)
    import uvicorn

    from rated.retriever import Retriever
    from rated.service import Settings, create_app

    db: str = args.db  # --db, or $RATED_DB without it: the parser requires one
    settings = Settings.from_env(
        db=db,
        host=args.host,
        port=args.port,
        workers=args.workers,
        probe_every=args.probe_every,
        probe_budget=args.probe_budget,
    )
    _check_can_listen(settings.host, settings.port)  # before opening: a large index takes seconds to load
    with Retriever.open(db, busy_timeout=settings.busy_timeout) as retriever:  # errors: one line
        retriever.index  # noqa: B018 - build the index now: the first request should not pay for it
        app = create_app(settings, retriever=retriever) if settings.workers == 1 else None
        _announce(settings, retriever)  # once nothing is left to refuse before uvicorn starts
        if app is not None:
            uvicorn.run(app, host=settings.host, port=settings.port, log_level=args.log_level)
            return 0
    # several workers: each opens the store itself; the parent's copy, which checked it, is closed first
    # and dropped (index, embeddings and encoder would stay in the parent's memory while the workers run)
    del retriever
    from rated.service.workers import serve_workers

    return serve_workers(settings, log_level=args.log_level)


def _announce(settings: Settings, retriever: Retriever) -> None:
    from rated.cli.output import err_console, n_tools
    from rated.retriever_setup import describe_db

    if settings.api_key is None and not _loopback(settings.host):
        err_console.print(
            f"rated: warning: listening on {settings.host} without an API key: anyone who can reach it "
            "can report outcomes, demote tools, and add, change or remove them (set RATED_API_KEY)",
            markup=False,
        )
    workers = f" with {settings.workers} worker processes" if settings.workers > 1 else ""
    err_console.print(  # uvicorn says when the port is bound ("Uvicorn running on ...")
        f"rated: {n_tools(len(retriever))} from {describe_db(retriever.store)}; starting{workers} on "
        f"http://{_address(settings.host, settings.port)} (docs at /docs)"
    )


def _mcp(args: argparse.Namespace) -> int:
    require_extra("rated mcp", "service", SERVICE_MODULES)
    from rated.retriever import Retriever
    from rated.service import Settings
    from rated.service.mcp_server import build_mcp_server
    from rated.service.mcp_stdio import run_stdio

    db: str = args.db  # --db, or $RATED_DB without it: the parser requires one
    settings = Settings.from_env(db=db, probe_every=args.probe_every, probe_budget=args.probe_budget)
    with contextlib.redirect_stdout(sys.stderr):  # stdout carries JSON-RPC only: keep set-up chatter off it
        retriever = Retriever.open(db, busy_timeout=settings.busy_timeout)
        retriever.index  # noqa: B018 - built before the first find_tools call
    with retriever:
        run_stdio(build_mcp_server(retriever, settings))  # answers unreadable lines, unlike .run("stdio")
    return 0


def _check_can_listen(host: str, port: int) -> None:
    """One clear error for a port that is taken or not allowed, instead of uvicorn's log lines and exit 3.

    The port is bound and released at once (as uvicorn binds it, with SO_REUSEADDR, IPv6 for a host with a
    colon): another process can still take it in between, and uvicorn then says so itself.
    """
    import errno
    import socket

    from rated.errors import ConfigError

    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    try:
        socket.create_server((host, port), family=family).close()
    except OSError as exc:
        where = _address(host, port)
        if exc.errno == errno.EADDRINUSE:
            reason = f"{where} is already in use (another rated serve?): choose a free one with --port"
        elif exc.errno == errno.EACCES:
            reason = f"not allowed to listen on {where} (ports below 1024 need privileges): use --port"
        else:
            reason = f"cannot listen on {where}: {exc.strerror or exc} (check --host)"
        raise ConfigError(reason) from None


def _address(host: str, port: int) -> str:
    """``host:port``, an IPv6 host in brackets (``[::1]:8000``) as in a URL."""
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def _loopback(host: str) -> bool:
    import ipaddress

    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:  # a host name: it may resolve to anything
        return False
