"""``http_check`` (and ``mcp_check`` where they share a rule) against what production endpoints answer: a 501
to ``HEAD``, redirects (within the host, to a login page elsewhere, in a loop), URLs carrying credentials,
and failures that tell of the probing host rather than the tool (a certificate it does not trust, its
resolver failing for a while, its proxy failing): none of these may record a working tool as down."""

from __future__ import annotations

import http.server
import importlib.util
import logging
import socket
import ssl
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from rated import Tool, probe_checks
from rated.outcome import OutcomeKind
from rated.probe_checks import http_check
from self_signed import self_signed

HOST = "127.0.0.1"
Routes = dict[str, tuple[int, dict[str, str]]]


class _Endpoint(http.server.BaseHTTPRequestHandler):
    """Answers each path from ``server.routes`` (default 200) and records each request in
    ``server.seen``: (method, path with its query, headers)."""

    def _answer(self) -> None:
        self.server.seen.append((self.command, self.path, dict(self.headers)))
        status, headers = self.server.routes.get(self.path.split("?")[0], (200, {}))
        self.send_response(status)
        for key, value in headers.items():
            self.send_header(key, value)
        self.send_header("Content-Length", "0")
        self.end_headers()

    do_HEAD = do_GET = do_POST = _answer  # noqa: N815 - http.server's naming

    def do_CONNECT(self) -> None:  # noqa: N802 - a proxy that cannot reach anything
        self.server.seen.append((self.command, self.path, dict(self.headers)))
        self.send_response(502)
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def endpoint() -> Iterator[Callable[..., tuple[int, list]]]:
    """``endpoint(routes, tls=None)``: a server on a free port answering ``routes`` (over TLS with
    ``tls=(cert, key)``); (its port, the list of requests it saw)."""
    running = []

    def start(routes: Routes | None = None, tls: tuple[Path, Path] | None = None) -> tuple[int, list]:
        httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Endpoint)
        httpd.routes, httpd.seen = routes or {}, []
        if tls is not None:
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(*tls)
            httpd.socket = context.wrap_socket(httpd.socket, server_side=True)
        thread = threading.Thread(target=httpd.serve_forever, daemon=True)
        thread.start()
        running.append(httpd)
        return httpd.server_address[1], httpd.seen

    yield start
    for httpd in running:
        httpd.shutdown()
        httpd.server_close()


@pytest.fixture(autouse=True)
def _fresh_warnings(monkeypatch):
    monkeypatch.setattr(probe_checks, "_warned", set())  # each test sees its own first warning


def tool(url: str, source: str = "custom") -> Tool:
    return Tool(id="api", name="api", endpoint=url, source=source)


def test_a_server_without_head_answers_501_and_is_up(endpoint):
    port, seen = endpoint({"/api": (501, {})})
    assert http_check(timeout=5)(tool(f"http://127.0.0.1:{port}/api")).kind is OutcomeKind.SUCCESS
    assert [method for method, _, _ in seen] == ["HEAD"]


def test_a_redirect_to_another_host_is_an_answer_and_is_not_followed(endpoint):
    """A login page elsewhere (maybe out of this host's reach) answered for the endpoint: following it made a
    working tool a tool_error whenever the login host could not be reached from the probing host."""
    port, seen = endpoint({"/api": (302, {"Location": "http://login.invalid/sso?next=/api"})})
    assert http_check(timeout=5)(tool(f"http://127.0.0.1:{port}/api")).kind is OutcomeKind.SUCCESS
    assert [path for _, path, _ in seen] == ["/api"]


def test_a_redirect_within_the_host_is_followed_to_the_answer(endpoint):
    port, seen = endpoint({"/old": (301, {"Location": "/new"}), "/new": (503, {})})
    assert http_check(timeout=5)(tool(f"http://127.0.0.1:{port}/old")).kind is OutcomeKind.TOOL_ERROR
    assert [path for _, path, _ in seen] == ["/old", "/new"]


def test_a_redirect_loop_is_followed_a_few_hops_and_is_an_answer(endpoint):
    """httpx's TooManyRedirects (after 20 hops, each with its own timeouts) was a tool_error."""
    port, seen = endpoint({"/loop": (302, {"Location": "/loop"})})
    assert http_check(timeout=5)(tool(f"http://127.0.0.1:{port}/loop")).kind is OutcomeKind.SUCCESS
    assert len(seen) == 1 + probe_checks._MAX_HOPS


