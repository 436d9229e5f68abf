"""The MCP ``ping`` of a server reachable over HTTP, as a probe outcome (``rated.probe_checks.mcp_check``).

A probe connects as an agent host does (streamable HTTP; SSE for a URL whose path ends in ``/sse``),
completes the ``initialize`` handshake, sends ``ping`` and closes the session, all within ``timeout``
seconds. ``ping`` belongs to the handshake-era protocol versions (the 2026-07-28 version drops it), so the
client connects in the SDK's ``legacy`` mode, which servers of every version so far accept; one that
refuses it answered, and is up.

What the answer means, first rule that applies:

- ``ping`` answered: ``success`` (an error while closing the session afterwards changes nothing);
- an HTTP 5xx (but 501) or 429 on the way (the first one): that status's outcome (``rated.classify``: a
  503 with ``Retry-After`` is ``rate_limited``, a 504 ``timeout``);
- another HTTP error (401 without credentials, 404 or 405 at a URL that speaks the other transport) or a
  JSON-RPC error (a protocol version or method it refuses): ``success``, the server answers; the same rule
  as ``http_check``'s, and the collector never records headers, so a probe has no credentials to send;
- a failure that tells of this host rather than the server (a TLS certificate not trusted here, a
  temporary DNS failure, a proxy's): ``None``, nothing recorded, a warning once per host;
- no answer within ``timeout``: ``timeout``; a refused or dropped connection, or an internal error the
  server answered: ``tool_error``.

``ping`` and ``aping`` keep to ``timeout`` in all, name resolution included: the server's host is looked
up first, in the probes' shared lookup threads (``rated.probe_checks._resolved``), and a resolver that has not
answered by the deadline is this host's failure, ``None``: the server was never asked, and agents reach it
from hosts of their own. (Left to the SDK, the lookup was cancelled at the deadline and the ping counted as
the server's ``timeout``, while the lookup held a thread of the event loop's executor, and ``ping``'s
loop from closing, until the resolver gave up.) ``ping``'s thread ends at the deadline too, its
connections closed: the ping's ``fail_after`` cancels the session however slowly a server drips its answer
(each byte resets the HTTP client's read timeout, which alone would hold it for minutes, or for ever).
A thread of the ping's (the lookup's, ``ping``'s, ``aping``'s worker) that does not start, this process
starting no more, raises ``rated.probe_threads.NoThread``: this host's failure, which a probe records as
nothing.

The SDK's client is imported before the deadline starts: half a second or more on a busy host, which
counted against it made the first probe of each process (each ``rated serve`` worker) a ``timeout``. It
is never imported on an event loop, which would stall for that long: ``aping`` imports it in a worker
thread, and a server that probes imports it in a thread as it starts (``load_sdk``). An SDK that does not
import records nothing either.

The URL is used without user-info, query string or fragment (``mcp_url``), as the collector records it, so
no token in it reaches the request log lines of the SDK's HTTP client.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from contextlib import AsyncExitStack
from typing import Any
from urllib.parse import urlsplit

from rated.classify import outcome_from_exception, outcome_from_status
from rated.outcome import Outcome, OutcomeKind
from rated.probe_checks import (
    _bare_url,
    _bounded,
    _down,
    _not_the_tools,
    _resolved,
    _resolver_silent,
    _unchecked,
)
from rated.probe_threads import NoThread

__all__ = ["aping", "load_sdk", "mcp_url", "ping"]

_UP = Outcome(OutcomeKind.SUCCESS)
_loading = threading.Lock()  # one thread imports the SDK at a time: two at once may meet half-made modules
_loaded = False


def mcp_url(value: object) -> str | None:
    """``value`` as the URL a probe connects to, when it is an http(s) URL with a host: without user-info,
    query string and fragment; None otherwise (a stdio server's tools have no endpoint: not checked)."""
    return _bare_url(value)


def ping(url: str, timeout: float) -> Outcome | None:
    """``aping`` from synchronous code, over within ``timeout`` seconds in all (the SDK imported first), on
    an event loop of its own in a thread of its own (also when called from inside a running loop, a
    caller's mistake: ``aping`` is the one to await there)."""
    import anyio

    try:
        load_sdk()  # outside the deadline: once per process, and no fault of the server
    except ImportError as exc:
        _unchecked(url, f"the mcp SDK's client does not import: {exc}")
        return None
    # _bounded looks the host up first
    return _bounded(timeout, url, lambda left: anyio.run(_ping, url, left()))


async def aping(url: str, timeout: float) -> Outcome | None:
    """The outcome of pinging the MCP server at ``url`` (used as given: see ``mcp_url``) within
    ``timeout`` seconds; None when nothing can be said of the server (see the module's rules). A resolver
    that has not answered for the server's host within ``timeout`` is one of those: ``None`` (the server
    was never asked), not ``timeout``, as with ``ping``. The wait for the lookup holds a worker thread of
    anyio's for up to ``timeout`` seconds; the lookup itself runs in the probes' shared threads."""

    try:
        if _loaded:  # imported: names looked up in sys.modules
            _sdk()
        else:  # outside the deadline, and off the event loop (half a second or more)
            await _in_thread(load_sdk)
    except ImportError as exc:
        _unchecked(url, f"the mcp SDK's client does not import: {exc}")
        return None
    deadline = time.monotonic() + timeout
    if not await _in_thread(lambda: _resolved(url, deadline), abandon_on_cancel=True):
        _resolver_silent(url, timeout)
        return None
    return await _ping(url, max(deadline - time.monotonic(), 0.001))


async def _in_thread(fn: Callable[[], Any], *, abandon_on_cancel: bool = False) -> Any:
    """``fn()`` in a worker thread of anyio's (``anyio.to_thread.run_sync``); ``NoThread`` when the thread
    does not start (this process may start no more): this host's failure, which a probe records as
    nothing, where a ``RuntimeError`` would be the server's ``tool_error``."""
    import anyio

    ran = False

    def call() -> Any:
        nonlocal ran
        ran = True
        return fn()

    try:
        return await anyio.to_thread.run_sync(call, abandon_on_cancel=abandon_on_cancel)
    except RuntimeError as exc:
        if ran or isinstance(exc, NoThread):  # fn's own error
            raise
        raise NoThread(str(exc)) from exc


async def _ping(url: str, timeout: float) -> Outcome | None:
    """``aping`` once the SDK is imported and the host looked up."""
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
        return _UP if pinged else _failed(exc, answers, url)
    return _UP


def load_sdk() -> None:
    """Import the mcp SDK's client, once per process (``ImportError`` if it does not import); blocks for as
    long as that takes, so call it in a thread (``rated.service.probes`` does as its prober starts)."""
    global _loaded
    with _loading:
        _sdk()  # again when imported already (a lookup in sys.modules): a module removed since fails here
        _loaded = True


def _sdk() -> None:
    """Import what ``_client`` and ``_failed`` use."""
    import httpx2  # noqa: F401
    import mcp.client  # noqa: F401
    import mcp.client.sse  # noqa: F401
    import mcp.client.streamable_http  # noqa: F401
    import mcp.shared.exceptions  # noqa: F401
    import mcp_types  # noqa: F401


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


def _failed(error: BaseException, answers: list[Any], url: str) -> Outcome | None:
    """What a ping of ``url`` that failed with ``error``, after the HTTP ``answers``, says of the server."""
    from mcp.shared.exceptions import MCPError
    from mcp_types import CONNECTION_CLOSED, INTERNAL_ERROR, REQUEST_TIMEOUT

    for response in answers:
        if _down(response.status_code):
            return outcome_from_status(response.status_code, response.headers)
    if answers:  # it answered over HTTP, not to this client
        return _UP
    why = _not_the_tools(error)
    if why is not None:
        _unchecked(url, why)
        return None
    exc = _leaf(error)
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
