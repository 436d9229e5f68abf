"""The checks a probe can run, and the deadline they keep: ``http_check`` for tools with an HTTP
``endpoint``, ``mcp_check`` for tools collected from an MCP server reachable over HTTP (``rated catalog
mcp``; the ping itself is ``rated.mcp_ping``), ``default_check`` the two together. ``rated.probing`` runs
them: it picks the suspected tools, calls a check on each and records the answers.

Each check is over within its ``timeout`` in all (at most ``MAX_TIMEOUT``), name resolution included
(``_bounded``, ``_abounded`` on an event loop): the host of a tool's endpoint is looked up first in a few
shared, reused daemon threads (``_resolved``, ``_RESOLVERS``), and a resolver that has not answered by the
deadline is this host's failure, recorded as nothing; the check's connections are shut down at the
deadline (``_HangUp``). ``rated.probing`` uses the same lookup and deadline for checks of its callers.

A failure that tells of the probing host rather than the tool (a TLS certificate not trusted here, a
temporary DNS failure, a proxy's, a resolver that does not answer) records nothing, with a warning once
per host and reason from this module's logger (``_unchecked``).
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import inspect
import ipaddress
import logging
import re
import socket
import ssl
import threading
import time
import urllib.request
from collections.abc import Awaitable, Callable
from importlib import metadata
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from rated.catalog.schema import Tool
from rated.classify import outcome_from_status
from rated.errors import ConfigError
from rated.extras import install_hint
from rated.outcome import Outcome, OutcomeKind
from rated.probe_threads import Pool, start
from rated.shown import shown

__all__ = ["MAX_TIMEOUT", "Check", "default_check", "http_check", "mcp_check"]

log = logging.getLogger(__name__)
#: a check: the ``Tool`` in, its outcome out (``True``/``False``, an outcome name, an ``Outcome``) or
#: ``None`` when it cannot check that tool (``rated.probing`` says how each answer is recorded)
Check = Callable[[Tool], Any]
#: the longest a check may wait (seconds): a service's shutdown waits for the check in flight, and a tool
#: that takes over a minute to answer a health check is down for any agent
MAX_TIMEOUT = 60.0
#: statuses of a health request that mean "the server answers": an unauthenticated probe of an API URL
#: gets 401/403/404/405 from a server that is up, and 501 from one that does not implement HEAD; only the
#: other 5xx, 429 and no answer at all say otherwise
_UP_BELOW = 500
_MAX_HOPS = 3  # redirects within the endpoint's host an HTTP check follows (http to https, a moved path)
_warned: set[tuple[str, str]] = set()  # (host, reason) of the probes logged as recording nothing
#: threads (process-wide, reused) that look up the hosts of probes' endpoints, one lookup per host at a time:
#: a lookup the resolver does not answer holds one until the resolver gives up (seconds to minutes)
_RESOLVE_THREADS = 4
_RESOLVERS = Pool("rated-probe-resolve", _RESOLVE_THREADS)


def _timeout(timeout: Any) -> float:
    """``timeout`` as seconds a check may wait: a number above 0, at most ``MAX_TIMEOUT``."""
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not 0 < timeout <= MAX_TIMEOUT:
        raise ConfigError(
            f"the probe timeout must be > 0 and <= {MAX_TIMEOUT:g} seconds, got {shown(timeout)}"
        )
    return float(timeout)


def http_check(
    timeout: float = 5.0, *, method: str = "HEAD", url: Callable[[Tool], str | None] | None = None
) -> Check:
    """A check that sends ``method`` to each tool's ``endpoint`` (or ``url(tool)``): up when the server
    answers below 500 (401, 404 or 405 to an unauthenticated probe mean it is up) or 501 (no ``HEAD``
    there), otherwise the outcome of the status (a 429 or 503 with ``Retry-After`` is ``rate_limited`` for
    that long); no answer within ``timeout`` seconds is ``timeout``, a refused connection ``tool_error``.
    Tools without an ``http://`` or ``https://`` endpoint (none, ``stdio``, a bare name) are not checked.
    ``timeout`` bounds the whole check: name resolution (which httpx's timeouts leave out: a resolver
    that does not answer in time is this host's failure, recorded as nothing), connecting, each redirect
    and the answer however slowly it comes (``_bounded``); the check's connection is shut down at the
    deadline (``_HangUp``), so neither its thread nor its socket outlives it.

    The endpoint is requested without user-info, query string or fragment (as ``mcp_check`` does): a probe
    sends no credentials, and none reaches httpx's request log line; ``url(tool)`` is used as given. A
    redirect within the endpoint's host is followed (``_MAX_HOPS``); one to another host (a login page,
    maybe out of this host's reach) is the server's answer. A failure that tells of this host rather than
    the tool's (a TLS certificate not trusted here: a private CA, see ``SSL_CERT_FILE``; a temporary DNS
    failure; a proxy's) records nothing (``None``), with a warning once per host. Each check opens its own
    connection and closes it: nothing is held between probes, so the check needs no closing and a check
    made for each round leaks nothing. Needs httpx (the ``client`` or ``service`` extra)."""
    try:
        import httpx
    except ImportError:  # pragma: no cover - httpx comes with the client, service and dev extras
        raise ConfigError(f"http_check needs httpx: {install_hint('client')}") from None
    timeout = _timeout(timeout)
    where = url or (lambda tool: _bare_url(tool.endpoint))
    # no connection kept alive: a probe every few seconds at most gains nothing from one, and a pooled
    # socket would outlive the check (nothing closes a check)
    client = httpx.Client(timeout=timeout, limits=httpx.Limits(max_keepalive_connections=0))

    def ask(target: str, left: Callable[[], float], hang_up: _HangUp) -> Outcome | None:
        try:
            response = client.request(method, target, timeout=left(), extensions={"trace": hang_up.trace})
            for _ in range(_MAX_HOPS):
                hop = response.next_request  # set on a redirect (not followed by the client)
                if (
                    hop is None
                    or hop.url.host != response.url.host
                    or hop.url.scheme not in ("http", "https")
                ):
                    break
                hop.extensions["timeout"] = httpx.Timeout(left()).as_dict()  # what is left of the deadline
                response = client.send(hop)
        except httpx.TransportError as exc:
            why = _not_the_tools(exc)
            if why is None:
                raise
            _unchecked(target, why)
            return None
        if _down(response.status_code):
            return outcome_from_status(response.status_code, response.headers)
        return Outcome(OutcomeKind.SUCCESS)

    def check(tool: Tool) -> Outcome | None:
        target = _http_url(where(tool))
        if target is None:
            return None
        hang_up = _HangUp()
        return _bounded(timeout, target, lambda left: ask(target, left, hang_up), hang_up)

    return _OwnDeadline(check, timeout)


class _OwnDeadline:
    """A check of this module, which keeps to ``timeout`` in all by itself (``_bounded``: name resolution
    included, its connections shut down at the deadline): ``rated.probing.probe`` calls it as it is when that
    fits in the round's timeout, rather than in a thread of its ``_CHECKS`` with a deadline of the round's."""

    def __init__(self, check: Check, timeout: float) -> None:
        self.check, self.timeout = check, timeout

    def __call__(self, tool: Tool) -> Outcome | None:
        return self.check(tool)


class _HangUp:
    """Ends a check's HTTP requests from another thread: httpx's timeouts bound each read, not the answer,
    so a check's thread went on reading a server that drips its answer (each byte resetting the read
    timeout) past the check's deadline, socket open: minutes for headers (h11's 16 KiB limit), for ever
    for a body; one thread and socket more at each probe round of such a tool.

    ``trace`` (httpx's ``trace`` request extension, called in the check's thread at each step of a
    request, a redirect's included) keeps each socket the request connects; calling the ``_HangUp`` (at
    the deadline, from the caller's thread) shuts them down, which ends a read blocked on one at once
    (the request fails, and httpx closes the socket), and so ``trace`` does to a socket connected after."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._sockets: list[socket.socket] = []
        self._done = False

    def trace(self, event: str, info: dict[str, Any]) -> None:
        stream: Any = info.get("return_value")  # a connection's stream once connected (TCP, then TLS)
        sock = stream.get_extra_info("socket") if hasattr(stream, "get_extra_info") else None
        if not isinstance(sock, socket.socket):
            return
        with self._lock:
            self._sockets.append(sock)
            if self._done:
                _shut(sock)

    def __call__(self) -> None:
        with self._lock:
            self._done = True
            for sock in self._sockets:
                _shut(sock)


def _shut(sock: socket.socket) -> None:
    """Shut ``sock``'s connection down both ways, leaving the socket to its owner to close. The plain
    socket's method, also for a TLS one: ``SSLSocket.shutdown`` unsets the TLS state a read in another
    thread may be using. One closed already (its file number is then -1: never another socket's) is
    left."""
    with contextlib.suppress(OSError):
        socket.socket.shutdown(sock, socket.SHUT_RDWR)


def _bounded(
    timeout: float,
    url: str,
    ask: Callable[[Callable[[], float]], Outcome | None],
    hang_up: Callable[[], None] | None = None,
) -> Outcome | None:
    """``ask(left)`` (``left()``: the seconds left, for its own timeouts) over within ``timeout`` seconds in
    all, name resolution included. The host of ``url`` is looked up first (``_resolved``: in a few shared
    threads, unless a proxy is set for it): a resolver that has not answered by the deadline is this host's
    failure (``None``, recorded as nothing, a warning once per host, like ``_not_the_tools``). Then ``ask``
    runs in a daemon thread, so that nothing it blocks on holds the check longer (a server that drips its
    answer, each read resetting the read timeout; redirects, each with timeouts of its own): one that has
    not answered by the deadline is ``timeout``, and ``hang_up`` is called then (in the caller's thread) to
    end what the thread waits on (``_HangUp``: the check's connections); the thread ends with it, or else
    with its own timeouts (the MCP ping's deadline), and its answer is dropped. ``NoThread`` when the
    lookup's thread or ``ask``'s does not start."""
    deadline = time.monotonic() + timeout
    if not _resolved_in_time(url, deadline, timeout):
        return None
    done = threading.Event()
    answer: list[tuple[bool, Any]] = []

    def left() -> float:
        return max(deadline - time.monotonic(), 0.001)  # 0 would make a socket non-blocking

    def run() -> None:
        try:
            answer.append((True, ask(left)))
        except BaseException as exc:  # raised again in the caller's thread, which classifies it
            answer.append((False, exc))
        finally:
            done.set()

    start(threading.Thread(target=run, name="rated-probe-check", daemon=True))
    if not done.wait(max(deadline - time.monotonic(), 0.0)):
        if hang_up is not None:
            hang_up()
        return Outcome(OutcomeKind.TIMEOUT)
    ok, value = answer[0]
    if not ok:
        raise value
    return value


async def _abounded(timeout: float, url: str | None, pending: Awaitable[Any]) -> Any:
    """``_bounded`` on an event loop: what ``pending`` (a check under way) gives, within ``timeout`` seconds
    in all. The host of ``url`` (None: nothing to resolve) is resolved first (``_aresolved_in_time``): a
    resolver that has not answered by the deadline is this host's failure (``None``, a warning once per
    host, the check dropped unawaited); a check that has not raises ``TimeoutError`` (classified
    ``timeout``). A lookup that does not start (``NoThread``) or is cancelled drops the check too, and
    raises."""
    deadline = asyncio.get_running_loop().time() + timeout
    try:
        resolved = await _aresolved_in_time(url, deadline, timeout)
    except BaseException:  # the lookup's thread did not start (NoThread), or the probe was cancelled
        _drop(pending)
        raise
    if not resolved:
        _drop(pending)
        return None
    async with asyncio.timeout_at(deadline):
        return await pending


def _resolved_in_time(url: str | None, deadline: float, timeout: float) -> bool:
    """Whether a check of ``url`` may go on: its host (none for None) has been looked up by ``deadline``
    (``time.monotonic()`` seconds; ``_resolved``). If not, it is this host's failure: the caller gives up
    (recording nothing), and ``_resolver_silent`` says so once per host. ``timeout``: the check's, for the
    warning."""
    if url is None or _resolved(url, deadline):
        return True
    _resolver_silent(url, timeout)
    return False


async def _aresolved_in_time(url: str | None, deadline: float, timeout: float) -> bool:
    """``_resolved_in_time`` on an event loop (``deadline`` in the loop's time): the lookup awaited
    (``_aresolve``) until the deadline, which cancels the wait. ``NoThread`` when the lookup's thread does
    not start."""
    if url is None:
        return True
    try:
        async with asyncio.timeout_at(deadline):
            await _aresolve(url)
    except TimeoutError:
        _resolver_silent(url, timeout)
        return False
    return True


def _resolver_silent(url: str, timeout: float) -> None:
    """Warn (once per host) that probes of tools at ``url`` record nothing: this host's resolver did not
    answer for it within ``timeout`` seconds."""
    _unchecked(url, f"name resolution did not answer within {timeout:g} s on this host")


async def _aresolve(url: str) -> None:
    """``_resolved`` on an event loop, awaited until the lookup ends (the caller's deadline cancels the
    wait): the lookup runs in ``_RESOLVERS``, shared with the sync checks, and tells the loop when it ends,
    so a resolver that does not answer holds no worker of the loop's executor, nor the loop's closing
    (``asyncio.run`` waits for those threads)."""
    name = _lookup_name(url)
    if name is None:
        return
    loop = asyncio.get_running_loop()
    done = loop.create_future()

    def settle() -> None:
        if not done.done():  # cancelled at the deadline
            done.set_result(None)

    def wake() -> None:
        with contextlib.suppress(RuntimeError):  # the loop has closed since
            loop.call_soon_threadsafe(settle)

    job = _RESOLVERS.run(name, lambda: _lookup(*name))
    try:
        job.on_done(wake)
        await done
    finally:
        _RESOLVERS.leave(job)


def _drop(pending: Awaitable[Any]) -> None:
    """Discard a check that will not be awaited: a coroutine closed (no "never awaited" warning), a task
    or future cancelled."""
    if inspect.iscoroutine(pending):
        pending.close()
    elif isinstance(pending, asyncio.Future):
        pending.cancel()


def _resolved(url: str, deadline: float) -> bool:
    """Whether the system's resolver has answered for the host of ``url`` by ``deadline``
    (``time.monotonic()`` seconds), or there is nothing to look up (``_lookup_name``). The lookup runs in
    one of ``_RESOLVE_THREADS`` shared, reused daemon threads (``_RESOLVERS``), one lookup per host at a
    time: a lookup the resolver does not answer holds its thread until the resolver gives up (seconds to
    minutes; nothing can stop ``getaddrinfo``), so names it does not answer hold a few threads, not one
    more at each check. A check of a host being looked up waits for that lookup; one that finds every
    thread waiting on the resolver gets no answer by its deadline (this host's resolver is not answering)."""
    name = _lookup_name(url)
    if name is None:
        return True
    job = _RESOLVERS.run(name, lambda: _lookup(*name))
    try:
        return job.wait(deadline)
    finally:
        _RESOLVERS.leave(job)


def _lookup_name(url: str) -> tuple[str, int] | None:
    """The host and port of ``url`` a connection to it looks up, or None: no host, an address (nothing to
    look up), an invalid port, or a proxy set for the host (the proxy looks it up)."""
    try:
        parts = urlsplit(url)
        host, port = parts.hostname, parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:  # a port out of range
        return None
    if not host or _proxied(parts.scheme, host):
        return None
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return host, port
    return None


def _lookup(host: str, port: int) -> None:
    """Look ``host`` up as a connection to it does (the addresses are not used: the request looks it up
    again, from the system's cache where it has one). A failure is left for the request to meet, which
    classifies it as before."""
    with contextlib.suppress(OSError, ValueError):  # ValueError: a name IDNA refuses (UnicodeError)
        socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)


