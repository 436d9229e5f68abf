"""Name lookups before a probe run in a few shared threads: a lookup the system's resolver does not answer
holds its thread until the resolver gives up (seconds to minutes), and each check made one thread of its
own for it, so probe rounds of names it did not answer piled up one more thread per check. Now one lookup
per host runs at a time (a check of a host being looked up waits for that lookup) in at most
``_RESOLVE_THREADS`` threads, for ``http_check``, the MCP ping, ``probe`` and ``aprobe`` alike."""

from __future__ import annotations

import asyncio
import importlib.util
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from rated import Tool, probe_checks
from rated.classify import outcome_from_exception
from rated.encode.testing import HashEncoder
from rated.outcome import OutcomeKind
from rated.probe_threads import Pool
from rated.probing import aprobe, http_check, mcp_check
from rated.retriever import Retriever

BOUND = 20.0  # seconds a check gets to come back on a busy machine: a safety net, not a speed assertion
SIZE = 4
NAMES = ("rated-probe-resolve", "rated-probe-check")  # the lookups' threads, and the checks' before


@pytest.fixture(autouse=True)
def _fresh_state(monkeypatch) -> Pool:
    pool = Pool("rated-probe-resolve", SIZE)
    monkeypatch.setattr(probe_checks, "_RESOLVERS", pool)
    monkeypatch.setattr(probe_checks, "_warned", set())
    return pool


class Silent:
    """A resolver that answers no name under ``.test`` until ``release`` is set: ``asked`` counts the
    lookups of each."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.asked: dict[str, int] = {}


@pytest.fixture
def silent(monkeypatch) -> Iterator[Silent]:
    """Names under ``.test`` resolve only once the test is over (or ``release`` is set)."""
    real, resolver = probe_checks.socket.getaddrinfo, Silent()
    release, asked = resolver.release, resolver.asked

    def getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
        name = host.decode() if isinstance(host, bytes) else str(host)
        if name.endswith(".test"):
            asked[name] = asked.get(name, 0) + 1
            release.wait(60)
            raise probe_checks.socket.gaierror(probe_checks.socket.EAI_NONAME, "no such name")
        return real(host, *args, **kwargs)

    monkeypatch.setattr(probe_checks.socket, "getaddrinfo", getaddrinfo)
    yield resolver
    release.set()


def lookup_threads(before: set[threading.Thread]) -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name in NAMES and t not in before and t.is_alive()]


def checked(check: Any, tool: Tool) -> Any:
    """What ``check(tool)`` returned, or the exception it raised (a refused connection's)."""
    out: list[Any] = []

    def run() -> None:
        try:
            out.append(check(tool))
        except Exception as exc:
            out.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(BOUND)
    assert out, "the check did not come back"
    return out[0]


def refused(answer: Any) -> bool:
    """Whether a check's answer is a refused connection (which a probe round records as tool_error)."""
    return isinstance(answer, Exception) and outcome_from_exception(answer).kind is OutcomeKind.TOOL_ERROR


def test_silent_lookups_of_many_hosts_hold_a_few_threads(silent):
    """Before: twelve checks, twelve threads waiting on the resolver."""
    before = set(threading.enumerate())
    check = http_check(timeout=0.1)
    for i in range(12):
        assert checked(check, Tool(id=f"t{i}", name="t", endpoint=f"http://h{i}.tools.test/x")) is None
    assert len(lookup_threads(before)) <= SIZE
    assert 1 <= len(silent.asked) <= SIZE  # the others were never looked up: no thread was free for them


def test_checks_of_a_host_being_looked_up_wait_for_that_lookup(silent):
    before = set(threading.enumerate())
    check = http_check(timeout=0.1)
    for i in range(5):
        assert checked(check, Tool(id=f"t{i}", name="t", endpoint="http://one.tools.test/x")) is None
    assert silent.asked == {"one.tools.test": 1} and len(lookup_threads(before)) == 1


def test_the_lookup_threads_serve_again_once_the_resolver_answers(silent, _fresh_state):
    check = http_check(timeout=0.1)
    for i in range(SIZE):
        assert checked(check, Tool(id=f"t{i}", name="t", endpoint=f"http://h{i}.tools.test/x")) is None
    assert _fresh_state.threads() == SIZE
    # an address needs no lookup: checked (refused: nothing listens on port 9) while every thread waits
    assert refused(checked(check, Tool(id="ip", name="ip", endpoint="http://127.0.0.1:9/x")))
    tool = Tool(id="up", name="up", endpoint="http://localhost:9/x")
    assert checked(check, tool) is None  # no thread free to look localhost up: no answer in time
    silent.release.set()
    assert refused(checked(http_check(timeout=5.0), tool))
    assert _fresh_state.threads() == SIZE  # the same threads


def test_aprobe_looks_names_up_in_the_same_few_threads(silent):
    """Before: one daemon thread per check, waiting on the resolver."""
    ids = [f"t{i}" for i in range(8)]
    tools = [Tool(id=i, name=f"n{i}", endpoint=f"http://{i}.tools.test/x") for i in ids]
    before = set(threading.enumerate())

    async def check(tool: Tool) -> str:
        return "success"

    with Retriever.from_catalog(tools, encoder=HashEncoder(16), clock=lambda: 1000.0) as r:
        for i in ids:
            r.feedback(i, "tool_error")
        out: list[Any] = []
        thread = threading.Thread(
            target=lambda: out.append(asyncio.run(aprobe(r, check, len(ids), timeout=0.2))), daemon=True
        )
        thread.start()
        thread.join(BOUND)
        assert out, "the round did not come back"
        assert sorted((res.tool_id, res.outcome) for res in out[0]) == [(i, None) for i in ids]
    assert len(lookup_threads(before)) <= SIZE


def test_an_mcp_ping_looks_its_host_up_in_the_same_threads(silent):
    if importlib.util.find_spec("mcp") is None:
        pytest.skip("needs the mcp SDK")
    from rated.mcp_ping import load_sdk

    load_sdk()  # imported before the deadline in any case: not what this test waits on
    before = set(threading.enumerate())
    check = mcp_check(timeout=0.1)
    for i in range(8):
        assert (
            checked(check, Tool(id=f"t{i}", name="t", source="mcp", endpoint=f"http://h{i}.tools.test/mcp"))
            is None
        )
    assert len(lookup_threads(before)) <= SIZE
