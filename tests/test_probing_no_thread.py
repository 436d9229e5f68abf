"""A probe that rated cannot run because this process may start no more threads (``Thread.start`` raising
``RuntimeError``: a check's, a lookup's or ``_bounded``'s thread) is the probing host's failure, not the
tool's: it records nothing, with a warning once, as a probe that finds all check threads busy does. It was
classified ``tool_error`` and demoted a healthy tool. A ``RuntimeError`` a user's check raises itself is
still that check's answer, classified as before."""

from __future__ import annotations

import asyncio
import inspect
import logging
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from rated import Tool, probe_checks, probing
from rated.encode.testing import HashEncoder
from rated.outcome import OutcomeKind
from rated.probe_threads import Pool
from rated.probing import aprobe, http_check, mcp_check, probe
from rated.retriever import Retriever

HOST = "http://no-thread.test/health"  # a name: looked up first (in _RESOLVERS)
ADDRESS = "http://127.0.0.1:9/health"  # an address: nothing to look up


@pytest.fixture(autouse=True)
def _fresh_state(monkeypatch) -> None:
    """Pools of this test's own (no idle thread to hand work to: each job starts one), no warning given."""
    monkeypatch.setattr(probing, "_CHECKS", Pool("rated-probe-worker", 2))
    monkeypatch.setattr(probe_checks, "_RESOLVERS", Pool("rated-probe-resolve", 2))
    monkeypatch.setattr(probing, "_warned", set())
    monkeypatch.setattr(probe_checks, "_warned", set())
    for name in ("http_proxy", "https_proxy", "all_proxy", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def no_threads(monkeypatch) -> Iterator[list[str]]:
    """rated's probe threads do not start (the process's thread limit); others do. Lists those refused."""
    real, refused = threading.Thread.start, []

    def start(self: threading.Thread) -> None:
        if self.name.startswith("rated-probe"):
            refused.append(self.name)
            raise RuntimeError("can't start new thread")
        real(self)

    monkeypatch.setattr(threading.Thread, "start", start)
    yield refused


def suspected(tool_id: str, endpoint: str | None) -> Retriever:
    tool = Tool(id=tool_id, name=f"tool_{tool_id}", description=f"tool {tool_id}", endpoint=endpoint)
    r = Retriever.from_catalog([tool], encoder=HashEncoder(32), clock=lambda: 1000.0)
    r.feedback(tool_id, "tool_error")
    return r


def up(tool: Tool) -> str:
    return "success"


def warnings_of(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [
        r.getMessage()
        for r in caplog.records
        if r.name in ("rated.probing", "rated.probe_checks") and r.levelno >= logging.WARNING
    ]


@pytest.mark.parametrize(
    ("check", "endpoint", "thread"),
    [
        (up, None, "rated-probe-worker"),  # a user's check: _CHECKS.run
        (up, HOST, "rated-probe-resolve"),  # its host's lookup first: _RESOLVERS.run
        (http_check(1.0), ADDRESS, "rated-probe-check"),  # _bounded's own thread
        (http_check(1.0), HOST, "rated-probe-resolve"),  # _bounded's lookup
    ],
    ids=["check", "check-lookup", "http_check", "http_check-lookup"],
)
def test_no_thread_records_nothing_and_warns_once(no_threads, caplog, check, endpoint, thread) -> None:
    r = suspected("a", endpoint)
    caplog.set_level(logging.WARNING, logger="rated.probing")
    for _ in range(2):
        [result] = probe(r, check, budget=1, timeout=1.0)
        assert result.tool_id == "a" and result.outcome is None and result.error is None
    assert thread in no_threads
    assert r.probe_targets(1) == ["a"]  # still suspected, nothing learned
    said = warnings_of(caplog)
    assert len(said) == 1 and "start no more threads" in said[0], said


@pytest.mark.skipif(probe_checks._mcp_sdk_problem() is not None, reason="needs the mcp SDK 2.x")
@pytest.mark.parametrize("endpoint", [HOST, "http://127.0.0.1:9/mcp"])
def test_mcp_check_without_threads_records_nothing(no_threads, caplog, endpoint) -> None:
    tool = Tool(id="m", name="m", description="an MCP tool", endpoint=endpoint, source="mcp")
    r = Retriever.from_catalog([tool], encoder=HashEncoder(32), clock=lambda: 1000.0)
    r.feedback("m", "tool_error")
    caplog.set_level(logging.WARNING, logger="rated.probing")
    [result] = probe(r, mcp_check(1.0), budget=1, timeout=1.0)
    assert result.outcome is None and no_threads
    assert len(warnings_of(caplog)) == 1


def test_aprobe_without_a_lookup_thread_records_nothing_and_drops_the_check(no_threads, caplog) -> None:
    r = suspected("a", HOST)
    made: list[Any] = []

    async def answer() -> str:
        return "success"

    def check(tool: Tool) -> Any:
        made.append(answer())
        return made[-1]

    caplog.set_level(logging.WARNING, logger="rated.probing")
    [result] = asyncio.run(aprobe(r, check, budget=1, timeout=1.0))
    assert result.outcome is None and no_threads == ["rated-probe-resolve"]
    assert [inspect.getcoroutinestate(c) for c in made] == [inspect.CORO_CLOSED]  # not left unawaited
    assert len(warnings_of(caplog)) == 1


def test_a_users_check_raising_runtime_error_is_classified_as_before(caplog) -> None:
    """No thread of rated's failed: the check's own ``RuntimeError`` (its own thread, say) is its answer."""
    r = suspected("a", None)

    def check(tool: Tool) -> str:
        raise RuntimeError("can't start new thread")

    [result] = probe(r, check, budget=1, timeout=1.0)
    assert result.outcome is not None and result.outcome.kind is OutcomeKind.TOOL_ERROR


def test_an_async_users_check_raising_runtime_error_is_classified_as_before() -> None:
    r = suspected("a", None)

    async def check(tool: Tool) -> str:
        raise RuntimeError("can't start new thread")

    [result] = asyncio.run(aprobe(r, check, budget=1, timeout=1.0))
    assert result.outcome is not None and result.outcome.kind is OutcomeKind.TOOL_ERROR


@pytest.mark.skipif(probe_checks._mcp_sdk_problem() is not None, reason="needs the mcp SDK 2.x")
@pytest.mark.parametrize("loaded", [False, True], ids=["importing", "imported"])
def test_aping_without_a_worker_thread_records_nothing(monkeypatch, caplog, loaded) -> None:
    """``aping`` runs the SDK's import and the host's lookup in anyio's worker threads: one that does not
    start is this host's failure too."""
    from rated import mcp_ping

    if loaded:
        mcp_ping.load_sdk()  # before threads are refused, and outside the probe's deadline
    monkeypatch.setattr(mcp_ping, "_loaded", loaded)
    real = threading.Thread.start

    def start(self: threading.Thread) -> None:
        if self.name == "AnyIO worker thread":
            raise RuntimeError("can't start new thread")
        real(self)

    monkeypatch.setattr(threading.Thread, "start", start)
    r = suspected("a", HOST)
    caplog.set_level(logging.WARNING, logger="rated.probing")
    [result] = asyncio.run(aprobe(r, lambda tool: mcp_ping.aping(HOST, 1.0), budget=1, timeout=1.0))
    assert result.outcome is None
    assert len(warnings_of(caplog)) == 1
