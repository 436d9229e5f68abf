"""Index the tools of running MCP servers: ask each server for its ``tools/list``, as an agent host does.

Most agent developers have their tools behind MCP servers. A server is a stdio command (started as a
subprocess and stopped afterwards) or an http(s) URL (streamable HTTP, or the older SSE transport).
``read_server`` starts or connects to one, completes the MCP handshake, follows ``tools/list`` pages
(``nextCursor``) and converts each tool with the MCP conversion of ``rated.catalog.loaders``, then:

- ``source`` is ``mcp`` and ``provider`` the server's name (``serverInfo.name`` from its handshake, or
  the ``name`` given), so that the policy knows which tools fail together;
- ids are ``<server name>.<tool name>`` (``github.create_issue``): two servers' tools never clash, and
  two servers with one name are refused (give one another ``name``);
- ``provenance`` names the server (its name and version, and the command or URL in ``path``), never
  env values or headers; a URL loses its user-info and query string, and a command the value after an
  option named like a secret (``--token X``, ``--api-key=X``);
- an http(s) server's URL becomes the tools' ``endpoint`` (what ``rated.probe_checks.http_check`` checks).

Every failure is one ``CatalogError`` naming the server: a command that does not start, a server that
closes before answering (with the last line it wrote on stderr), no answer within ``timeout`` seconds,
a URL that does not answer as an MCP server, a server that offers no tools.
"""

from __future__ import annotations

import logging
import math
import os
import re
import shlex
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AsyncExitStack, contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal, TextIO
from urllib.parse import urlsplit, urlunsplit

from pydantic import ValidationError

from rated.catalog.collect.base import auth_from_credentials
from rated.catalog.loaders import load_catalog
from rated.catalog.schema import Auth, AuthType, Provenance, Tool
from rated.errors import CatalogError, CatalogProblem, ConfigError
from rated.extras import require_extra
from rated.shown import shown
from rated.validation_text import pydantic_reason

__all__ = [
    "DEFAULT_TIMEOUT",
    "McpServer",
    "ServerTools",
    "aread_server",
    "list_server_tools",
    "list_servers_tools",
    "read_server",
    "read_servers",
]

DEFAULT_TIMEOUT = 30.0  # seconds for start, handshake and every tools/list page together
MAX_PAGES = 1000  # a server whose cursor never ends must not hang the listing
Transport = Literal["stdio", "http", "sse"]

_SECRET_NAME = re.compile(r"(token|secret|passw|api[_-]?key|apikey|auth|credential|private[_-]?key)", re.I)
_REDACTED = "***"
_STDERR_TAIL = 4096  # bytes of a failed server's stderr read for its last line


