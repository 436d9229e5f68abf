"""A check keeps to its timeout in all: httpx's timeouts leave out name resolution and bound each read, not
the answer, so a resolver that did not answer held ``http_check`` (and the MCP ping) for as long as it
took, and a server dripping its answer a byte at a time held it for ever. ``aprobe`` keeps each async
check to its ``timeout`` the same way. And the prober's jittered waits keep to the 1 s floor
(``MIN_EVERY``)."""

from __future__ import annotations

import asyncio
import importlib.util
import logging
import socket
import ssl
import threading
from collections.abc import Callable, Iterator
from typing import Any
from urllib.parse import urlsplit

import pytest

from rated import Tool, probe_checks
from rated.encode.testing import HashEncoder
from rated.outcome import OutcomeKind
from rated.probing import MIN_EVERY, Prober, aprobe, http_check, mcp_check
from rated.retriever import Retriever
from self_signed import self_signed

GENEROUS = 20.0  # seconds a bounded check gets to come back on a busy machine (it takes its timeout)


@pytest.fixture(autouse=True)
def _fresh_warnings(monkeypatch):
    monkeypatch.setattr(probe_checks, "_warned", set())


@pytest.fixture
def silent_resolver(monkeypatch) -> Iterator[None]:
    """``tools.test`` resolves only once the test is over (a resolver that does not answer)."""
    real, release = socket.getaddrinfo, threading.Event()

    def getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
        if host in ("tools.test", b"tools.test"):  # anyio passes the name IDNA-encoded
            release.wait(60)
            raise socket.gaierror(socket.EAI_NONAME, "no such name")
        return real(host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    yield
    release.set()


class Drip:
    """A server dripping its answer: ``url``, and ``hung_up()``: whether every connection it accepted has
    been closed by the client (each drip then fails and ends)."""

    def __init__(self, origin: str, drips: list[threading.Thread]) -> None:
        self.origin, self.drips = origin, drips
        self.url = f"{origin}/api"

    def hung_up(self) -> bool:
        assert self.drips, "the check never connected: nothing to see (give it a longer timeout)"
        for drip in list(self.drips):
            drip.join(10.0)  # a bound for a hung test, not a speed assertion
        return not any(drip.is_alive() for drip in self.drips)


@pytest.fixture(params=["headers"])
def dripping(request, tmp_path, monkeypatch) -> Iterator[Drip]:
    """A server that answers a byte every 20 ms (until the test is over): one header that never ends, or
    (param ``body``) complete headers and a body that never ends, or (``tls``) the header over TLS (its
    certificate trusted by the checks made in the test: ``SSL_CERT_FILE``)."""
    server = socket.create_server(("127.0.0.1", 0))
    over = threading.Event()
    drips: list[threading.Thread] = []
    if request.param == "body":
        start = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: 1000000\r\n\r\n"
    else:
        start = b"HTTP/1.1 200 OK\r\nX-Slow: "  # one more byte of a header value that never ends
    tls = None
    if request.param == "tls":
        cert, key = self_signed(tmp_path)
        monkeypatch.setenv("SSL_CERT_FILE", str(cert))
        tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        tls.load_cert_chain(cert, key)

    def drip(conn: socket.socket) -> None:
        try:
            if tls is not None:
                conn = tls.wrap_socket(conn, server_side=True)
            conn.recv(65536)  # the request (its first part: all a probe sends)
            conn.sendall(start)
            while not over.wait(0.02):
                conn.sendall(b":")  # a byte more (an SSE comment, for an SSE client)
        except OSError:  # the client hung up
            return
        finally:
            conn.close()

    def serve() -> None:
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            drips.append(threading.Thread(target=drip, args=(conn,), daemon=True))
            drips[-1].start()

    threading.Thread(target=serve, daemon=True).start()
    yield Drip(f"{'https' if tls else 'http'}://127.0.0.1:{server.getsockname()[1]}", drips)
    over.set()
    server.close()


def new_threads(before: set[threading.Thread], name: str) -> list[threading.Thread]:
    """The threads called ``name`` started since ``before`` and still running after a join each."""
    started = [t for t in threading.enumerate() if t.name == name and t not in before]
    for thread in started:
        thread.join(10.0)  # a bound for a hung test, not a speed assertion
    return [t for t in started if t.is_alive()]


def returned(call: Callable[..., Any], *args: Any) -> list[Any]:
    """What ``call(*args)`` (a check of a tool) returned (or the exception it raised) as a one-item list,
    or [] if it had not come back after ``GENEROUS`` seconds."""
    out: list[Any] = []

    def run() -> None:
        try:
            out.append(call(*args))
        except Exception as exc:
            out.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(GENEROUS)
    return out


def test_a_resolver_that_does_not_answer_in_time_records_nothing_and_says_so(silent_resolver, caplog):
    """Before: the check waited for the resolver, whatever its timeout (the test's 60 s)."""
    with caplog.at_level(logging.WARNING, logger="rated.probe_checks"):
        assert returned(http_check(timeout=0.3), Tool(id="a", name="a", endpoint="http://tools.test/x")) == [
            None
        ]
    warned = [r.getMessage() for r in caplog.records]
    assert any("tools.test" in m and "name resolution did not answer within 0.3 s" in m for m in warned)


def test_a_server_that_drips_its_answer_is_a_timeout(dripping):
    """Each byte came within the read timeout, so httpx never timed out: the check ran until the server
    stopped (at the end of the test), then counted its dropped connection as a tool_error."""
    (answer,) = returned(http_check(timeout=0.3), Tool(id="a", name="a", endpoint=dripping.url)) or [None]
    assert answer is not None and answer.kind is OutcomeKind.TIMEOUT


@pytest.mark.parametrize(
    ("dripping", "method"), [("headers", "HEAD"), ("body", "GET"), ("tls", "HEAD")], indirect=["dripping"]
)
def test_a_check_of_a_dripping_server_leaves_no_thread_or_connection_behind(dripping, method):
    """Before: the check came back at its deadline, but its thread went on reading (each byte reset the
    read timeout) with the connection open: minutes for headers (h11's 16 KiB limit), for ever for a
    body. One thread and one socket more at each probe round of such a tool."""
    before = set(threading.enumerate())
    check = http_check(timeout=1.0, method=method)
    (answer,) = returned(check, Tool(id="a", name="a", endpoint=dripping.url)) or [None]
    assert answer is not None and answer.kind is OutcomeKind.TIMEOUT
    assert new_threads(before, "rated-probe-check") == []
    assert dripping.hung_up()


def test_an_mcp_ping_keeps_to_its_timeout_when_the_resolver_does_not_answer(silent_resolver):
    """The SDK's lookup was cancelled at the deadline, but its event loop waited for the resolver's thread
    before closing, and the ping then counted as the server's timeout."""
    if importlib.util.find_spec("mcp") is None:
        pytest.skip("needs the mcp SDK")
    tool = Tool(id="a", name="a", source="mcp", endpoint="http://tools.test/mcp")
    from rated.mcp_ping import _sdk

    _sdk()  # imported before the deadline in any case: not what this test waits on
    assert returned(mcp_check(timeout=0.3), tool) == [None]


@pytest.mark.parametrize(("dripping", "path"), [("headers", "/mcp"), ("body", "/sse")], indirect=["dripping"])
def test_an_mcp_ping_of_a_dripping_server_leaves_no_thread_or_connection_behind(dripping, path):
    """The ping's own deadline (``anyio.fail_after``) ends its thread and closes its connection: streamable
    HTTP waiting for the headers of its ``initialize`` answer, SSE for the stream's ``endpoint`` event."""
    if importlib.util.find_spec("mcp") is None:
        pytest.skip("needs the mcp SDK")
    from rated.mcp_ping import load_sdk

    load_sdk()  # imported before the deadline in any case: not what this test waits on
    before = set(threading.enumerate())
    tool = Tool(id="a", name="a", source="mcp", endpoint=dripping.origin + path)
    # long enough for the SDK's client to connect on a busy machine: a ping cut before it leaves nothing
    (answer,) = returned(mcp_check(timeout=2.0), tool) or [None]
    assert answer is not None and answer.kind is OutcomeKind.TIMEOUT
    assert new_threads(before, "rated-probe-check") == []
    assert dripping.hung_up()


def test_jittered_waits_keep_to_the_interval_floor():
    """every=1 with jitter 0.5 waited 0.5 s to 1.5 s: rounds twice a second, under the floor."""
    with Retriever.from_catalog([Tool(id="a", name="a")], encoder=HashEncoder(16)) as r:
        prober = Prober(r, lambda tool: None, every=MIN_EVERY, jitter=0.5, seed=1)
        waits = [prober._wait() for _ in range(2000)]
        assert min(waits) == MIN_EVERY and max(waits) > 1.4  # floored, not shrunk: the spread stays
        wide = Prober(r, lambda tool: None, every=10, jitter=0.5, seed=1)
        assert min(wide._wait() for _ in range(2000)) < 5.1  # far above the floor: as drawn


@pytest.fixture
def mute() -> Iterator[str]:
    """A server that accepts connections and never answers (until the test is over)."""
    server = socket.create_server(("127.0.0.1", 0))
    held: list[socket.socket] = []

    def serve() -> None:
        while True:
            try:
                held.append(server.accept()[0])
            except OSError:
                return

    threading.Thread(target=serve, daemon=True).start()
    yield f"http://127.0.0.1:{server.getsockname()[1]}/api"
    server.close()
    for conn in held:
        conn.close()


async def _read_the_answer(tool: Tool) -> str:
    """An async check: connect to the tool's endpoint and wait for its first byte (the server is up)."""
    parts = urlsplit(tool.endpoint)
    reader, writer = await asyncio.open_connection(parts.hostname, parts.port)
    try:
        await reader.read(1)
    finally:
        writer.close()
    return "success"


def aprobed(endpoint: str, **kwargs: Any) -> tuple[list[Any], bool | None]:
    """``aprobe``'s results for a suspected tool at ``endpoint`` with ``_read_the_answer`` (in a thread,
    which must come back within ``GENEROUS`` seconds), and the tool's health afterwards."""
    with Retriever.from_catalog(
        [Tool(id="a", name="a", endpoint=endpoint)], encoder=HashEncoder(16), clock=lambda: 1000.0
    ) as r:
        r.feedback("a", "tool_error")
        done = returned(asyncio.run, aprobe(r, _read_the_answer, 1, **kwargs))
        assert done, "the probe round did not come back"
        return done[0], r.health("a").healthy


def test_aprobe_keeps_each_check_to_its_timeout(mute):
    """Before: the round waited for the server's answer for as long as it took (here, for ever)."""
    results, healthy = aprobed(mute, timeout=0.3)
    assert [(r.tool_id, r.outcome.kind) for r in results] == [("a", OutcomeKind.TIMEOUT)]
    assert healthy is False  # recorded: still suspected


def test_aprobe_counts_a_resolver_that_does_not_answer_as_this_hosts_failure(silent_resolver, caplog):
    """As ``http_check`` and ``mcp_check`` do: nothing is recorded against the tool, and a warning says
    why. Before, the check ran without looking the name up, or was the tool's timeout once bounded."""
    with caplog.at_level(logging.WARNING, logger="rated.probe_checks"):
        results, _ = aprobed("http://tools.test/x", timeout=0.3)
    assert [(r.tool_id, r.outcome) for r in results] == [("a", None)]
    warned = [r.getMessage() for r in caplog.records]
    assert any("tools.test" in m and "name resolution did not answer within 0.3 s" in m for m in warned)


@pytest.mark.parametrize(
    ("dripping", "method"), [("headers", "HEAD"), ("body", "GET")], indirect=["dripping"]
)
def test_aprobe_leaves_no_task_or_connection_of_a_dripping_server_behind(dripping, method):
    """The check cancelled at the deadline: its request's task is gone and its connection closed, with an
    httpx client's check (each byte resets its read timeout) as with a bare one."""
    import httpx

    async def ask(tool: Tool) -> str:
        async with httpx.AsyncClient(timeout=30.0) as client:
            await client.request(method, tool.endpoint)
        return "success"

    async def round_and_tasks() -> tuple[list[Any], set[asyncio.Task[Any]]]:
        with Retriever.from_catalog(
            [Tool(id="a", name="a", endpoint=dripping.url)], encoder=HashEncoder(16), clock=lambda: 1000.0
        ) as r:
            r.feedback("a", "tool_error")
            results = await aprobe(r, ask, 1, timeout=2.0)  # time for the client to connect
        return results, asyncio.all_tasks() - {asyncio.current_task()}

    (done,) = returned(asyncio.run, round_and_tasks()) or [None]
    assert done is not None, "the probe round did not come back"
    results, tasks = done
    assert [(r.tool_id, r.outcome.kind) for r in results] == [("a", OutcomeKind.TIMEOUT)]
    assert tasks == set()
    assert dripping.hung_up()
