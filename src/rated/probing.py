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

The checks rated ships live in ``rated.probe_checks`` (with the name resolution and deadline they keep to,
which ``probe`` and ``aprobe`` apply to other checks too) and are re-exported here: ``http_check`` for
tools with an HTTP ``endpoint``, ``mcp_check`` for tools collected from an MCP server reachable over HTTP
(``rated catalog mcp``), ``default_check`` the two together.

Replicas (``rated serve`` workers, hosts) sharing one store each run a prober. Each ``Prober`` draws its
waits within ``jitter`` (20%) of ``every`` and picks its round's targets at random among the policy's top
``SPREAD x budget``, weighted to the top, from its own random generator (fresh entropy at each start):
replicas drift apart in time and mostly check different tools. A probe's answer goes to the store, so a
tool one replica found up is no target for the others from their next round on (each round re-reads the
store).
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import random
import threading
import time
from collections.abc import Awaitable, Callable, Hashable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Self

from rated.catalog.schema import Tool
from rated.classify import outcome_from_exception
from rated.errors import ConfigError, RatedError, UnknownToolError
from rated.outcome import Outcome, OutcomeKind
from rated.probe_checks import (
    MAX_TIMEOUT,
    Check,
    _abounded,
    _bare_url,
    _OwnDeadline,
    _resolved_in_time,
    _timeout,
    default_check,
    http_check,
    mcp_check,
)
from rated.probe_threads import NoThread, Pool
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

log = logging.getLogger(__name__)
AsyncCheck = Callable[[Tool], Awaitable[Any]]
_warned: set[str] = set()  # the conditions of no host in particular logged once (_warn_once)
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
MAX_JITTER = 0.5  #: the widest jitter: each wait stays within half and one and a half intervals
#: a prober picks its ``budget`` targets among the policy's top ``SPREAD x budget``
SPREAD = 3
#: threads (process-wide, reused) that run ``probe``'s checks: a check that hangs holds one until it
#: returns, and nothing can stop it; a Prober runs one check at a time, so the rest is for checks that hang
#: and for probes from several threads at once
_CHECK_THREADS = 8
_CHECKS = Pool("rated-probe-worker", _CHECK_THREADS)


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
    resolution included: the host of the tool's http(s) endpoint is looked up first
    (``_resolved_in_time``), and a resolver that has not answered by the deadline is this host's failure
    (None, a warning once per host); a check that has not returned is ``timeout``.

    The check runs in one of ``_CHECK_THREADS`` reused daemon threads (``_CHECKS``), so that a check that
    hangs holds one of them until it returns rather than the round (and a prober's thread: no round would
    run again), or one more thread at each round. A check of the same tool by the same check still running
    from an earlier round is waited for rather than started again: a tool whose check hangs holds one
    thread, and is a ``timeout`` at each round until its check returns (an answer within the round's
    deadline is recorded). A check that finds no thread free by its deadline (each holding a check that
    hangs, or probes from many threads at once) records nothing, with a warning once. A thread of rated's
    that does not start (here, or in a check of ``rated.probe_checks``) raises ``NoThread``, which the round
    records as nothing (``_no_thread``). A check of ``rated.probe_checks`` keeping to a timeout no longer
    than ``timeout`` by itself (``_OwnDeadline``) is called as it is."""
    if isinstance(check, _OwnDeadline) and check.timeout <= timeout:
        return check(tool)
    deadline = time.monotonic() + timeout
    if not _resolved_in_time(_bare_url(tool.endpoint), deadline, timeout):
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


def _warn_once(key: str, message: str) -> None:
    """Log ``message`` once in this process (for a condition of no host in particular)."""
    if key not in _warned:
        _warned.add(key)
        log.warning("%s", message)


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
