"""Health probes under what a service meets: checks that hang, return nonsense, are not async where
``aprobe`` awaits them, endpoints that are not HTTP URLs, a retriever closed under the prober, and a
check's sockets, which must not outlive the check."""

import asyncio
import gc
import http.server
import logging
import threading
import time
import warnings

import pytest

from rated import Tool
from rated.encode.testing import HashEncoder
from rated.errors import ConfigError
from rated.outcome import OutcomeKind
from rated.probing import Prober, aprobe, http_check, probe
from rated.retriever import Retriever

pytestmark = pytest.mark.usefixtures("fast_probes")  # rounds every few ms

QUERY = "send an email message"
IDS = ("mail.a", "mail.b", "weather")


def catalog(endpoint: str | None = None) -> list[Tool]:
    return [
        Tool(id="mail.a", name="send_email", description="Send an email message", endpoint=endpoint),
        Tool(id="mail.b", name="post_letter", description="Post a letter or message by mail"),
        Tool(id="weather", name="weather_forecast", description="Weather forecast for a city"),
    ]


def suspects(r: Retriever, clock) -> None:
    """Every tool failed once, a while ago: all three are probe targets."""
    for tool_id in IDS:
        r.feedback(tool_id, "tool_error", query=QUERY)
    clock.t += 5
    assert sorted(r.probe_targets(3)) == sorted(IDS)


@pytest.fixture
def retriever(clock):
    with Retriever.from_catalog(catalog(), encoder=HashEncoder(64), clock=clock) as r:
        suspects(r, clock)
        yield r


def test_aprobe_refuses_a_check_that_is_not_async_instead_of_recording_nothing(retriever):
    with pytest.raises(ConfigError, match="aprobe awaits its check"):
        asyncio.run(aprobe(retriever, lambda tool: True))
    assert not retriever.health("mail.a").healthy  # nothing was recorded
    # None without awaiting anything: "cannot check this one", as from any check
    assert [r.outcome for r in asyncio.run(aprobe(retriever, lambda tool: None))] == [None] * 3


def test_aprobe_records_the_good_answers_before_raising_for_a_check_returning_nonsense(retriever):
    async def check(tool):
        await asyncio.sleep(0)
        return 42 if tool.id == "mail.b" else True

    with pytest.raises(ConfigError, match="a probe check returns"):
        asyncio.run(aprobe(retriever, check))
    assert retriever.health("mail.a").healthy and retriever.health("weather").healthy
    assert not retriever.health("mail.b").healthy


@pytest.mark.parametrize(
    "endpoint",
    ["ftp://example.invalid/x", "not a url", "http://", "stdio", "mcp://server/tool", "http://[::1"],
)
def test_http_check_does_not_check_an_endpoint_that_is_not_an_http_url(endpoint):
    """Not a failure of the tool: recorded as one, it would hold the tool down at every round."""
    assert http_check(timeout=1)(Tool(id="x", name="x", endpoint=endpoint)) is None


class _KeepAlive(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # the connection stays open after the answer

    def do_HEAD(self):  # noqa: N802 - http.server's naming
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


def test_http_check_keeps_no_connection_open_between_checks():
    """A check holding its pooled connection could not be closed: each http_check() kept sockets until
    garbage collection (ResourceWarning: unclosed socket), one more pool per ``probe(r, http_check())``."""
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _KeepAlive)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        tool = Tool(id="x", name="x", endpoint=f"http://127.0.0.1:{httpd.server_address[1]}/")
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            check = http_check(timeout=2)
            assert [check(tool).kind for _ in range(3)] == [OutcomeKind.SUCCESS] * 3
            del check
            gc.collect()
        assert [str(w.message) for w in caught if issubclass(w.category, ResourceWarning)] == []
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_leaving_a_prober_does_not_hang_on_a_check_that_hangs(retriever, monkeypatch):
    release = threading.Event()
    started = threading.Event()

    def hangs(tool):
        started.set()
        release.wait(10)
        return True

    monkeypatch.setattr("rated.probing._EXIT_WAIT", 0.2)
    prober = Prober(retriever, hangs, every=0.01)
    begin = time.monotonic()
    with prober:
        assert started.wait(5)
    assert time.monotonic() - begin < 3  # waited 0.2 s for the check, not for ever
    assert prober.stop(timeout=0.05) is False  # still in its check
    release.set()
    assert prober.stop(timeout=5) is True
    prober.start().stop(timeout=5)  # stopped: it can start again


def test_a_prober_whose_retriever_is_closed_logs_one_line_not_a_traceback_per_round(tmp_path, clock, caplog):
    r = Retriever.from_catalog(catalog(), db=tmp_path / "p.db", encoder=HashEncoder(64), clock=clock)
    suspects(r, clock)
    r.close()
    with caplog.at_level(logging.WARNING, logger="rated.probing"), Prober(r, lambda t: True, every=0.01) as p:
        deadline = time.monotonic() + 5
        while p.rounds < 4 and time.monotonic() < deadline:
            time.sleep(0.01)
    assert p.rounds >= 4
    failed = [rec for rec in caplog.records if "probe round failed" in rec.getMessage()]
    assert len(failed) == 1 and failed[0].exc_info is None and "closed" in failed[0].getMessage()


def test_a_probe_of_a_tool_removed_meanwhile_is_an_error_result_not_a_failed_round(retriever):
    def check(tool):
        if tool.id == "mail.a":
            retriever.remove_tools(["mail.b"])  # another agent's change while the round runs
        return True

    results = {r.tool_id: r for r in probe(retriever, check)}
    assert results["mail.a"].outcome.kind is OutcomeKind.SUCCESS
    assert "mail.b" not in results or results["mail.b"].error is not None


def test_a_check_raising_a_base_exception_fails_its_round_not_the_prober(retriever, caplog):
    """A check raising ``asyncio.CancelledError`` (a BaseException: an async client cancelled inside it)
    ended the prober's thread: probing stopped for the life of the process, silently but for a traceback
    on stderr."""
    calls = []

    def check(tool):
        calls.append(tool.id)
        if len(calls) == 1:
            raise asyncio.CancelledError
        return True

    with caplog.at_level(logging.ERROR, logger="rated.probing"), Prober(retriever, check, every=0.01) as p:
        deadline = time.monotonic() + 5
        while p.rounds < 3 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert p._thread.is_alive()
    assert p.rounds >= 3 and len(calls) > 1
    assert [r.exc_info[0] for r in caplog.records if "probe round failed" in r.getMessage()] == [
        asyncio.CancelledError
    ]
