"""``rated mcp --probe-every`` / RATED_PROBE_EVERY: the MCP server health-checks the tools seen failing while
it runs (the setting was read, checked, and ignored), and stops probing when its run ends."""

from __future__ import annotations

import logging
import threading
import time

import anyio
import pytest

pytest.importorskip("mcp")

from mcp import Client  # noqa: E402

from rated import Tool  # noqa: E402
from rated.encode.testing import HashEncoder  # noqa: E402
from rated.retriever import Retriever  # noqa: E402
from rated.service import Settings  # noqa: E402
from rated.service.mcp_server import build_mcp_server  # noqa: E402

pytestmark = pytest.mark.usefixtures("fast_probes")  # rounds every few ms


def probers() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "rated-prober" and t.is_alive()]


def test_a_tool_reported_failing_is_back_by_the_servers_probes_and_probing_ends_with_the_run(endpoint):
    tools = [
        Tool(id="mail.a", name="send_email", description="Send an email message", endpoint=endpoint),
        Tool(id="mail.b", name="post_letter", description="Post a letter or message by mail"),
    ]
    with Retriever.from_catalog(tools, encoder=HashEncoder(64)) as r:
        server = build_mcp_server(r, Settings(probe_every=0.05))

        async def session() -> bool:
            async with Client(server) as client:
                await client.call_tool("report_outcome", {"tool_id": "mail.a", "outcome": "tool_error"})
                deadline = time.monotonic() + 10
                while not r.health("mail.a").healthy and time.monotonic() < deadline:
                    await anyio.sleep(0.05)
                return r.health("mail.a").healthy

        assert anyio.run(session)  # back with no agent call since the failure
        assert probers() == []  # stopped with the session's run
        assert r.health("mail.a").stats.failures == 1  # the probe is not an agent's call


def test_without_the_setting_the_server_does_not_probe(endpoint):
    tools = [Tool(id="mail.a", name="send_email", description="Send an email", endpoint=endpoint)]
    with Retriever.from_catalog(tools, encoder=HashEncoder(64)) as r:

        async def session() -> list:
            async with Client(build_mcp_server(r)) as client:
                await client.call_tool("report_outcome", {"tool_id": "mail.a", "outcome": "tool_error"})
                return probers()

        assert anyio.run(session) == []


def test_the_servers_run_ends_without_blocking_the_event_loop_on_the_prober(held_read, monkeypatch, caplog):
    """The prober is reading its targets (held until a task on the loop lets it go) when the session ends:
    the loop must run that task meanwhile, and the prober's thread has ended once the run has. Before, the
    lifespan joined the thread on the loop (``stop_prober``), so nothing let it go: the join gave up after
    ``probe_timeout`` + 1 s and warned, leaving the thread behind."""
    import rated.service.mcp_server as mcp_server

    real_start, started = mcp_server.start_prober, []
    monkeypatch.setattr(mcp_server, "start_prober", lambda *a: started.append(real_start(*a)) or started[0])
    tools = [Tool(id="t0", name="tool_0", description="send an email", endpoint="http://127.0.0.1:9/x")]
    with Retriever.from_catalog(tools, encoder=HashEncoder(32)) as r:
        r.feedback("t0", "tool_error")
        server = build_mcp_server(r, Settings(probe_every=0.01, probe_timeout=0.5))

        async def main() -> bool:
            async with anyio.create_task_group() as tg:
                async with Client(server):
                    await held_read.started()
                    prober = started[0]
                    tg.start_soon(held_read.let_go_at_stop, prober)
                return held_read.released.is_set() and not prober._thread.is_alive()

        with caplog.at_level(logging.WARNING, logger="rated.service.probes"):
            assert anyio.run(main)  # let go by the loop, and the thread had ended when the run did
    assert not [rec for rec in caplog.records if rec.name == "rated.service.probes"]