@dataclass(frozen=True)
class McpServer:
    """One MCP server: a stdio ``command`` (argv) or an http(s) ``url``.

    ``name`` replaces the server's own name (its ``serverInfo.name``) as id prefix and provider.
    ``env`` (stdio) is added to the environment the SDK passes a server (``HOME``, ``PATH`` and a few
    more), or to this process's whole environment with ``inherit_env``; ``headers`` (http, sse) are sent
    with every request (``Authorization: Bearer ...``). Neither is ever written to the catalog.
    """

    transport: Transport
    command: tuple[str, ...] = ()
    url: str | None = None
    name: str | None = None
    env: Mapping[str, str] = field(default_factory=dict)
    cwd: str | None = None
    inherit_env: bool = False
    headers: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.transport == "stdio":
            if not self.command or not self.command[0].strip():
                raise ConfigError("a stdio MCP server needs a command, e.g. 'npx -y @scope/server'")
            if self.url is not None or self.headers:
                raise ConfigError(f"{self.label}: a URL and headers are for http/sse servers, not stdio")
        elif self.transport in ("http", "sse"):
            parts = urlsplit(self.url or "")
            if parts.scheme not in ("http", "https") or not parts.hostname:
                raise ConfigError(f"MCP server URL {shown(self.url)}: expected an http:// or https:// URL")
            if self.command or self.env or self.cwd is not None:
                raise ConfigError(f"{self.label}: a command, env and cwd are for stdio servers, not URLs")
        else:
            raise ConfigError(f"MCP transport {shown(self.transport)}: expected 'stdio', 'http' or 'sse'")
        if self.name is not None and (not self.name.strip() or not self.name.isprintable()):
            raise ConfigError(f"MCP server name {shown(self.name)}: must be printable and not blank")

    @classmethod
    def stdio(
        cls,
        command: str | Sequence[str],
        *,
        name: str | None = None,
        env: Mapping[str, str] | None = None,
        cwd: str | Path | None = None,
        inherit_env: bool = False,
    ) -> McpServer:
        """A server started as ``command``: an argv list, or one string split as a POSIX shell does."""
        if isinstance(command, str):
            try:
                argv = shlex.split(command)
            except ValueError as exc:
                raise ConfigError(f"MCP server command {shown(command)}: {exc}") from None
        else:
            argv = [str(a) for a in command]
        return cls(
            "stdio",
            command=tuple(argv),
            name=name,
            env=dict(env or {}),
            cwd=None if cwd is None else str(cwd),
            inherit_env=inherit_env,
        )

    @classmethod
    def http(
        cls, url: str, *, name: str | None = None, headers: Mapping[str, str] | None = None, sse: bool = False
    ) -> McpServer:
        """A server at ``url``, over streamable HTTP (or the older SSE transport with ``sse``)."""
        return cls("sse" if sse else "http", url=url, name=name, headers=dict(headers or {}))

    @classmethod
    def parse(cls, spec: str | Sequence[str], *, name: str | None = None) -> McpServer:
        """An http(s) URL (streamable HTTP), or else a stdio command (string or argv)."""
        if isinstance(spec, str) and spec.strip().lower().startswith(("http://", "https://")):
            return cls.http(spec.strip(), name=name)
        return cls.stdio(spec, name=name)

    @property
    def label(self) -> str:
        """The server as messages and provenance show it: the command or URL, secrets left out."""
        if self.transport == "stdio":
            return shlex.join(_redacted_argv(self.command))
        return _public_url(self.url or "")


@dataclass(frozen=True)
class ServerTools:
    """What one server listed: its ``name`` (the id prefix and provider), version, tools, the seconds
    it took, and the SDK's warnings (a tool it dropped as invalid, say)."""

    server: McpServer
    name: str
    version: str | None
    tools: list[Tool]
    seconds: float
    warnings: tuple[str, ...] = ()


def list_server_tools(
    server: McpServer | str | Sequence[str], *, timeout: float = DEFAULT_TIMEOUT, name: str | None = None
) -> list[Tool]:
    """The tools of one MCP server (a ``McpServer``, a URL, or a command); ``CatalogError`` on failure."""
    return read_server(server, timeout=timeout, name=name).tools


def list_servers_tools(
    servers: Sequence[McpServer | str | Sequence[str]], *, timeout: float = DEFAULT_TIMEOUT
) -> list[Tool]:
    """The tools of several servers, in order; two servers with one name are a ``CatalogError``."""
    return [tool for listing in read_servers(servers, timeout=timeout) for tool in listing.tools]


def read_servers(
    servers: Sequence[McpServer | str | Sequence[str]],
    *,
    timeout: float = DEFAULT_TIMEOUT,
    on_server: Callable[[McpServer], None] | None = None,
) -> list[ServerTools]:
    """``read_server`` for each server in turn (``on_server`` is told before each), all or nothing:
    the first failure raises, and so do two servers that would share an id prefix."""
    listings: list[ServerTools] = []
    seen: dict[str, str] = {}
    for spec in servers:
        server = _as_server(spec)
        if on_server is not None:
            on_server(server)
        listing = read_server(server, timeout=timeout)
        if listing.name in seen:
            raise CatalogError(
                f"two MCP servers are named {listing.name!r} ({seen[listing.name]} and {server.label}): "
                "give one of them another name (--name) so that their tool ids stay apart"
            )
        seen[listing.name] = server.label
        listings.append(listing)
    return listings


