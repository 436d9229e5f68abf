"""rated.probe_checks.mcp_check (rated.mcp_ping) against real MCP servers: the SDK's MCPServer served by
uvicorn in a thread on a free port, over streamable HTTP and SSE, plus small ASGI apps that answer what a
broken server does (a 5xx, a JSON-RPC error, an HTTP answer with nothing behind it)."""

from __future__ import annotations

import asyncio
import json
import logging
import socket
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

pytest.importorskip("mcp")
uvicorn = pytest.importorskip("uvicorn")

from mcp.server.mcpserver import MCPServer  # noqa: E402

from rated import Tool  # noqa: E402
from rated.catalog.schema import Provenance  # noqa: E402
from rated.outcome import OutcomeKind  # noqa: E402
from rated.probing import default_check, mcp_check  # noqa: E402

SLOW = 30.0  # seconds a working server gets to answer: two shared cores may be busy

Asgi = Callable[..., Any]


class _Seen:
    """Wraps an ASGI app and records each HTTP request: method, path, query string, headers, body."""

    def __init__(self, app: Asgi) -> None:
        self.app, self.requests = app, []

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        request = {
            "method": scope["method"],
            "path": scope["path"],
            "query": scope["query_string"].decode(),
            "headers": {k.decode().lower(): v.decode() for k, v in scope["headers"]},
            "body": b"",
        }
        self.requests.append(request)

        async def reading() -> dict:
            message = await receive()
            request["body"] += message.get("body", b"")
            return message

        return await self.app(scope, reading, send)

    def methods(self) -> list[str]:
        """The JSON-RPC methods of the requests' bodies."""
        out = []
        for request in self.requests:
            try:
                out.append(json.loads(request["body"]).get("method"))
            except ValueError:
                continue
        return out


@pytest.fixture
def serve() -> Iterator[Callable[..., tuple[int, _Seen]]]:
    """``serve(app, lifespan="on")`` runs ``app`` with uvicorn in a thread on a free port: (port, its
    ``_Seen`` record); every server is stopped at the end of the test."""
    running: list[tuple[Any, threading.Thread]] = []

    def start(app: Asgi, lifespan: str = "on") -> tuple[int, _Seen]:
        seen = _Seen(app)
        sock = socket.create_server(("127.0.0.1", 0))
        config = uvicorn.Config(seen, log_level="warning", lifespan=lifespan, timeout_graceful_shutdown=1)
        server = uvicorn.Server(config)
        thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
        thread.start()
        running.append((server, thread))
        deadline = time.monotonic() + SLOW
        while not server.started:
            assert thread.is_alive() and time.monotonic() < deadline, "the test server did not start"
            time.sleep(0.01)
        return sock.getsockname()[1], seen

    yield start
    for server, thread in running:
        server.should_exit = True
        thread.join(10)


def weather() -> MCPServer:
    app = MCPServer("weather")

    @app.tool()
    def forecast(city: str) -> str:
        """Weather forecast for a city."""
        return "sunny"

    return app


def mcp_tool(url: str | None, command: str | None = None) -> Tool:
    """A tool as ``rated catalog mcp`` records it: source mcp, the server's URL as endpoint (none for a stdio
    server, whose command is in the provenance)."""
    where = Provenance(package="weather", path=url or command)
    return Tool(id="weather.forecast", name="forecast", source="mcp", endpoint=url, provenance=where)


@pytest.mark.parametrize(("transport", "path"), [("streamable-http", "/mcp"), ("sse", "/sse")])
def test_a_server_that_answers_ping_is_up_and_is_sent_no_secret_of_its_url(serve, caplog, transport, path):
    app = weather()
    port, seen = serve(app.streamable_http_app() if transport == "streamable-http" else app.sse_app())
    url = f"http://probe:pa55word@127.0.0.1:{port}{path}?token=s3cret#frag"
    with caplog.at_level(logging.DEBUG):
        outcome = mcp_check(timeout=SLOW)(mcp_tool(url))
    assert outcome.kind is OutcomeKind.SUCCESS
    assert "initialize" in seen.methods() and "ping" in seen.methods()  # a real MCP ping, not a bare request
    for request in seen.requests:
        assert "s3cret" not in request["query"] and "authorization" not in request["headers"]
    logged = "\n".join(record.getMessage() for record in caplog.records)
    assert "s3cret" not in logged and "pa55word" not in logged


