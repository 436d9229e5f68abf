"""RATED_PROBE_EVERY / --probe-every: the service health-checks the http(s) endpoints of tools seen failing,
so a recovered tool is back without an agent paying a failed call; rounds counted in /metrics."""

from __future__ import annotations

import http.server
import re
import socket
import threading
import time

import pytest
from fastapi.testclient import TestClient

from rated import Tool
from rated.encode.testing import HashEncoder
from rated.errors import ConfigError
from rated.retriever import Retriever
from rated.service import Settings, create_app

pytestmark = pytest.mark.usefixtures("fast_probes")  # rounds every few ms

QUERY = "send an email message"


def tools(endpoint: str) -> list[Tool]:
    return [
        Tool(id="mail.a", name="send_email", description="Send an email message", endpoint=endpoint),
        Tool(id="mail.b", name="post_letter", description="Post a letter or message by mail"),
        Tool(
            id="weather", name="weather_forecast", description="Weather forecast for a city", endpoint="stdio"
        ),
    ]


def counted(text: str, outcome: str) -> float:
    found = re.search(rf'^rated_probes_total\{{outcome="{outcome}"\}} (\S+)$', text, re.MULTILINE)
    return float(found.group(1)) if found else 0.0


def top(c: TestClient) -> str:
    return c.post("/retrieve", json={"query": QUERY, "k": 2}).json()["hits"][0]["id"]


def test_a_demoted_tool_whose_endpoint_answers_is_back_by_the_next_rounds(tmp_path, endpoint):
    db = str(tmp_path / "p.db")
    Retriever.from_catalog(tools(endpoint), db=db, encoder=HashEncoder(64)).close()
    with TestClient(create_app(Settings(db=db, probe_every=0.05))) as c:
        assert c.post("/feedback", json={"tool_id": "mail.a", "outcome": "tool_error"}).status_code == 200
        c.post("/feedback", json={"tool_id": "weather", "outcome": "timeout"})
        deadline = time.monotonic() + 10
        # both seen: a round may run between the two reports, and mail.a be back before weather is a target
        while (top(c) != "mail.a" or counted(c.get("/metrics").text, "unchecked") < 1) and (
            time.monotonic() < deadline
        ):
            time.sleep(0.05)
        assert top(c) == "mail.a"  # no agent call since the failure
        text = c.get("/metrics").text
        assert counted(text, "success") >= 1 and counted(text, "unchecked") >= 1  # weather: no http endpoint
        outcomes = c.get("/tools/mail.a").json()
        assert outcomes["failures"] == 1 and outcomes["successes"] == 0  # probes are not agents' calls
        prober = c.app.state.prober
    prober._thread.join(10)  # the shutdown waits for no check in flight: the thread ends after it
    assert not prober._thread.is_alive()  # stopped with the app


def test_probing_is_off_by_default_and_its_settings_are_checked(tmp_path, endpoint):
    db = str(tmp_path / "off.db")
    Retriever.from_catalog(tools(endpoint), db=db, encoder=HashEncoder(64)).close()
    with TestClient(create_app(Settings(db=db))) as c:
        assert c.app.state.prober is None
    with pytest.raises(ConfigError, match="RATED_PROBE_EVERY"):
        Settings.from_env({"RATED_PROBE_EVERY": "0"})
    assert Settings.from_env({"RATED_PROBE_EVERY": "30", "RATED_PROBE_BUDGET": "2"}).probe_budget == 2


@pytest.fixture
def silent():
    """An endpoint that accepts connections and never answers; counts the connections."""
    server = socket.create_server(("127.0.0.1", 0))
    accepted: list[socket.socket] = []

    def serve():
        while True:
            try:
                accepted.append(server.accept()[0])
            except OSError:  # closed
                return

    threading.Thread(target=serve, daemon=True).start()
    yield f"http://127.0.0.1:{server.getsockname()[1]}/x", accepted
    server.close()
    for conn in accepted:
        conn.close()


def test_shutdown_stops_a_round_of_hanging_probes_after_the_check_in_flight(tmp_path, silent):
    """Five suspects on an endpoint that never answers, 0.4 s each: the round takes 2 s, the shutdown
    waited probe_timeout + 1 = 1.4 s, and the prober went on checking and recording past the store's close.
    The shutdown now waits for no check in flight: that one ends on its own, its answer dropped."""
    url, accepted = silent
    db = str(tmp_path / "hang.db")
    hanging = [
        Tool(id=f"t{i}", name=f"tool_{i}", description=f"tool number {i}", endpoint=url) for i in range(5)
    ]
    Retriever.from_catalog(hanging, db=db, encoder=HashEncoder(32)).close()
    settings = Settings(db=db, probe_every=0.05, probe_budget=5, probe_timeout=0.4)
    with TestClient(create_app(settings)) as c:
        for tool in hanging:
            c.post("/feedback", json={"tool_id": tool.id, "outcome": "tool_error"})
        deadline = time.monotonic() + 10
        while not accepted and time.monotonic() < deadline:
            time.sleep(0.01)
        assert accepted  # a check is in flight
        prober = c.app.state.prober
    prober._thread.join(10)  # its check times out (0.4 s), and the thread ends without a further one
    assert not prober._thread.is_alive()
    assert len(accepted) == 1  # the round's other four were not checked
    assert prober.last == []  # the round ended recording nothing: the timeout came after the stop


class _HttpUpMcpHung(http.server.BaseHTTPRequestHandler):
    """An MCP server whose HTTP side answers (HEAD: 200) and whose MCP side hangs (POST: no answer)."""

    release = threading.Event()

    def do_HEAD(self):  # noqa: N802 - http.server's naming
        self.send_response(200)
        self.end_headers()

    def do_POST(self):  # noqa: N802
        type(self).release.wait(10)

    def log_message(self, *args):
        pass


def test_the_service_pings_tools_of_mcp_servers_rather_than_asking_http_only(tmp_path):
    """A HEAD request would find this server up and bring its tool back; the MCP ping times out."""
    pytest.importorskip("mcp")
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _HttpUpMcpHung)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{httpd.server_address[1]}/mcp"
    db = str(tmp_path / "mcp.db")
    tool = Tool(
        id="weather.forecast", name="forecast", description="Weather forecast", source="mcp", endpoint=url
    )
    Retriever.from_catalog([tool, *tools("http://x.invalid")[1:2]], db=db, encoder=HashEncoder(64)).close()
    try:
        with TestClient(create_app(Settings(db=db, probe_every=0.05, probe_timeout=0.3))) as c:
            c.post("/feedback", json={"tool_id": "weather.forecast", "outcome": "tool_error"})
            deadline = time.monotonic() + 10
            while counted(c.get("/metrics").text, "timeout") < 1 and time.monotonic() < deadline:
                time.sleep(0.05)
            text = c.get("/metrics").text
            assert counted(text, "timeout") >= 1 and counted(text, "success") == 0
            assert c.get("/tools/weather.forecast").json()["healthy"] is False
    finally:
        _HttpUpMcpHung.release.set()
        httpd.shutdown()
        httpd.server_close()