def read_server(
    server: McpServer | str | Sequence[str], *, timeout: float = DEFAULT_TIMEOUT, name: str | None = None
) -> ServerTools:
    """``aread_server`` from synchronous code (not from inside a running event loop: await that one)."""
    import anyio

    return anyio.run(lambda: aread_server(server, timeout=timeout, name=name))


async def aread_server(
    server: McpServer | str | Sequence[str], *, timeout: float = DEFAULT_TIMEOUT, name: str | None = None
) -> ServerTools:
    """Connect to (or start) ``server``, list its tools within ``timeout`` seconds, and convert them."""
    import anyio

    require_extra("listing an MCP server's tools", "service", ("mcp",))
    server = _as_server(server, name)
    if not (isinstance(timeout, (int, float)) and math.isfinite(timeout) and timeout > 0):
        raise ConfigError(f"the MCP timeout must be a number of seconds > 0, got {shown(timeout)}")
    start = time.perf_counter()
    with _sdk_log() as warnings, tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace") as errlog:
        try:
            with anyio.fail_after(timeout):
                info, pages = await _list(server, errlog, timeout)
        except Exception as exc:  # what the transport raises is the SDK's and the server's; each is one line
            raise _failure(server, _leaf(exc), timeout, warnings, errlog) from None
        notes = tuple(warnings)
    name, tools = _convert(server, info, pages)
    return ServerTools(
        server=server,
        name=name,
        version=info[1],
        tools=tools,
        seconds=time.perf_counter() - start,
        warnings=notes,
    )


# ------------------------------------------------------------------------------------------ the session


async def _list(
    server: McpServer, errlog: TextIO, timeout: float
) -> tuple[tuple[str | None, str | None], list[dict]]:
    """(server name, version) and the raw tools of every ``tools/list`` page."""
    from mcp.client import Client
    from mcp.shared.exceptions import MCPError
    from mcp_types import Implementation

    from rated import __version__

    async with AsyncExitStack() as stack:
        transport = await _transport(server, errlog, stack, timeout)
        client = Client(transport, cache=None, client_info=Implementation(name="rated", version=__version__))
        async with client:
            info = client.server_info
            server_info = (info.name, info.version or None) if info is not None else (None, None)
            if client.server_capabilities.tools is None:
                raise _NoTools("it does not offer tools (no 'tools' capability)")
            tools: list[dict] = []
            cursor: str | None = None
            seen: set[str] = set()
            for _ in range(MAX_PAGES):
                try:
                    page = await client.list_tools(cursor=cursor)
                except MCPError as exc:
                    raise _NoTools(f"its tools/list failed ({exc.error.message})") from None
                tools.extend(t.model_dump(by_alias=True, mode="json", exclude_none=True) for t in page.tools)
                cursor = page.next_cursor
                if cursor is None:
                    return server_info, tools
                if cursor in seen:
                    raise _NoTools(f"its tools/list pages loop (cursor {shown(cursor, 60)} came back)")
                seen.add(cursor)
            raise _NoTools(f"its tools/list still had more pages after {MAX_PAGES}")
    raise AssertionError("unreachable")  # pragma: no cover


async def _transport(server: McpServer, errlog: TextIO, stack: AsyncExitStack, timeout: float) -> Any:
    if server.transport == "stdio":
        from mcp.client.stdio import StdioServerParameters, stdio_client

        env = {**os.environ, **server.env} if server.inherit_env else dict(server.env)
        params = StdioServerParameters(
            command=server.command[0], args=list(server.command[1:]), env=env or None, cwd=server.cwd
        )
        return stdio_client(params, errlog=errlog)
    import httpx2

    if server.transport == "sse":
        from mcp.client.sse import sse_client

        return sse_client(server.url or "", headers=dict(server.headers) or None, timeout=timeout)
    from mcp.client.streamable_http import streamable_http_client

    client = httpx2.AsyncClient(headers=dict(server.headers), timeout=httpx2.Timeout(timeout))
    http = await stack.enter_async_context(client)
    return streamable_http_client(server.url or "", http_client=http)