def _proxied(scheme: str, host: str) -> bool:
    """Whether a request to ``host`` goes through a proxy of the environment (``HTTPS_PROXY``,
    ``ALL_PROXY``, ... less ``NO_PROXY``), as httpx reads them."""
    proxies = urllib.request.getproxies()
    return bool(proxies.get(scheme) or proxies.get("all")) and not urllib.request.proxy_bypass(host)


def _down(status: int) -> bool:
    """Whether an HTTP answer to a probe says the server is not up (``_UP_BELOW``)."""
    return status == 429 or (status >= _UP_BELOW and status != 501)


def _bare_url(value: object) -> str | None:
    """``value`` without user-info, query string and fragment when it is an http(s) URL with a host, else
    None: what a probe requests, with no credentials and no token to leak into a log line."""
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


def _not_the_tools(exc: BaseException) -> str | None:
    """Why a check's failure ``exc`` tells of the host the probe runs on rather than of the tool, or None.
    Agents call the tool from their own hosts: a certificate this host does not trust (a private CA its
    bundle lacks), its resolver failing for a while, its proxy failing would demote every tool probed.
    Looks through ``__cause__``, ``__context__`` and exception groups (httpx wraps the socket's error)."""
    again = getattr(socket, "EAI_AGAIN", None)
    todo: list[BaseException] = [exc]
    seen: set[int] = set()
    while todo and len(seen) < 16:
        e = todo.pop()
        if id(e) in seen:
            continue
        seen.add(id(e))
        if isinstance(e, ssl.SSLCertVerificationError):
            return (
                "their TLS certificate is not trusted on this host (a private CA? point SSL_CERT_FILE at a "
                f"bundle that has it): {e.verify_message or e}"
            )
        if isinstance(e, socket.gaierror) and again is not None and e.errno == again:
            return "name resolution is failing on this host for now (a temporary DNS failure)"
        if any(cls.__name__ == "ProxyError" for cls in type(e).__mro__):
            return f"the HTTP proxy (HTTP_PROXY, HTTPS_PROXY, ALL_PROXY) failed: {e}"
        todo.extend(x for x in (e.__cause__, e.__context__) if x is not None)
        if isinstance(e, BaseExceptionGroup):
            todo.extend(e.exceptions)
    return None