def test_a_server_that_is_gone_is_a_tool_error(serve):
    port, _ = serve(weather().streamable_http_app())
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        closed = s.getsockname()[1]
    check = mcp_check(timeout=SLOW)
    assert check(mcp_tool(f"http://127.0.0.1:{port}/mcp")).kind is OutcomeKind.SUCCESS
    assert check(mcp_tool(f"http://127.0.0.1:{closed}/mcp")).kind is OutcomeKind.TOOL_ERROR


def _answering(status: int, headers: dict[str, str] | None = None, error: int | None = None) -> Asgi:
    """An ASGI app answering every request with ``status`` (and ``headers``), or, with ``error``, each
    JSON-RPC request with that JSON-RPC error code (HTTP 200)."""

    async def app(scope: dict, receive: Any, send: Any) -> None:
        body, more = b"", True
        while more:
            message = await receive()
            body += message.get("body", b"")
            more = message.get("more_body", False)
        payload, extra = b"", dict(headers or {})
        if error is not None and body:
            request = json.loads(body)
            reply = {"jsonrpc": "2.0", "id": request.get("id"), "error": {"code": error, "message": "no"}}
            payload, extra = json.dumps(reply).encode(), {"content-type": "application/json"}
        raw = [(k.encode(), v.encode()) for k, v in extra.items()]
        await send({"type": "http.response.start", "status": status, "headers": raw})
        await send({"type": "http.response.body", "body": payload})

    return app


@pytest.mark.parametrize(
    ("status", "headers", "error", "kind", "retry_after"),
    [
        (503, {"retry-after": "120"}, None, "rate_limited", 120.0),  # down for a time it names
        (500, None, None, "tool_error", None),
        (429, None, None, "rate_limited", None),
        (401, None, None, "success", None),  # up, wants credentials the probe does not have
        (404, None, None, "success", None),  # answers: what http_check counts as up too
        (501, None, None, "success", None),  # a method it does not implement (a proxy's GET): it answers
        (200, None, -32602, "success", None),  # a JSON-RPC error is an answer (a version it refuses)
        (200, None, -32603, "tool_error", None),  # ...except an internal error
    ],
)
def test_what_a_server_answers_instead_of_a_ping(serve, status, headers, error, kind, retry_after):
    port, _ = serve(_answering(status, headers, error), lifespan="off")
    outcome = mcp_check(timeout=SLOW)(mcp_tool(f"http://127.0.0.1:{port}/mcp"))
    assert (outcome.kind.value, outcome.retry_after) == (kind, retry_after)


def test_a_server_whose_mcp_side_hangs_is_a_timeout_though_http_says_up(serve):
    """What the ping adds to a HEAD request: the HTTP side answers, the MCP side does not."""
    release = threading.Event()

    async def app(scope: dict, receive: Any, send: Any) -> None:
        if scope["method"] == "POST":
            while not release.is_set():  # the JSON-RPC request is never answered (until teardown)
                await asyncio.sleep(0.01)
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b""})

    port, _ = serve(app, lifespan="off")
    tool = mcp_tool(f"http://127.0.0.1:{port}/mcp")
    try:
        assert mcp_check(timeout=0.5)(tool).kind is OutcomeKind.TIMEOUT
        assert default_check(timeout=SLOW)(tool.model_copy(update={"source": "custom"})).kind is (
            OutcomeKind.SUCCESS
        )
    finally:
        release.set()


def test_stdio_servers_and_other_tools_are_not_pinged(serve):
    port, seen = serve(weather().streamable_http_app())
    url = f"http://127.0.0.1:{port}/mcp"
    check = mcp_check(timeout=SLOW)
    assert check(mcp_tool(None, command="npx -y @scope/weather --token ***")) is None  # no process spawned
    assert check(Tool(id="api", name="api", endpoint=url)) is None  # not an MCP server's tool
    assert check(mcp_tool("stdio")) is None and check(mcp_tool("ftp://127.0.0.1/x")) is None
    assert seen.requests == []