class _NoTools(Exception):
    """The server answered, but has no tool list to give."""


# ------------------------------------------------------------------------------------------ conversion


def _convert(
    server: McpServer, info: tuple[str | None, str | None], raw: list[dict]
) -> tuple[str, list[Tool]]:
    """The loader's MCP conversion, then the server's namespace, provider, provenance, endpoint, auth."""
    real_name, version = info
    name = (server.name or real_name or _fallback_name(server)).strip()
    if not raw:
        raise CatalogError(f"MCP server {server.label}: it lists no tools (tools/list is empty)")
    try:
        converted = load_catalog({"tools": raw})
    except CatalogError as exc:
        raise CatalogError(
            f"MCP server {server.label}: its tools/list is invalid: {len(exc.problems)} problem(s)",
            exc.problems,
        ) from None
    endpoint = _public_url(server.url) if server.url else None
    common = {
        "provider": name,
        "provenance": Provenance(package=real_name or name, version=version, path=server.label),
        "endpoint": endpoint,
        "auth": _auth(server),
    }
    tools: list[Tool] = []
    problems: list[CatalogProblem] = []
    for i, tool in enumerate(converted):
        record = {**tool.model_dump(), **common, "id": f"{name}.{tool.id.removeprefix('mcp:')}"}
        try:
            tools.append(Tool.model_validate(record))
        except ValidationError as exc:
            for err in exc.errors():
                field_name = ".".join(str(x) for x in err["loc"])
                problems.append(CatalogProblem(f"tools[{i}] ({tool.name})", field_name, pydantic_reason(err)))
    if problems:
        raise CatalogError(f"MCP server {server.label}: cannot index its tools as {name!r}", problems)
    return name, tools


def _fallback_name(server: McpServer) -> str:
    """A name for a server that did not give one: the URL's host, or the command's program name."""
    if server.url:
        return urlsplit(server.url).hostname or "mcp"
    return Path(server.command[0]).name or "mcp"


def _auth(server: McpServer) -> Auth:
    """From the names (never the values) of the secrets the server is given: a listing that needed none
    over HTTP is ``none``; a stdio server's own credentials are unknown unless its env names them."""
    names = server.headers if server.transport != "stdio" else server.env
    secrets = [k for k in names if _SECRET_NAME.search(k)]
    if secrets:
        return auth_from_credentials(secrets)
    return Auth(type=AuthType.NONE) if server.transport != "stdio" else Auth()


# ------------------------------------------------------------------------------------------ secrets out


def _redacted_argv(argv: Sequence[str]) -> list[str]:
    """``argv`` with the value of each option named like a secret replaced (``--token X``,
    ``--api-key=X``, ``API_KEY=X``)."""
    out: list[str] = []
    hide_next = False
    for arg in argv:
        if hide_next:
            out.append(_REDACTED)
            hide_next = False
            continue
        key, eq, _ = arg.partition("=")
        if eq and _SECRET_NAME.search(key):
            out.append(f"{key}={_REDACTED}")
        elif arg.startswith("-") and _SECRET_NAME.search(arg):
            out.append(arg)
            hide_next = True
        else:
            out.append(arg)
    return out


def _public_url(url: str) -> str:
    """``url`` without user-info, query string and fragment (where tokens are put)."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    try:
        port = parts.port
    except ValueError:
        port = None
    netloc = f"{host}:{port}" if port is not None else host
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


# ------------------------------------------------------------------------------------------ failures


def _as_server(spec: McpServer | str | Sequence[str], name: str | None = None) -> McpServer:
    if isinstance(spec, McpServer):
        if name is None or name == spec.name:
            return spec
        return replace(spec, name=name)
    return McpServer.parse(spec, name=name)


def _leaf(exc: BaseException) -> BaseException:
    """The first real error inside task-group exception groups (the SDK nests them)."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