def _unchecked(url: str, why: str) -> None:
    """Log, once per host and reason in this process, that probes of tools at ``url`` record nothing."""
    host = urlsplit(url).hostname or "?"
    if (host, why) not in _warned:
        _warned.add((host, why))
        log.warning("probes of tools at %s record nothing: %s", host, why)


def _http_url(value: object) -> str | None:
    """``value`` when it is an absolute http(s) URL with a host, else None (nothing to send a request to:
    not the tool's failure)."""
    import httpx

    if not isinstance(value, str) or not value:
        return None
    try:
        parsed = httpx.URL(value)
    except (httpx.InvalidURL, TypeError, ValueError):
        return None
    return value if parsed.scheme in ("http", "https") and parsed.host else None


def mcp_check(timeout: float = 5.0) -> Check:
    """A check that pings the MCP server a tool was collected from, over HTTP: the tools ``rated catalog
    mcp`` lists from a streamable-HTTP or SSE server have ``source`` ``mcp`` and the server's URL as
    ``endpoint`` (SSE when its path ends in ``/sse``, the SDK's default). Each check connects, completes
    the ``initialize`` handshake, sends ``ping`` and closes, within ``timeout`` seconds
    (``rated.mcp_ping``): a ping answered is up; an HTTP 5xx or 429 on the way is that status's outcome;
    another HTTP or JSON-RPC error is up (the server answers but refuses this client: the collector never
    records headers, so a probe has no credentials); no answer in time is ``timeout``, a refused or
    dropped connection ``tool_error``. The URL is used without user-info or query string (the collector
    records it so), so no token in it reaches a request log.

    Other tools are not checked (``None``), among them the tools of stdio servers: checking one would
    spawn the server's command for each probe (seconds of start-up, an ``npx`` download, side effects of
    its own), with an environment the collector never records (their secrets). Needs the mcp SDK, 2.3 or
    a later 2.x (the ``service`` extra; ``ConfigError`` otherwise), imported at the first check, before
    its deadline starts. As with ``http_check``, a failure that tells of this host (a certificate not
    trusted here, a temporary DNS failure, a proxy's) records nothing."""
    problem = _mcp_sdk_problem()
    if problem is not None:
        raise ConfigError(problem)
    timeout = _timeout(timeout)

    def check(tool: Tool) -> Outcome | None:
        target = _bare_url(tool.endpoint) if tool.source == "mcp" else None
        if target is None:
            return None
        from rated.mcp_ping import ping

        return ping(target, timeout)

    return _OwnDeadline(check, timeout)


