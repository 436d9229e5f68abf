"""The MCP ``ping`` of a server reachable over HTTP, as a probe outcome (``rated.probing.mcp_check``).

A probe connects as an agent host does (streamable HTTP; SSE for a URL whose path ends in ``/sse``),
completes the ``initialize`` handshake, sends ``ping`` and closes the session, all within ``timeout``
seconds. ``ping`` belongs to the handshake-era protocol versions (the 2026-07-28 version drops it), so the
client connects in the SDK's ``legacy`` mode, which servers of every version so far accept; one that
refuses it answered, and is up.

What the answer means, first rule that applies:

- ``ping`` answered: ``success`` (an error while closing the session afterwards changes nothing);
- an HTTP 5xx or 429 on the way (the first one): that status's outcome (``rated.classify``: a 503 with
  ``Retry-After`` is ``rate_limited``, a 504 ``timeout``);
- another HTTP error (401 without credentials, 404 or 405 at a URL that speaks the other transport) or a
  JSON-RPC error (a protocol version or method it refuses): ``success``, the server answers; the same rule
  as ``http_check``'s, and the collector never records headers, so a probe has no credentials to send;
- no answer within ``timeout``: ``timeout``; a refused or dropped connection, or an internal error the
  server answered: ``tool_error``.

The URL is used without user-info, query string or fragment (``mcp_url``), as the collector records it, so
no token in it reaches the request log lines of the SDK's HTTP client.
"""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from contextlib import AsyncExitStack
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from rated.classify import outcome_from_exception, outcome_from_status
from rated.outcome import Outcome, OutcomeKind

__all__ = ["aping", "mcp_url", "ping"]

_UP = Outcome(OutcomeKind.SUCCESS)


def mcp_url(value: object) -> str | None:
    """``value`` as the URL a probe connects to, when it is an http(s) URL with a host: without user-info,
    query string and fragment; None otherwise (a stdio server's tools have no endpoint: not checked)."""
    if not isinstance(value, str) or not value:
        return None
    try:
        parts = urlsplit(value.strip())
        port = parts.port
    except ValueError:  # an invalid port or IPv6 host: nothing to connect to
        return None
    host = parts.hostname
    if parts.scheme not in ("http", "https") or not host:
        return None
    if ":" in host:
        host = f"[{host}]"
    netloc = host if port is None else f"{host}:{port}"
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


def ping(url: str, timeout: float) -> Outcome:
    """``aping`` from synchronous code; from inside a running event loop (a caller's mistake: ``aping``
    is the one to await), in a thread of its own, since that loop cannot run a second one."""
    import anyio

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return anyio.run(aping, url, timeout)
    with ThreadPoolExecutor(1, thread_name_prefix="rated-mcp-ping") as pool:
        return pool.submit(anyio.run, aping, url, timeout).result()


async def aping(url: str, timeout: float) -> Outcome:
    """The outcome of pinging the MCP server at ``url`` (used as given: see ``mcp_url``) within
    ``timeout`` seconds."""
    import anyio

    answers: list[Any] = []  # the HTTP responses other than 2xx, in order

    async def seen(response: Any) -> None:
        if response.status_code >= 300:
            answers.append(response)

    pinged = False
    try:
        with anyio.fail_after(timeout):
            async with AsyncExitStack() as stack:
                client = await _client(url, timeout, seen, stack)
                await client.session.send_ping()
                pinged = True
    except Exception as exc:
        return _UP if pinged else _failed(_leaf(exc), answers)
    return _UP


async def _client(url: str, timeout: float, seen: Any, stack: AsyncExitStack) -> Any:
    """A connected ``mcp.client.Client`` (the ``initialize`` handshake done), closed with ``stack``."""
    import httpx2
    from mcp.client import Client
    from mcp_types import Implementation

    from rated import __version__

    hooks = {"response": [seen]}
    if urlsplit(url).path.rstrip("/").endswith("/sse"):
        from mcp.client.sse import sse_client

        def factory(headers: Any = None, timeout: Any = None, auth: Any = None) -> httpx2.AsyncClient:
            return httpx2.AsyncClient(headers=headers, timeout=timeout, auth=auth, event_hooks=hooks)

        transport = sse_client(url, timeout=timeout, sse_read_timeout=timeout, httpx_client_factory=factory)
    else:
        from mcp.client.streamable_http import streamable_http_client

        http = await stack.enter_async_context(
            httpx2.AsyncClient(timeout=httpx2.Timeout(timeout), event_hooks=hooks)
        )
        transport = streamable_http_client(url, http_client=http)
    info = Implementation(name="rated-probe", version=__version__)
    client = Client(transport, mode="legacy", cache=None, client_info=info)
    return await stack.enter_async_context(client)


def _failed(exc: BaseException, answers: list[Any]) -> Outcome:
    """What a ping that failed with ``exc``, after the HTTP ``answers``, says of the server."""
    from mcp.shared.exceptions import MCPError
    from mcp_types import CONNECTION_CLOSED, INTERNAL_ERROR, REQUEST_TIMEOUT

    for response in answers:
        if response.status_code >= 500 or response.status_code == 429:
            return outcome_from_status(response.status_code, response.headers)
    if answers:  # it answered over HTTP, not to this client
        return _UP
    if isinstance(exc, MCPError):
        if exc.code == REQUEST_TIMEOUT:
            return Outcome(OutcomeKind.TIMEOUT)
        if exc.code in (CONNECTION_CLOSED, INTERNAL_ERROR):
            return Outcome(OutcomeKind.TOOL_ERROR)
        return _UP  # a JSON-RPC error is an answer
    outcome = outcome_from_exception(exc)
    if outcome is None or outcome.kind is OutcomeKind.CALLER_ERROR:  # a probe sends no arguments to fault
        return Outcome(OutcomeKind.TOOL_ERROR)
    return outcome


def _leaf(exc: BaseException) -> BaseException:
    """The first error inside task-group exception groups (the SDK nests them)."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc
