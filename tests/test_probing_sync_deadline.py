"""``probe`` keeps each check to an overall ``timeout``, as ``aprobe`` does: a user's check that hangs held
the round (and a ``Prober``'s thread: probing stopped for good) for as long as it hung. A check past its
deadline is a ``timeout``; its thread, which nothing can stop, is one of a few reused ones, and a tool
whose check still hangs is not checked again in another thread.

The checks here block on an event the test sets at its end: no sleeps. Waits carry generous bounds that
only keep a broken test from hanging."""

from __future__ import annotations

import inspect
import logging
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from rated import Tool, probe_checks, probing
from rated.encode.testing import HashEncoder
from rated.errors import ConfigError
from rated.outcome import OutcomeKind
from rated.probe_threads import Pool
from rated.probing import Prober, aprobe, http_check, probe
from rated.retriever import Retriever

pytestmark = pytest.mark.usefixtures("fast_probes")  # rounds every few ms

BOUND = 20.0  # seconds a round gets to come back on a busy machine: a safety net, not a speed assertion
SHORT = 0.2  # the probes' timeout here: what a hanging check is cut at


@pytest.fixture(autouse=True)
def _fresh_state(monkeypatch) -> Iterator[Pool]:
    """A pool of two check threads of this test's own (and lookups of its own), no warning given yet."""
    pool = Pool("rated-probe-worker", 2)
    monkeypatch.setattr(probing, "_CHECKS", pool)
    monkeypatch.setattr(probe_checks, "_RESOLVERS", Pool("rated-probe-resolve", 4))
    monkeypatch.setattr(probing, "_warned", set())
    monkeypatch.setattr(probe_checks, "_warned", set())
    return pool


@pytest.fixture
def hang() -> Iterator[Callable[[Tool], Any]]:
    """A check that blocks until the test is over, then answers ``success``; ``.calls`` lists the tools it
    was called with and ``.threads`` the threads it ran in."""
    release = threading.Event()
    calls: list[str] = []
    threads: list[threading.Thread] = []

    def check(tool: Tool) -> str:
        calls.append(tool.id)
        threads.append(threading.current_thread())
        release.wait(60)
        return "success"

    check.calls, check.threads, check.release = calls, threads, release  # type: ignore[attr-defined]
    yield check
    release.set()


def suspected(*ids: str, endpoint: str | None = None) -> Retriever:
    tools = [Tool(id=i, name=f"tool_{i}", description=f"tool {i}", endpoint=endpoint) for i in ids]
    r = Retriever.from_catalog(tools, encoder=HashEncoder(32), clock=lambda: 1000.0)
    for tool_id in ids:
        r.feedback(tool_id, "tool_error")
    assert sorted(r.probe_targets(len(ids))) == sorted(ids)
    return r


