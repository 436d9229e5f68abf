"""Health probes: the policy names the tools worth a check, a check's answer moves its belief (a recovered
tool is back without an agent paying a failed call), and nothing about a probe reaches the outcome log."""

import asyncio
import http.server
import threading
import time

import pytest

from rated import Tool
from rated.encode.testing import HashEncoder
from rated.errors import ConfigError
from rated.outcome import Outcome, OutcomeKind
from rated.probing import Prober, aprobe, http_check, probe
from rated.retriever import Retriever

pytestmark = pytest.mark.usefixtures("fast_probes")  # rounds every few ms

QUERY = "send an email message"


def catalog(endpoint: str | None = None) -> list[Tool]:
    return [
        Tool(id="mail.a", name="send_email", description="Send an email message", endpoint=endpoint),
        Tool(id="mail.b", name="post_letter", description="Post a letter or message by mail"),
        Tool(id="weather", name="weather_forecast", description="Weather forecast for a city"),
    ]


@pytest.fixture
def retriever(clock):
    with Retriever.from_catalog(catalog(), encoder=HashEncoder(64), clock=clock) as r:
        yield r


def demote(r: Retriever, tool_id: str = "mail.a") -> None:
    r.feedback(tool_id, "tool_error", query=QUERY)
    assert r.retrieve(QUERY, k=2)[0].id != tool_id


def test_only_tools_seen_failing_are_probed_and_a_passing_probe_restores_one(retriever, clock):
    assert retriever.probe_targets(3) == []  # nothing failed: nothing to check
    demote(retriever)
    clock.t += 5
    assert retriever.probe_targets(3) == ["mail.a"]
    seen = []
    results = probe(retriever, lambda tool: seen.append(tool.id) or True)
    assert seen == ["mail.a"] and [(r.tool_id, r.outcome) for r in results] == [("mail.a", Outcome.of(True))]
    assert retriever.retrieve(QUERY, k=2)[0].id == "mail.a"  # back, with no agent call
    assert retriever.probe_targets(3) == []  # a success clears the suspicion


def test_a_failing_probe_keeps_the_tool_down_and_is_not_an_agent_call(retriever, clock):
    demote(retriever)
    clock.t += 5
    results = probe(retriever, lambda tool: "timeout")
    assert results[0].outcome.kind is OutcomeKind.TIMEOUT
    assert retriever.retrieve(QUERY, k=2)[0].id != "mail.a"
    assert [o.outcome for o in retriever.outcomes("mail.a")] == ["tool_error"]  # the agent's call only
    assert retriever.health("mail.a").stats.failures == 1


def test_a_check_that_raises_is_classified_and_one_that_cannot_check_records_nothing(retriever, clock):
    demote(retriever)
    clock.t += 5
    assert probe(retriever, lambda tool: None)[0].outcome is None
    assert retriever.retrieve(QUERY, k=2)[0].id != "mail.a"

    def refused(tool):
        raise ConnectionRefusedError("no")

    assert probe(retriever, refused)[0].outcome.kind is OutcomeKind.TOOL_ERROR
    with pytest.raises(ConfigError, match="a probe check returns"):
        probe(retriever, lambda tool: 42)  # a bug in the check, not a tool failure


def test_probes_persist_for_other_processes(tmp_path, clock):
    db = tmp_path / "p.db"
    with Retriever.from_catalog(catalog(), db=db, encoder=HashEncoder(64), clock=clock) as r:
        demote(r)
        with Retriever.open(db, clock=clock) as other:
            clock.t += 5
            assert other.probe_targets(2) == ["mail.a"]  # it learned of the failure from the store
            probe(other, lambda tool: True)
        assert r.retrieve(QUERY, k=2)[0].id == "mail.a"


def test_aprobe_runs_async_checks(retriever, clock):
    demote(retriever)
    clock.t += 5

    async def check(tool):
        await asyncio.sleep(0)
        return "success"

    results = asyncio.run(aprobe(retriever, check))
    assert [(r.tool_id, r.outcome.kind) for r in results] == [("mail.a", OutcomeKind.SUCCESS)]
    assert retriever.retrieve(QUERY, k=2)[0].id == "mail.a"


class _Health(http.server.BaseHTTPRequestHandler):
    status = 503

    def do_HEAD(self):  # noqa: N802 - http.server's naming
        self.send_response(type(self).status)
        if type(self).status == 429:
            self.send_header("Retry-After", "120")
        self.end_headers()

    def log_message(self, *args):
        pass


@pytest.fixture
def server():
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Health)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield httpd
    httpd.shutdown()
    httpd.server_close()


@pytest.mark.parametrize(
    ("status", "kind", "retry_after"),
    [
        (200, "success", None),
        (404, "success", None),
        (401, "success", None),
        (503, "tool_error", None),
        (429, "rate_limited", 120.0),
    ],
)
def test_http_check_reads_the_endpoints_answer(server, status, kind, retry_after):
    _Health.status = status
    url = f"http://127.0.0.1:{server.server_address[1]}/api"
    got = http_check(timeout=2)(Tool(id="x", name="x", endpoint=url))
    assert (got.kind.value, got.retry_after) == (kind, retry_after)
    assert http_check()(Tool(id="y", name="y")) is None  # no endpoint: not checked


def test_http_check_of_a_closed_port_is_a_tool_error(clock):
    import socket

    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    tools = catalog(endpoint=f"http://127.0.0.1:{port}/")
    with Retriever.from_catalog(tools, encoder=HashEncoder(64), clock=clock) as r:
        demote(r)
        clock.t += 5
        assert probe(r, http_check(timeout=2))[0].outcome.kind is OutcomeKind.TOOL_ERROR


def test_prober_runs_rounds_until_stopped_and_survives_a_failing_round(retriever, clock):
    demote(retriever)
    clock.t += 5
    calls = []

    def flaky(tool):
        calls.append(tool.id)
        return 42 if len(calls) == 1 else True  # a bug in the check: that round fails, the next runs

    with pytest.raises(ConfigError, match="interval"):
        Prober(retriever, flaky, every=0)
    with Prober(retriever, flaky, every=0.01) as prober:
        deadline = time.monotonic() + 5
        while retriever.retrieve(QUERY, k=2)[0].id != "mail.a" and time.monotonic() < deadline:
            time.sleep(0.01)
    assert (
        retriever.retrieve(QUERY, k=2)[0].id == "mail.a"
        and prober.rounds >= 2
        and calls[:2] == ["mail.a"] * 2
    )


def test_the_checks_are_re_exported_from_their_module():
    """``http_check``, ``mcp_check`` and ``default_check`` live in ``rated.probe_checks``; importing them from
    ``rated.probing`` (the documented way) gives the same functions."""
    from rated import probe_checks, probing

    for name in ("Check", "MAX_TIMEOUT", "default_check", "http_check", "mcp_check"):
        assert name in probing.__all__ and getattr(probing, name) is getattr(probe_checks, name)
