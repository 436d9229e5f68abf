"""``aprobe`` looks the host of a tool's endpoint up before awaiting its check, within the probe's
deadline; a check pinging that host with ``rated.mcp_ping.aping`` looked it up again (another lookup in
the resolver threads, another worker thread of anyio's to wait on it). Now ``aping`` awaited in such a
check takes the host as looked up; a host the probe did not look up, or ``aping`` awaited on its own, is
looked up as before."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

pytest.importorskip("mcp")

from rated import Tool, mcp_ping, probe_checks  # noqa: E402
from rated.encode.testing import HashEncoder  # noqa: E402
from rated.outcome import Outcome, OutcomeKind  # noqa: E402
from rated.probe_threads import Pool  # noqa: E402
from rated.probing import aprobe  # noqa: E402
from rated.retriever import Retriever  # noqa: E402

pytestmark = pytest.mark.skipif(probe_checks._mcp_sdk_problem() is not None, reason="needs the mcp SDK 2.x")
SERVER = "http://tools.test/mcp"


@pytest.fixture(autouse=True)
def _fresh_state(monkeypatch) -> None:
    monkeypatch.setattr(probe_checks, "_RESOLVERS", Pool("rated-probe-resolve", 4))
    monkeypatch.setattr(probe_checks, "_warned", set())
    for name in ("http_proxy", "https_proxy", "all_proxy", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def lookups(monkeypatch) -> list[tuple[str, int]]:
    """The lookups made (each answered at once), and pings that answer without a server."""
    made: list[tuple[str, int]] = []
    monkeypatch.setattr(probe_checks, "_lookup", lambda host, port: made.append((host, port)))

    async def answered(url: str, timeout: float) -> Outcome:
        return Outcome(OutcomeKind.SUCCESS)

    mcp_ping.load_sdk()  # outside the probe's deadline in any case
    monkeypatch.setattr(mcp_ping, "_ping", answered)
    return made


def probed(check: Any) -> list[Any]:
    tool = Tool(id="a", name="tool_a", description="tool a", source="mcp", endpoint=SERVER)
    r = Retriever.from_catalog([tool], encoder=HashEncoder(32), clock=lambda: 1000.0)
    r.feedback("a", "tool_error")
    return [(p.tool_id, p.outcome and p.outcome.kind) for p in asyncio.run(aprobe(r, check, budget=1))]


def test_aprobe_of_an_mcp_ping_looks_the_host_up_once(lookups) -> None:
    """Before: ``[("tools.test", 80), ("tools.test", 80)]``."""
    assert probed(lambda tool: mcp_ping.aping(tool.endpoint, 1.0)) == [("a", OutcomeKind.SUCCESS)]
    assert lookups == [("tools.test", 80)]


def test_a_ping_of_another_host_than_the_probes_is_looked_up(lookups) -> None:
    assert probed(lambda tool: mcp_ping.aping("http://other.test:8000/mcp", 1.0)) == [
        ("a", OutcomeKind.SUCCESS)
    ]
    assert lookups == [("tools.test", 80), ("other.test", 8000)]


def test_aping_on_its_own_still_looks_the_host_up(lookups) -> None:
    assert asyncio.run(mcp_ping.aping(SERVER, 1.0)) == Outcome(OutcomeKind.SUCCESS)
    assert lookups == [("tools.test", 80)]