def _mcp_sdk_problem() -> str | None:
    """Why ``mcp_check`` cannot run here, or None. Read from the installed distribution's version, without
    importing the SDK (half a second): another major version's client API would fail every ping, and each
    failure would be recorded against a tool."""
    if importlib.util.find_spec("mcp") is None:
        return f"mcp_check needs the mcp SDK: {install_hint('service')}"
    try:
        version = metadata.version("mcp")
    except metadata.PackageNotFoundError:  # importable without its metadata (vendored): the import decides
        return None
    found = re.match(r"(\d+)\.(\d+)", version)
    if found is not None and not (2, 3) <= (int(found[1]), int(found[2])) < (3, 0):
        return (
            f"mcp_check needs mcp>=2.3,<3 (the 2.x client API), found mcp {version}: "
            "pip install 'mcp>=2.3,<3'"
        )
    return None


def default_check(timeout: float = 5.0) -> Check:
    """``mcp_check`` for tools collected from an MCP server over HTTP (``source`` ``mcp``), ``http_check``
    for the others with an http(s) ``endpoint``; tools of stdio MCP servers and tools without an http(s)
    endpoint are not checked. Without a usable mcp SDK (none, or another major version: a warning says
    so), MCP servers' URLs get the HTTP check too. What ``rated serve`` and ``rated mcp`` probe with."""
    http = http_check(timeout)
    problem = _mcp_sdk_problem()
    mcp = mcp_check(timeout) if problem is None else None
    if problem is not None and importlib.util.find_spec("mcp") is not None:
        log.warning("tools of MCP servers get the HTTP check, not an MCP ping: %s", problem)

    def check(tool: Tool) -> Outcome | None:
        if mcp is not None and tool.source == "mcp":
            return mcp(tool)
        return http(tool)

    return _OwnDeadline(check, _timeout(timeout))