def test_credentials_and_tokens_in_an_endpoint_are_neither_sent_nor_logged(endpoint, caplog):
    """httpx logs each request's URL at INFO: an endpoint with user-info or a token in its query string had
    them in the service's log at every probe (and the user-info sent as Basic credentials)."""
    port, seen = endpoint()
    url = f"http://probe:pa55word@127.0.0.1:{port}/api?token=s3cret#frag"
    with caplog.at_level(logging.DEBUG):
        assert http_check(timeout=5)(tool(url)).kind is OutcomeKind.SUCCESS
    assert [path for _, path, _ in seen] == ["/api"]
    assert not any(key.lower() == "authorization" for key in seen[0][2])
    logged = "\n".join(record.getMessage() for record in caplog.records)
    assert f"127.0.0.1:{port}/api" in logged  # the log line is there, without the secrets
    assert "s3cret" not in logged and "pa55word" not in logged


def test_a_url_function_is_used_as_given(endpoint):
    port, seen = endpoint()
    check = http_check(timeout=5, url=lambda t: f"{t.endpoint}/health?probe=1")
    assert check(tool(f"http://127.0.0.1:{port}")).kind is OutcomeKind.SUCCESS
    assert [path for _, path, _ in seen] == ["/health?probe=1"]


def test_a_certificate_this_host_does_not_trust_records_nothing_and_says_how_to_trust_it(
    endpoint, tmp_path, caplog, monkeypatch
):
    """Agents calling a tool behind a private CA trust it; the probing host's bundle (certifi) may not: each
    probe was a tool_error, keeping a working tool down."""
    cert, key = self_signed(tmp_path)
    port, _ = endpoint(tls=(cert, key))
    url = f"https://127.0.0.1:{port}/mcp"
    checks = [http_check(timeout=5)]
    if importlib.util.find_spec("mcp") is not None:  # the service extra: MCP servers' tools too
        from rated.probe_checks import mcp_check

        checks.append(lambda t: mcp_check(timeout=5)(t.model_copy(update={"source": "mcp"})))
    with caplog.at_level(logging.WARNING, logger="rated.probe_checks"):
        for check in checks:
            assert check(tool(url)) is None
            assert check(tool(url)) is None
    warned = [r.getMessage() for r in caplog.records if r.name == "rated.probe_checks"]
    assert len(warned) == 1 and "127.0.0.1" in warned[0] and "SSL_CERT_FILE" in warned[0]
    monkeypatch.setenv("SSL_CERT_FILE", str(cert))  # what the warning says to do
    assert http_check(timeout=5)(tool(url)).kind is OutcomeKind.SUCCESS


def _resolver(monkeypatch, errno: int) -> None:
    """``tools.test`` fails to resolve with ``errno``; other names resolve as ever."""
    real = socket.getaddrinfo

    def getaddrinfo(host, *args, **kwargs):
        if host == "tools.test":
            raise socket.gaierror(errno, "resolver says no")
        return real(host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)


def test_a_resolver_failing_for_a_while_records_nothing_but_a_name_that_does_not_exist_is_down(monkeypatch):
    import httpx

    _resolver(monkeypatch, socket.EAI_AGAIN)  # the probing host's resolver, not the tool
    assert http_check(timeout=5)(tool("http://tools.test/api")) is None
    _resolver(monkeypatch, socket.EAI_NONAME)
    with pytest.raises(httpx.ConnectError):  # classified as a tool_error by probe
        http_check(timeout=5)(tool("http://tools.test/api"))


def test_a_proxy_that_fails_records_nothing(endpoint, monkeypatch):
    port, seen = endpoint()  # answers CONNECT with 502
    for name in ("NO_PROXY", "no_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HTTPS_PROXY", f"http://127.0.0.1:{port}")
    assert http_check(timeout=5)(tool("https://tools.test/api")) is None
    assert [method for method, _, _ in seen] == ["CONNECT"]


def test_without_the_mcp_sdk_mcp_servers_tools_get_the_http_check_and_no_warning(
    endpoint, monkeypatch, caplog
):
    from rated.errors import ConfigError
    from rated.probe_checks import default_check, mcp_check

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "mcp" else real(name, *a)
    )
    with pytest.raises(ConfigError, match=r"needs the mcp SDK: pip install 'rated\[service\]'"):
        mcp_check(timeout=5)
    port, seen = endpoint()
    with caplog.at_level(logging.WARNING, logger="rated.probe_checks"):
        check = default_check(timeout=5)
    assert caplog.records == []  # the client extra: expected, not worth a warning
    assert check(tool(f"http://{HOST}:{port}/mcp", source="mcp")).kind is OutcomeKind.SUCCESS
    assert [method for method, _, _ in seen] == ["HEAD"]