def _failure(
    server: McpServer, exc: BaseException, timeout: float, warnings: list[str], errlog: TextIO
) -> CatalogError:
    """One line saying what went wrong with ``server``, in the user's terms."""
    from mcp.shared.exceptions import MCPError

    try:
        import httpx2
    except ImportError:  # pragma: no cover - the mcp SDK depends on it
        httpx2 = None  # type: ignore[assignment]

    stdio = server.transport == "stdio"
    if isinstance(exc, TimeoutError):  # an OSError: first
        reason = f"no answer within {timeout:g} s"
    elif isinstance(exc, FileNotFoundError) and stdio:
        missing = server.cwd is not None and not Path(server.cwd).is_dir()
        reason = f"cannot start it: {f'folder {server.cwd} not found' if missing else 'command not found'}"
    elif isinstance(exc, PermissionError) and stdio:
        reason = "cannot start it: permission denied (not an executable?)"
    elif isinstance(exc, OSError) and stdio:
        reason = f"cannot start it: {exc.strerror or exc}"
    elif isinstance(exc, _NoTools):
        reason = f"it serves no tools: {exc}"
    elif isinstance(exc, MCPError) and exc.error.message == "Connection closed":
        reason = "it closed the connection before answering"
    elif isinstance(exc, MCPError) and stdio:
        reason = f"it refused the MCP handshake ({exc.error.message})"
    elif isinstance(exc, MCPError):
        reason = f"not an MCP server, or it refused the session ({_http_reason(exc.error.message)})"
    elif httpx2 is not None and isinstance(exc, httpx2.HTTPStatusError):
        reason = f"not an MCP server: it answered HTTP {exc.response.status_code}"
    elif httpx2 is not None and isinstance(exc, httpx2.HTTPError):
        reason = f"cannot reach it ({type(exc).__name__}: {exc or 'no detail'})"
    else:
        reason = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    hints = []
    last = _last_line(errlog)
    if last:
        hints.append(f"its stderr ends: {shown(last, 160)}")
    if warnings:
        hints.append(f"the MCP SDK said: {shown(warnings[-1], 160)}")
    detail = f" ({'; '.join(hints)})" if hints else ""
    return CatalogError(f"MCP server {server.label}: {reason}{detail}")


def _http_reason(message: str) -> str:
    """The SDK's stand-in messages for an HTTP answer that is not MCP, said as what happened."""
    return {
        "Not Found": "HTTP 404",
        "Server returned an error response": "it answered with an HTTP error",
    }.get(message, message)


def _last_line(errlog: TextIO) -> str:
    """The last non-blank line a failed server wrote on stderr ('' when none)."""
    try:
        errlog.flush()
        size = errlog.seek(0, os.SEEK_END)
        errlog.seek(max(0, size - _STDERR_TAIL))
        text = errlog.read()
    except (OSError, ValueError):
        return ""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1] if lines else ""


class _Collect(logging.Handler):
    def __init__(self, into: list[str]) -> None:
        super().__init__(logging.WARNING)
        self.into = into

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self.into.append(record.getMessage())
        except Exception:  # pragma: no cover - a record whose arguments do not format
            self.into.append(str(record.msg))


@contextmanager
def _sdk_log() -> Iterator[list[str]]:
    """The MCP SDK's warnings while a server is read, collected rather than printed: with no handler
    anywhere, Python's last-resort handler would print them with a traceback (a line on stdout that is
    not JSON-RPC, say). A handler the application set up still receives them."""
    collected: list[str] = []
    handler = _Collect(collected)
    logger = logging.getLogger("mcp")
    logger.addHandler(handler)
    try:
        yield collected
    finally:
        logger.removeHandler(handler)