def test_the_default_check_pings_mcp_servers_and_sends_http_to_other_endpoints(serve):
    port, seen = serve(weather().streamable_http_app())
    url = f"http://127.0.0.1:{port}/mcp"
    check = default_check(timeout=SLOW)
    assert check(mcp_tool(url)).kind is OutcomeKind.SUCCESS
    assert "ping" in seen.methods()
    seen.requests.clear()
    assert check(Tool(id="api", name="api", endpoint=url)).kind is OutcomeKind.SUCCESS  # a 405 is an answer
    assert [r["method"] for r in seen.requests] == ["HEAD"]
    assert check(mcp_tool(None, command="weather-server")) is None


def test_a_check_called_from_async_code_still_answers(serve):
    """anyio.run cannot start inside a running loop: the ping then runs in a thread of its own, rather than
    failing and being recorded against the tool."""
    port, _ = serve(weather().streamable_http_app())
    check = mcp_check(timeout=SLOW)

    async def from_a_loop() -> Any:
        return check(mcp_tool(f"http://127.0.0.1:{port}/mcp"))

    assert asyncio.run(from_a_loop()).kind is OutcomeKind.SUCCESS


def test_the_check_refuses_a_timeout_out_of_bounds():
    from rated.errors import ConfigError

    for bad in (0, -1, float("nan"), float("inf"), 61, True, "5"):
        with pytest.raises(ConfigError, match="probe timeout"):
            mcp_check(timeout=bad)


def test_the_sdk_is_imported_before_the_pings_deadline_starts(tmp_path):
    """Importing the SDK's client takes half a second or more on a busy host: counted against the ping's
    deadline, the first probe of each process (each ``rated serve`` worker) found a healthy server
    ``timeout`` with a short timeout. A fresh interpreter: what ``anyio.fail_after`` finds imported."""
    with socket.socket() as s:  # a port nothing listens on: the ping fails at once, after the imports
        s.bind(("127.0.0.1", 0))
        closed = s.getsockname()[1]
    script = textwrap.dedent(
        f"""
        import sys
        import anyio

        real, loaded = anyio.fail_after, []

        def spy(*args, **kwargs):
            loaded.append(all(m in sys.modules for m in ("mcp.client", "mcp_types", "httpx2")))
            return real(*args, **kwargs)

        anyio.fail_after = spy
        from rated import Tool
        from rated.probing import mcp_check

        check = mcp_check(timeout=30)
        assert "mcp.client" not in sys.modules, "imported before the first check"
        tool = Tool(id="a", name="a", source="mcp", endpoint="http://127.0.0.1:{closed}/mcp")
        print(check(tool).kind.value, loaded[0])
        """
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["tool_error", "True"]


@pytest.mark.parametrize("version", ["1.26.0", "3.0.0"])
def test_an_sdk_of_another_major_version_is_refused_and_the_default_check_asks_http(
    serve, monkeypatch, caplog, version
):
    """mcp 1.x has no ``mcp_types`` nor the 2.x ``Client``: every ping failed, and each failure was
    recorded against a working tool (``tool_error``); ``default_check`` kept the MCP ping rather than the
    HTTP check."""
    from rated.errors import ConfigError

    monkeypatch.setattr("importlib.metadata.version", lambda name: version)
    with pytest.raises(ConfigError, match=rf"needs mcp>=2.3,<3 .*found mcp {version}"):
        mcp_check(timeout=SLOW)
    port, seen = serve(weather().streamable_http_app())
    with caplog.at_level(logging.WARNING, logger="rated.probe_checks"):
        check = default_check(timeout=SLOW)
    assert any("get the HTTP check" in r.getMessage() and version in r.getMessage() for r in caplog.records)
    assert check(mcp_tool(f"http://127.0.0.1:{port}/mcp")).kind is OutcomeKind.SUCCESS
    assert [r["method"] for r in seen.requests] == ["HEAD"]


def test_an_sdk_that_does_not_import_records_nothing(serve, monkeypatch, caplog):
    port, seen = serve(weather().streamable_http_app())
    monkeypatch.setitem(sys.modules, "mcp_types", None)  # a broken install: the import fails
    monkeypatch.setattr("rated.probe_checks._warned", set())
    with caplog.at_level(logging.WARNING, logger="rated.probe_checks"):
        assert mcp_check(timeout=SLOW)(mcp_tool(f"http://127.0.0.1:{port}/mcp")) is None
    assert seen.requests == [] and any("does not import" in r.getMessage() for r in caplog.records)