def in_time(call: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """``call(...)``'s answer, asserting it came back (within ``BOUND`` seconds: a safety net)."""
    out: list[Any] = []
    thread = threading.Thread(target=lambda: out.append(call(*args, **kwargs)), daemon=True)
    thread.start()
    thread.join(BOUND)
    assert out, f"{getattr(call, '__name__', call)} did not come back"
    return out[0]


def kinds(results: list[probing.ProbeResult]) -> list[tuple[str, OutcomeKind | None]]:
    return [(r.tool_id, r.outcome.kind if r.outcome else None) for r in results]


def test_probe_takes_the_same_timeout_as_aprobe():
    for fn in (probe, aprobe):
        assert inspect.signature(fn).parameters["timeout"].default == 5.0
        assert inspect.signature(fn).parameters["timeout"].kind is inspect.Parameter.KEYWORD_ONLY
    assert inspect.signature(Prober).parameters["timeout"].default == 5.0


def test_a_check_that_hangs_is_a_timeout_and_the_round_comes_back(hang):
    """Before: the round waited for the check for as long as it hung (here, until the test's end)."""
    with suspected("a") as r:
        assert kinds(in_time(probe, r, hang, 1, timeout=SHORT)) == [("a", OutcomeKind.TIMEOUT)]
        assert not r.health("a").healthy  # recorded: still suspected
        assert hang.calls == ["a"]


def test_a_tool_whose_check_still_hangs_is_a_timeout_again_without_another_thread(hang, _fresh_state):
    with suspected("a") as r:
        for _ in range(3):
            assert kinds(in_time(probe, r, hang, 1, timeout=SHORT)) == [("a", OutcomeKind.TIMEOUT)]
        assert hang.calls == ["a"] and _fresh_state.threads() == 1


def test_checks_that_hang_hold_no_more_than_the_pools_threads(hang, _fresh_state, caplog):
    """Two threads here: the third and fourth tools' checks find none free, record nothing and say so;
    once the checks return, their threads check the next round's tools."""
    with suspected("a", "b", "c", "d") as r:
        with caplog.at_level(logging.WARNING, logger="rated.probing"):
            results = in_time(probe, r, hang, 4, timeout=SHORT)
        timed_out = [i for i, kind in kinds(results) if kind is OutcomeKind.TIMEOUT]
        assert len(timed_out) == 2 and sorted(i for i, kind in kinds(results) if kind is None) == sorted(
            set("abcd") - set(timed_out)
        )
        assert sorted(hang.calls) == sorted(timed_out) and _fresh_state.threads() == 2
        assert any("no thread free" in rec.getMessage() for rec in caplog.records)
        hang.release.set()
        results = in_time(probe, r, hang, 4, timeout=BOUND)  # all answer now
        assert sorted(kinds(results)) == [(i, OutcomeKind.SUCCESS) for i in "abcd"]
        assert _fresh_state.threads() == 2 and len(set(hang.threads)) == 2  # the same two threads


def test_a_prober_goes_on_with_its_rounds_while_a_check_hangs(hang):
    """Before: its thread stayed in the check, and no round ran again until it returned."""
    with suspected("a") as r, Prober(r, hang, every=0.01, budget=1, timeout=SHORT) as prober:
        deadline = time.monotonic() + BOUND
        while prober.rounds < 3 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert prober.rounds >= 3 and kinds(prober.last) == [("a", OutcomeKind.TIMEOUT)]
        assert hang.calls == ["a"]  # checked once: the later rounds found its check still running


def test_a_check_is_not_started_while_the_resolver_has_not_answered(hang, monkeypatch, caplog):
    """As with ``aprobe``: the endpoint's host is looked up first, and a resolver that has not answered by
    the deadline is this host's failure (nothing recorded, a warning), not the tool's timeout."""
    release = threading.Event()
    monkeypatch.setattr(probe_checks, "_lookup", lambda host, port: release.wait(60))
    try:
        with suspected("a", endpoint="http://tools.test/x") as r:
            with caplog.at_level(logging.WARNING, logger="rated.probe_checks"):
                assert kinds(in_time(probe, r, hang, 1, timeout=SHORT)) == [("a", None)]
            assert hang.calls == []
        assert any(
            "name resolution did not answer within 0.2 s" in rec.getMessage() for rec in caplog.records
        )
    finally:
        release.set()


def test_what_a_check_raises_is_still_classified(_fresh_state):
    def refused(tool: Tool) -> None:
        raise ConnectionRefusedError("refused")

    with suspected("a") as r:
        assert kinds(in_time(probe, r, refused, 1, timeout=BOUND)) == [("a", OutcomeKind.TOOL_ERROR)]


def test_rateds_own_checks_within_the_timeout_run_as_they_are(_fresh_state):
    """``http_check`` keeps to its own timeout, name resolution included: no worker thread of the round
    wraps it when its timeout fits, while one longer than the round's is cut at the round's."""
    with suspected("a", endpoint="http://127.0.0.1:9/x") as r:  # nothing listens on port 9: refused
        assert kinds(in_time(probe, r, http_check(timeout=1.0), 1, timeout=2.0)) == [
            ("a", OutcomeKind.TOOL_ERROR)
        ]
        assert _fresh_state.threads() == 0
        assert kinds(in_time(probe, r, http_check(timeout=3.0), 1, timeout=2.0)) == [
            ("a", OutcomeKind.TOOL_ERROR)
        ]
        assert _fresh_state.threads() == 1


@pytest.mark.parametrize("timeout", [0, -1, float("inf"), 61, True, "5"])
def test_the_timeout_is_checked(timeout):
    with suspected("a") as r:
        with pytest.raises(ConfigError, match="probe timeout"):
            probe(r, lambda tool: True, timeout=timeout)
        with pytest.raises(ConfigError, match="probe timeout"):
            Prober(r, lambda tool: True, timeout=timeout)
