"""Health probes: check the tools the policy has demoted, so that a recovered tool comes back without an
agent paying a failed call to find out (the way Envoy's active health checks or an MCP ``ping`` work).

Demotion needs no probe: agents' failures show it. Recovery does: a demoted tool gets no traffic, so the
policy only retries it once its failure belief has relaxed, minutes later, and an agent pays for that
retry when the tool is still down. The dynamic benchmark measured what probes buy (``--probes``,
docs/dynamic-benchmark.md). Here, each round asks the policy which suspected tools are most worth a check
(``Retriever.probe_targets``: most expected missed demand first, a few per round), runs ``check(tool)``
on each, and records the result as probe feedback: it moves the policy's belief like an agent's call but
is not written to the outcome log, whose counts are the agents' calls.

A check takes the ``Tool`` and returns its outcome (``True``/``False``, an outcome name, an ``Outcome``),
or ``None`` when it cannot check that tool (nothing is recorded); an exception it raises is classified
like a tracked call's (``rated.classify``: a timeout is ``timeout``, a refused connection ``tool_error``).
Each check is over within a timeout (``probe``'s and ``aprobe``'s ``timeout``, 5 s): one that has not
answered is ``timeout``. Work that may block past it (a sync check that hangs, a lookup the system's
resolver does not answer) runs in a few reused daemon threads (``rated.probe_threads``), not in one more
thread per check.
``http_check`` is one for tools with an HTTP ``endpoint``, ``mcp_check`` one for tools collected from an
MCP server reachable over HTTP (``rated catalog mcp``), ``default_check`` the two together.

Replicas (``rated serve`` workers, hosts) sharing one store each run a prober. Each ``Prober`` draws its
waits within ``jitter`` (20%) of ``every`` and picks its round's targets at random among the policy's top
``SPREAD x budget``, weighted to the top, from its own random generator (fresh entropy at each start):
replicas drift apart in time and mostly check different tools. A probe's answer goes to the store, so a
tool one replica found up is no target for the others from their next round on (each round re-reads the
store).
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import inspect
import ipaddress
import logging
import random
import re
import socket
import ssl
import threading
import time
import urllib.request
from collections.abc import Awaitable, Callable, Hashable
from dataclasses import dataclass
from importlib import metadata
from typing import TYPE_CHECKING, Any, Self
from urllib.parse import urlsplit, urlunsplit

from rated.catalog.schema import Tool
from rated.classify import outcome_from_exception, outcome_from_status
from rated.errors import ConfigError, RatedError, UnknownToolError
from rated.outcome import Outcome, OutcomeKind
from rated.probe_threads import NoThread, Pool, start
from rated.shown import shown

if TYPE_CHECKING:
    from rated.retriever import Retriever

__all__ = [
    "MAX_EVERY",
    "MAX_JITTER",
    "MAX_TIMEOUT",
    "MIN_EVERY",
    "SPREAD",
    "AsyncCheck",
    "Check",
    "ProbeResult",
    "Prober",
    "aprobe",
    "default_check",
    "http_check",
    "mcp_check",
    "probe",
]

log = logging.getLogger("rated.probing")
Check = Callable[[Tool], Any]
AsyncCheck = Callable[[Tool], Awaitable[Any]]
#: statuses of a health request that mean "the server answers": an unauthenticated probe of an API URL
#: gets 401/403/404/405 from a server that is up, and 501 from one that does not implement HEAD; only the
#: other 5xx, 429 and no answer at all say otherwise
_UP_BELOW = 500
_MAX_HOPS = 3  # redirects within the endpoint's host an HTTP check follows (http to https, a moved path)
_warned: set[tuple[str, str]] = set()  # (host, reason) of the probes logged as recording nothing
_NOT_AWAITED = object()  # what a check aprobe calls returned when it is not awaitable
_EXIT_WAIT = 10.0  # seconds leaving a ``with Prober(...)`` block waits for a check in flight
#: the shortest probe interval (seconds). Each round re-reads the store under the retriever's lock (which
#: agents' calls take too) before its checks: one round a second at most keeps that to one store read a
#: second per replica, and a server to ``budget`` probes a second, while a shorter interval would find a
#: recovery less than a second sooner (the policy's belief relaxes over minutes). Kubernetes probes'
#: ``periodSeconds`` has the same floor.
MIN_EVERY = 1.0
#: the longest (a day): any longer is as good as off, and a wait past ``threading.TIMEOUT_MAX`` (inf, say)
#: raised ``OverflowError`` in the prober's thread
MAX_EVERY = 86_400.0
#: the longest a check may wait (seconds): a service's shutdown waits for the check in flight, and a tool
#: that takes over a minute to answer a health check is down for any agent
MAX_TIMEOUT = 60.0
MAX_JITTER = 0.5  #: the widest jitter: each wait stays within half and one and a half intervals
#: a prober picks its ``budget`` targets among the policy's top ``SPREAD x budget``
SPREAD = 3
#: threads (process-wide, reused) that run ``probe``'s checks: a check that hangs holds one until it
#: returns, and nothing can stop it; a Prober runs one check at a time, so the rest is for checks that hang
#: and for probes from several threads at once
_CHECK_THREADS = 8
#: threads (process-wide, reused) that look up the hosts of probes' endpoints, one lookup per host at a time:
#: a lookup the resolver does not answer holds one until the resolver gives up (seconds to minutes)
_RESOLVE_THREADS = 4
_CHECKS = Pool("rated-probe-worker", _CHECK_THREADS)
_RESOLVERS = Pool("rated-probe-resolve", _RESOLVE_THREADS)


@dataclass(frozen=True)
class ProbeResult:
    """One probe: the outcome recorded (``None``: the check could not check this tool) or the ``error``
    that kept it from being recorded (the tool removed meanwhile, the store busy)."""

    tool_id: str
    outcome: Outcome | None
    error: str | None = None


def probe(
    retriever: Retriever,
    check: Check,
    budget: int = 3,
    *,
    stop: threading.Event | None = None,
    rng: random.Random | None = None,
    timeout: float = 5.0,
) -> list[ProbeResult]:
    """One round: check up to ``budget`` suspected tools, one after another, and record each result.

    The targets are the policy's top ``budget``, or with ``rng`` (what a ``Prober`` passes) ``budget``
    drawn from its top ``SPREAD x budget``, rank ``i`` (from 0) weighted ``1 / (i + 1)``: replicas sharing
    a store then mostly check different tools. Once ``stop`` is set no further check starts, and the answer of
    the check in flight is not recorded: whoever stopped the round may close the store next (a service
    shutting down).

    Each check is over within ``timeout`` seconds in all (at most ``MAX_TIMEOUT``), name resolution
    included, as in ``aprobe``: a resolver that has not answered for the host of the tool's http(s)
    ``endpoint`` by the deadline records nothing (this host's failure, a warning once per host); a check
    that has not returned is ``timeout``. Nothing can stop a check that hangs, so checks run in a few
    reused daemon threads (``_run_check``), not the caller's: one that hangs holds its thread until it
    returns, and its answer is dropped. Give a check with a timeout of its own a ``timeout`` at least as
    long (``http_check``, ``mcp_check`` and ``default_check`` with one no longer run as they are). A
    probe for which rated cannot start a thread (the process's limit: ``NoThread``) records nothing, with a
    warning once, as in ``aprobe``: the probing host's failure, not the tool's."""
    return _round(retriever, check, budget, rng, _Gate(stop), _timeout(timeout))


class _Gate:
    """A round's passage between its checks and the store. Once ``stop`` is set the round touches the store
    no more (no targets read, no answer recorded), and ``checking`` says when it is inside a check: a
    ``Prober`` stopping without waiting for the check in flight (whose answer is dropped) waits only while
    the round reads or writes the store, which its caller may close next."""

    def __init__(self, stop: threading.Event | None = None) -> None:
        self.stop = stop if stop is not None else threading.Event()
        self.changed = threading.Condition()  # notified when checking or ended changes
        self.checking = False
        self.ended = False  # set by the prober's thread as it ends

    def enter_check(self) -> bool:
        """Whether a check may start (not stopped); it is in flight from here."""
        with self.changed:
            if self.stop.is_set():
                return False
            self.checking = True
            self.changed.notify_all()
            return True

    def leave_check(self) -> bool:
        """The check is over; whether its answer may be recorded (not stopped meanwhile)."""
        with self.changed:
            self.checking = False
            return not self.stop.is_set()

    def end(self) -> None:
        with self.changed:
            self.ended = True
            self.changed.notify_all()


def _round(
    retriever: Retriever,
    check: Check,
    budget: int,
    rng: random.Random | None,
    gate: _Gate,
    timeout: float,
) -> list[ProbeResult]:
    if gate.stop.is_set():
        return []
    results = []
    for tool_id, tool in _targets(retriever, budget, rng):
        if not gate.enter_check():
            break
        failed: Exception | None = None
        try:
            answer = _run_check(check, tool, timeout)
        except NoThread as exc:  # this host's failure, not the tool's
            answer = None
            _no_thread(exc)
        except Exception as exc:  # the check failing is the answer: classified like a tool call's error
            answer, failed = None, exc
        finally:
            recordable = gate.leave_check()
        if not recordable:
            break
        # a check returning nonsense is a bug in it, not a tool failure (_outcome raises ConfigError)
        outcome = outcome_from_exception(failed) if failed is not None else _outcome(answer)
        results.append(_record(retriever, tool_id, outcome))
    return results


def _run_check(check: Check, tool: Tool, timeout: float) -> Any:
    """``check(tool)``'s answer within ``timeout`` seconds in all (what it raises is raised), name
    resolution included: the host of the tool's http(s) endpoint is looked up first (``_resolved``), and a
    resolver that has not answered by the deadline is this host's failure (None, a warning once per host);
    a check that has not returned is ``timeout``.

    The check runs in one of ``_CHECK_THREADS`` reused daemon threads (``_CHECKS``), so that a check that
    hangs holds one of them until it returns rather than the round (and a prober's thread: no round would
    run again), or one more thread at each round. A check of the same tool by the same check still running
    from an earlier round is waited for rather than started again: a tool whose check hangs holds one
    thread, and is a ``timeout`` at each round until its check returns (an answer within the round's
    deadline is recorded). A check that finds no thread free by its deadline (each holding a check that
    hangs, or probes from many threads at once) records nothing, with a warning once. A thread of rated's
    that does not start (here, or in a check of this module) raises ``NoThread``, which the round records as
    nothing (``_no_thread``). A check of this module keeping to a timeout no longer than ``timeout`` by
    itself (``_OwnDeadline``) is called as it is."""
    if isinstance(check, _OwnDeadline) and check.timeout <= timeout:
        return check(tool)
    deadline = time.monotonic() + timeout
    url = _bare_url(tool.endpoint)
    if url is not None and not _resolved(url, deadline):
        _unchecked(url, f"name resolution did not answer within {timeout:g} s on this host")
        return None
    job = _CHECKS.run(_check_key(check, tool), lambda: check(tool))
    try:
        if job.wait(deadline):
            return job.result()
    finally:
        _CHECKS.leave(job)
    if job.started.is_set():
        return Outcome(OutcomeKind.TIMEOUT)
    _warn_once(
        "no thread free",
        f"probes record nothing while all {_CHECKS.size} threads that run checks are busy (checks that hang "
        "past their timeout, or probes from many threads at once): no thread free",
    )
    return None


def _no_thread(exc: NoThread) -> None:
    """What a probe that met ``exc`` (a thread of rated's that did not start: this process may start no
    more) records: nothing, with a warning once. A thread limit of the probing host says nothing of the
    tool, and every tool probed meanwhile would be demoted."""
    _warn_once(
        "no thread started",
        f"probes record nothing while this process can start no more threads: {exc}",
    )


def _check_key(check: Check, tool: Tool) -> Hashable:
    """What makes two checks the same question: the check (by identity when it cannot be hashed: the job
    holds it while it runs, so the id stays its own) and the tool's id and endpoint."""
    who: Hashable
    try:
        hash(check)
        who = check
    except TypeError:
        who = id(check)
    return (who, tool.id, tool.endpoint)


async def aprobe(
    retriever: Retriever,
    check: AsyncCheck,
    budget: int = 3,
    *,
    rng: random.Random | None = None,
    timeout: float = 5.0,
) -> list[ProbeResult]:
    """``probe`` with an async check, the checks run concurrently; recording runs in a worker thread.

    Each check is over within ``timeout`` seconds in all (at most ``MAX_TIMEOUT``), name resolution
    included, as ``http_check`` and ``mcp_check`` keep to theirs (``_abounded``): the host of the tool's
    http(s) ``endpoint`` is resolved first, and a resolver that has not answered by the deadline records
    nothing (this host's failure, a warning once per host); a check that has not is ``timeout``, and is
    cancelled (an httpx client's connection closes with it, however slowly the server drips its answer).
    Give a check with a timeout of its own a ``timeout`` at least as long.

    A check that returns nonsense (or is not async: its answer would be lost) is a ``ConfigError``, raised
    once the other checks' answers are recorded."""
    timeout = _timeout(timeout)
    targets = await asyncio.to_thread(_targets, retriever, budget, rng)

    async def one(tool: Tool) -> Outcome | None:
        try:
            pending = check(tool)
            if inspect.isawaitable(pending):
                answer = await _abounded(timeout, _bare_url(tool.endpoint), pending)
            else:
                answer = _NOT_AWAITED
        except NoThread as exc:
            _no_thread(exc)
            return None
        except Exception as exc:
            return outcome_from_exception(exc)
        if answer is _NOT_AWAITED:
            if pending is None:  # cannot check this tool, said without awaiting anything
                return None
            raise ConfigError(
                f"aprobe awaits its check, which returned {shown(pending)}: pass an async function "
                "(or run a plain one with probe, in a thread)"
            )
        return _outcome(answer)

    answers = await asyncio.gather(*(one(tool) for _, tool in targets), return_exceptions=True)
    results, bad_check = [], None
    for (tool_id, _), answer in zip(targets, answers, strict=True):
        if isinstance(answer, ConfigError):
            bad_check = bad_check or answer
        elif isinstance(answer, BaseException):  # an interruption (cancelled, KeyboardInterrupt)
            raise answer
        else:
            results.append(await asyncio.to_thread(_record, retriever, tool_id, answer))
    if bad_check is not None:
        raise bad_check
    return results


def _targets(retriever: Retriever, budget: int, rng: random.Random | None) -> list[tuple[str, Tool]]:
    if rng is None:
        chosen = retriever.probe_targets(budget)
    else:
        budget = _budget(budget)
        chosen = _spread(retriever.probe_targets(SPREAD * budget), budget, rng)
    out = []
    for tool_id in chosen:
        try:
            out.append((tool_id, retriever.tool(tool_id)))
        except UnknownToolError:  # removed since the policy named it
            continue
        except RatedError as exc:  # a damaged record: the other targets are still checked
            log.warning("probe of %s skipped: %s", shown(tool_id), exc)
    return out


def _spread(ranked: list[str], budget: int, rng: random.Random) -> list[str]:
    """``budget`` of ``ranked`` (most useful first), drawn without replacement with rank ``i`` weighted
    ``1 / (i + 1)`` (Efraimidis-Spirakis keys ``u ** (i + 1)``), kept in rank order. Budget 3 of 9: the
    first is drawn in 78% of rounds, the second 54%, the ninth 15% (100,000 simulated draws)."""
    if len(ranked) <= budget:
        return list(ranked)
    keys = [rng.random() ** (i + 1) for i in range(len(ranked))]
    top = sorted(range(len(ranked)), key=keys.__getitem__, reverse=True)[:budget]
    return [ranked[i] for i in sorted(top)]


def _budget(budget: Any) -> int:
    if isinstance(budget, bool) or not isinstance(budget, int) or budget < 1:
        raise ConfigError(f"the probe budget must be an integer >= 1, got {shown(budget)}")
    return budget


def _timeout(timeout: Any) -> float:
    """``timeout`` as seconds a check may wait: a number above 0, at most ``MAX_TIMEOUT``."""
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not 0 < timeout <= MAX_TIMEOUT:
        raise ConfigError(
            f"the probe timeout must be > 0 and <= {MAX_TIMEOUT:g} seconds, got {shown(timeout)}"
        )
    return float(timeout)


def _interval(every: Any) -> float:
    """``every`` as seconds between rounds: ``MIN_EVERY`` to ``MAX_EVERY``."""
    if isinstance(every, bool) or not isinstance(every, (int, float)) or not MIN_EVERY <= every <= MAX_EVERY:
        raise ConfigError(
            f"the probe interval must be {MIN_EVERY:g} to {MAX_EVERY:g} seconds, got {shown(every)}: each "
            "round re-reads the store under the retriever's lock, so a shorter one polls it in a loop"
        )
    return float(every)


def _outcome(value: Any) -> Outcome | None:
    if value is None:
        return None
    try:
        return Outcome.of(value)
    except (ConfigError, ValueError, TypeError):
        raise ConfigError(
            f"a probe check returns True/False, an outcome name, an Outcome or None, got {shown(value)}"
        ) from None


def _record(retriever: Retriever, tool_id: str, outcome: Outcome | None) -> ProbeResult:
    if outcome is None or outcome.kind is OutcomeKind.CALLER_ERROR:  # nothing learned about the tool
        return ProbeResult(tool_id, None)
    try:
        retriever.feedback(tool_id, outcome, probe=True)
    except RatedError as exc:
        log.warning("probe of %s: %s not recorded: %s", shown(tool_id), outcome.kind.value, exc)
        return ProbeResult(tool_id, None, str(exc))
    log.info("probe of %s: %s", shown(tool_id), outcome.kind.value)
    return ProbeResult(tool_id, outcome)


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
        raise ConfigError("http_check needs httpx: pip install 'rated[client]'") from None
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
    included, its connections shut down at the deadline): ``probe`` calls it as it is when that fits in the
    round's timeout, rather than in a thread of ``_CHECKS`` with a deadline of the round's."""

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
        stream = info.get("return_value")  # a connection's stream once connected (TCP, then TLS)
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
    if not _resolved(url, deadline):
        _unchecked(url, f"name resolution did not answer within {timeout:g} s on this host")
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
    in all. The host of ``url`` (None: nothing to resolve) is resolved first (``_aresolve``): a resolver
    that has not answered by the deadline is this host's failure (``None``, a warning once per host, the
    check dropped unawaited); a check that has not raises ``TimeoutError`` (classified ``timeout``). A
    lookup that does not start (``NoThread``) or is cancelled drops the check too, and raises."""
    deadline = asyncio.get_running_loop().time() + timeout
    if url is not None:
        try:
            async with asyncio.timeout_at(deadline):
                await _aresolve(url)
        except TimeoutError:
            _drop(pending)
            _unchecked(url, f"name resolution did not answer within {timeout:g} s on this host")
            return None
        except BaseException:
            _drop(pending)
            raise
    async with asyncio.timeout_at(deadline):
        return await pending


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
    todo, seen = [exc], set()
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


def _warn_once(key: str, message: str) -> None:
    """Log ``message`` once in this process (for a condition of no host in particular)."""
    if ("", key) not in _warned:
        _warned.add(("", key))
        log.warning("%s", message)


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
        return "mcp_check needs the mcp SDK: pip install 'rated[service]'"
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


class Prober:
    """Runs ``probe`` every ``every`` seconds in a daemon thread until ``stop`` (or the ``with`` block
    ends). A failing round is logged and the next one runs on time: probing never takes a service down.
    A rated error (the store closed or busy) is logged as one line, once until a round succeeds; anything
    else (a bug) with its traceback.

    >>> # with Prober(retriever, default_check(), every=30): serve agents ...
    """

    def __init__(
        self,
        retriever: Retriever | Callable[[], Retriever],
        check: Check,
        *,
        every: float = 30.0,
        budget: int = 3,
        on_round: Callable[[list[ProbeResult]], None] | None = None,
        jitter: float = 0.2,
        seed: int | None = None,
        timeout: float = 5.0,
    ):
        """``retriever``: the one to probe, or a function giving it at each round (a service's current
        retriever, reopened after a rebuild); ``every``: ``MIN_EVERY`` to ``MAX_EVERY`` seconds, each
        wait drawn uniformly within ``jitter`` of it (0 to ``MAX_JITTER``: 0.2 is 80% to 120%);
        ``on_round`` sees each round's results (metrics). ``seed`` fixes the waits and the choice of
        targets (``probe`` with ``rng``); None draws fresh entropy at each ``start``, so that replicas,
        even processes forked from one parent, differ. ``timeout``: each check's, as ``probe`` keeps to it
        (a check that hangs is a ``timeout``, and the next round runs on time)."""
        self.every, self.budget, self.timeout = _interval(every), _budget(budget), _timeout(timeout)
        if isinstance(jitter, bool) or not isinstance(jitter, (int, float)) or not 0 <= jitter <= MAX_JITTER:
            raise ConfigError(f"the probe jitter must be 0 to {MAX_JITTER:g}, got {shown(jitter)}")
        self.retriever, self.check, self.jitter, self.seed = retriever, check, float(jitter), seed
        self.on_round = on_round
        self.rounds = 0
        self.last: list[ProbeResult] = []
        self._rng = random.Random(seed)
        self._stop = threading.Event()
        self._gate = _Gate(self._stop)
        self._thread: threading.Thread | None = None
        self._failing: str | None = None  # the last round's error, logged once

    def start(self) -> Self:
        """Start probing (again, after ``stop``); ``ConfigError`` while the thread still runs."""
        if self._thread is not None and self._thread.is_alive():
            raise ConfigError("this prober is running already (or still finishing a check after stop)")
        if self.seed is None:  # a generator copied into a forked worker would repeat its parent's draws
            self._rng = random.Random()
        self._stop.clear()
        self._gate = _Gate(self._stop)
        self._thread = threading.Thread(target=self._run, name="rated-prober", daemon=True)
        self._thread.start()
        return self

    def stop(self, timeout: float | None = None, *, wait_check: bool = True) -> bool:
        """Stop after the check in flight (the round's other targets are not checked), waiting up to
        ``timeout`` seconds (None: until it ends; a check is waited for up to the prober's ``timeout``).
        True when the thread has ended, False if a check still runs (the daemon thread then ends once it
        returns or its timeout is up, recording nothing more: not even that check's answer).

        ``wait_check=False`` waits for no check in flight, only while the thread reads or writes the store
        (its round's targets, an answer being recorded): True once it has ended or is inside a check, whose
        answer it then drops before ending on its own; the caller may close the store (a service shutting
        down, which would otherwise wait up to a check's timeout)."""
        self._stop.set()
        if self._thread is None:
            return True
        if wait_check:
            self._thread.join(timeout)
            return not self._thread.is_alive()
        gate = self._gate
        with gate.changed:
            done = gate.changed.wait_for(lambda: gate.checking or gate.ended, timeout)
        if gate.ended:
            self._thread.join()  # it has left its loop: a moment
        return done

    def _wait(self) -> float:
        """Seconds to the next round: ``every`` within ``jitter``, never under ``MIN_EVERY`` (a 50%
        jitter of a 1 s interval would otherwise wait half a second)."""
        return max(MIN_EVERY, self.every * (1.0 + self.jitter * self._rng.uniform(-1.0, 1.0)))

    def _run(self) -> None:
        try:
            while not self._stop.wait(self._wait()):
                self._one_round()
        finally:
            self._gate.end()

    def _one_round(self) -> None:
        try:
            # a function giving the retriever (a service's current one) is asked each round
            target = self.retriever() if callable(self.retriever) else self.retriever
            self.last = _round(target, self.check, self.budget, self._rng, self._gate, self.timeout)
            if self.on_round is not None:
                self.on_round(self.last)
        except RatedError as exc:
            if str(exc) != self._failing:
                log.warning("probe round failed: %s", exc)
            self._failing = str(exc)
        except BaseException:  # a bug, or a check raising CancelledError: the thread must outlive it
            log.exception("probe round failed")  # (no KeyboardInterrupt reaches a thread but the main)
            self._failing = None
        else:
            self._failing = None
        self.rounds += 1

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        if not self.stop(_EXIT_WAIT):
            log.warning("the prober's check was still running %.0f s after the prober stopped", _EXIT_WAIT)
