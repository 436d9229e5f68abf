"""``rated mcp --probe-every`` / RATED_PROBE_EVERY: the MCP server health-checks the tools seen failing while
it runs (the setting was read, checked, and ignored), and stops probing when its run ends."""

from __future__ import annotations

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
