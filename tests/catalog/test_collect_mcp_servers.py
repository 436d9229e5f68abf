"""rated.catalog.collect.mcp_servers against real MCP servers: tiny SDK servers started by the tests."""

from __future__ import annotations

import http.server
import socket
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

pytest.importorskip("mcp")

from rated.catalog.collect import mcp_servers  # noqa: E402
from rated.catalog.collect.mcp_servers import (  # noqa: E402
    McpServer,
    ServerTools,
    list_server_tools,
    list_servers_tools,
    read_servers,
)
from rated.catalog.schema import AuthType, Tool  # noqa: E402
from rated.errors import CatalogError, ConfigError  # noqa: E402

SLOW_START = 60.0  # seconds a server that works gets: two shared cores may be busy

# One low-level server whose behaviour argv picks: `pager N PAGE` serves N tools, PAGE per tools/list
# page (nextCursor = the next offset, any other cursor an error); `empty` lists none; `bare` offers no
# tools capability; `loop` answers every page with the same cursor.
SERVER = textwrap.dedent(
    """
    import sys
    import anyio
    import mcp_types as types
    from mcp.server.lowlevel import Server
    from mcp.server.stdio import stdio_server

    mode = sys.argv[1]
    n, size = (int(sys.argv[2]), int(sys.argv[3])) if mode == "pager" else (0, 1)
    TOOLS = [
        types.Tool(
            name=f"tool_{i}",
            description=f"Tool number {i} of the pager",
            input_schema={"type": "object", "properties": {"x": {"type": "integer"}}},
            annotations=types.ToolAnnotations(read_only_hint=True),
        )
        for i in range(n)
    ]

    async def list_tools(ctx, params):
        cursor = params.cursor if params else None
        if mode == "loop":
            return types.ListToolsResult(tools=TOOLS, next_cursor="again")
        start = int(cursor or 0)
        if cursor is not None and (start % size or start >= n):
            raise ValueError(f"bad cursor {cursor}")
        nxt = str(start + size) if start + size < n else None
        return types.ListToolsResult(tools=TOOLS[start : start + size], next_cursor=nxt)

    handlers = {} if mode == "bare" else {"on_list_tools": list_tools}
    server = Server(f"{mode}-server", version="1.2.3", **handlers)

    async def main():
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())

    anyio.run(main)
    """
)


@pytest.fixture
def server_py(tmp_path: Path) -> Path:
    path = tmp_path / "server.py"
    path.write_text(SERVER)
    return path


def test_every_page_is_listed_under_the_servers_name_or_the_one_given(server_py):
    pager = McpServer.stdio([sys.executable, str(server_py), "pager", "7", "3"])
    named = McpServer.stdio([sys.executable, str(server_py), "pager", "2", "5"], name="gh")
    got, other = read_servers([pager, named], timeout=SLOW_START)
    assert (got.name, got.version) == ("pager-server", "1.2.3")
    assert [t.id for t in got.tools] == [f"pager-server.tool_{i}" for i in range(7)]  # 3 pages followed
    tool = got.tools[6]
    assert (tool.name, tool.source, tool.provider) == ("tool_6", "mcp", "pager-server")
    assert tool.description == "Tool number 6 of the pager"
    assert tool.parameters == {"type": "object", "properties": {"x": {"type": "integer"}}}
    assert tool.extra == {"annotations": {"readOnlyHint": True}}  # the loader's MCP conversion
    assert tool.provenance is not None
    assert (tool.provenance.package, tool.provenance.version) == ("pager-server", "1.2.3")
    assert tool.provenance.path == f"{sys.executable} {server_py} pager 7 3"
    assert tool.endpoint is None and tool.auth.type == AuthType.UNKNOWN
    # a name given replaces the server's as id prefix and provider; its own stays on record
    assert [(t.id, t.provider) for t in other.tools] == [("gh.tool_0", "gh"), ("gh.tool_1", "gh")]
    assert other.tools[0].provenance.package == "pager-server"


def test_two_servers_of_one_name_are_refused_before_anything_is_returned(monkeypatch):
    tool = Tool(id="x.t", name="t", provider="x")
    read = []

    def fake_read(server, *, timeout):
        read.append(server.label)
        return ServerTools(server=server, name="x", version=None, tools=[tool], seconds=0.0)

    monkeypatch.setattr(mcp_servers, "read_server", fake_read)
    with pytest.raises(CatalogError, match=r"two MCP servers are named 'x' \(a 1 and b 2\).*--name"):
        list_servers_tools(["a 1", "b 2", "c 3"])
    assert read == ["a 1", "b 2"]  # stopped at the clash


@pytest.mark.parametrize(
    ("mode", "message"),
    [
        ("empty", "lists no tools"),
        ("bare", "serves no tools: it does not offer tools"),
        ("loop", "tools/list pages loop"),
    ],
)
def test_a_server_with_no_tool_list_is_one_error(server_py, mode, message):
    with pytest.raises(CatalogError, match=message) as err:
        list_server_tools([sys.executable, str(server_py), mode], timeout=SLOW_START)
    assert "\n" not in str(err.value) and str(server_py) in str(err.value)


def test_a_command_that_does_not_start_or_exits_at_once(tmp_path):
    with pytest.raises(CatalogError, match="cannot start it: command not found"):
        list_server_tools([str(tmp_path / "no-such-server")], timeout=5)
    with pytest.raises(CatalogError, match="closed the connection before answering") as err:
        list_server_tools(
            [sys.executable, "-c", "import sys; print('missing GITHUB_TOKEN', file=sys.stderr); sys.exit(3)"],
            timeout=SLOW_START,
        )
    assert "its stderr ends: 'missing GITHUB_TOKEN'" in str(err.value)


def test_a_server_that_never_answers_times_out(tmp_path):
    pid_file = tmp_path / "pid"
    code = f"import os, sys; open({str(pid_file)!r}, 'w').write(str(os.getpid())); sys.stdin.read()"
    start = time.perf_counter()
    with pytest.raises(CatalogError, match=r"no answer within 0\.5 s"):
        list_server_tools([sys.executable, "-c", code], timeout=0.5)
    assert time.perf_counter() - start < 5
    pid = int(pid_file.read_text())
    with pytest.raises(OSError):  # stopped, not left running  # noqa: PT011
        _wait_gone(pid)


def test_a_server_writing_other_things_on_stdout_says_so_without_a_traceback(capfd):
    code = "print('Listening...', flush=True); import sys; sys.stdin.read()"
    with pytest.raises(CatalogError, match="no answer within 1 s.*Failed to parse JSONRPC message"):
        list_server_tools([sys.executable, "-c", code], timeout=1)
    assert "Traceback" not in capfd.readouterr().err


def test_secrets_are_left_out_of_what_is_shown():
    server = McpServer.stdio(
        "npx -y srv --token abc --api-key=def GITHUB_TOKEN=ghi --port 3", env={"GITHUB_TOKEN": "jkl"}
    )
    assert server.label == "npx -y srv --token '***' '--api-key=***' 'GITHUB_TOKEN=***' --port 3"
    url = McpServer.http("https://me:pw@mcp.example.com:8443/mcp?key=abc#x", headers={"Authorization": "t"})
    assert url.label == "https://mcp.example.com:8443/mcp"
    assert McpServer.parse("http://h/mcp").transport == "http"
    assert McpServer.parse("python -m my_server").command == ("python", "-m", "my_server")
    for bad in (
        lambda: McpServer.stdio(""),
        lambda: McpServer.http("ftp://h/"),
        lambda: McpServer.stdio("x '"),
    ):
        with pytest.raises(ConfigError):
            bad()
    with pytest.raises(ConfigError, match="timeout"):
        list_server_tools("x", timeout=0)


# ---- HTTP --------------------------------------------------------------------------------------------
HTTP_SERVER = textwrap.dedent(
    """
    import sys
    from mcp.server.mcpserver import MCPServer

    app = MCPServer("weather")

    @app.tool()
    def forecast(city: str) -> str:
        '''Weather forecast for a city.'''
        return "sunny"

    app.run(sys.argv[1], host="127.0.0.1", port=int(sys.argv[2]))
    """
)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_gone(pid: int, seconds: float = 5.0) -> None:
    """Returns while process ``pid`` still exists after ``seconds``; raises OSError once it is gone."""
    import os

    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        os.kill(pid, 0)
        time.sleep(0.05)


@pytest.mark.parametrize(("transport", "path"), [("streamable-http", "/mcp"), ("sse", "/sse")])
def test_an_http_server_is_listed_with_its_url_as_endpoint(tmp_path, transport, path):
    script = tmp_path / "http_server.py"
    script.write_text(HTTP_SERVER)
    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, str(script), transport, str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + SLOW_START
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert proc.poll() is None and time.monotonic() < deadline, "the test server did not start"
                time.sleep(0.1)
        url = f"http://user:secret@127.0.0.1:{port}{path}?token=abc"
        server = McpServer.http(url, headers={"Authorization": "Bearer xyz"}, sse=transport == "sse")
        (tool,) = list_server_tools(server, timeout=SLOW_START)
    finally:
        proc.terminate()
        proc.wait(10)
    assert (tool.id, tool.provider, tool.source) == ("weather.forecast", "weather", "mcp")
    assert tool.description == "Weather forecast for a city."
    assert tool.endpoint == f"http://127.0.0.1:{port}{path}"  # no user-info, no query
    assert tool.provenance.path == tool.endpoint
    assert tool.auth.type == AuthType.API_KEY and tool.auth.credential == "Authorization"  # the name only
    assert "xyz" not in tool.model_dump_json() and "secret" not in tool.model_dump_json()


class _NotMcp(http.server.BaseHTTPRequestHandler):
    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        body = b"<html>hello</html>"
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:  # noqa: N802
        self.send_error(404)

    do_DELETE = do_GET  # noqa: N815

    def log_message(self, *args: object) -> None:
        return None


def test_a_url_that_is_not_an_mcp_server_or_not_there():
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _NotMcp)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        port = httpd.server_address[1]
        with pytest.raises(CatalogError, match="not an MCP server.*text/html") as err:
            list_server_tools(f"http://127.0.0.1:{port}/", timeout=10)
        assert "\n" not in str(err.value)
        with pytest.raises(CatalogError, match="not an MCP server: it answered HTTP 404"):
            list_server_tools(McpServer.http(f"http://127.0.0.1:{port}/sse", sse=True), timeout=10)
    finally:
        httpd.shutdown()
        httpd.server_close()
    with pytest.raises(CatalogError, match="cannot reach it"):
        list_server_tools(f"http://127.0.0.1:{_free_port()}/mcp", timeout=10)
