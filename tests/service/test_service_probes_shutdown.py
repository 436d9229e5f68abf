"""How a service's prober starts and stops. Stopping blocked the event loop (a thread join in the lifespan)
and waited for the check in flight, up to ``probe_timeout`` + 1 s: every ``rated serve`` worker took that
long to stop at a SIGHUP or SIGTERM while a suspect's endpoint hung. And the first MCP ping imported the
mcp SDK (half a second or more) while the server served; it is imported in a thread as the prober
starts."""

from __future__ import annotations

import logging
import subprocess
import sys
import textwrap
import threading

import anyio
import pytest
from fastapi.testclient import TestClient

import rated.service.probes as probes
from rated import Tool
from rated.encode.testing import HashEncoder
from rated.retriever import Retriever
from rated.service import Settings, create_app

pytestmark = pytest.mark.usefixtures("fast_probes")  # rounds every few ms

GENEROUS = 20.0  # seconds a step the test waits for gets on a busy machine


@pytest.fixture
def suspect_db(tmp_path) -> str:
    db = str(tmp_path / "s.db")
    tools = [Tool(id="t0", name="tool_0", description="send an email", endpoint="http://127.0.0.1:9/x")]
    with Retriever.from_catalog(tools, db=db, encoder=HashEncoder(32)) as r:
        r.feedback("t0", "tool_error")
    return db


def test_the_shutdown_keeps_the_event_loop_serving_while_the_prober_reads_the_store(
    suspect_db, held_read, caplog
):
    """The prober is reading its targets (held until a task on the loop lets it go) when the app stops:
    the loop must run that task meanwhile. Before, the lifespan joined the prober's thread on the loop,
    so nothing let it go: the join gave up after probe_timeout + 1 s and warned."""
    app = create_app(Settings(db=suspect_db, probe_every=0.01, probe_timeout=0.5))

    async def main() -> bool:
        async with anyio.create_task_group() as tg:
            async with app.router.lifespan_context(app):
                prober = app.state.prober
                await held_read.started()
                tg.start_soon(held_read.let_go_at_stop, prober)
            return held_read.released.is_set() and not prober._thread.is_alive()

    with caplog.at_level(logging.WARNING, logger="rated.service.probes"):
        assert anyio.run(main)  # let go by the loop, and the thread had ended when the shutdown did
    assert not [r for r in caplog.records if r.name == "rated.service.probes"]


def test_the_shutdown_waits_for_no_check_in_flight(suspect_db, monkeypatch):
    """A check that hangs (held until after the shutdown here; up to probe_timeout in production): the
    app stops without it, and its answer is not recorded once it comes."""
    checking, release, answered = threading.Event(), threading.Event(), threading.Event()

    def hangs(tool):
        checking.set()
        release.wait(60)
        answered.set()
        return "tool_error"

    monkeypatch.setattr(probes, "default_check", lambda timeout: hangs)
    recorded = []
    real = Retriever.feedback
    monkeypatch.setattr(
        Retriever, "feedback", lambda self, *a, **kw: recorded.append(kw) or real(self, *a, **kw)
    )
    client = TestClient(create_app(Settings(db=suspect_db, probe_every=0.01, probe_timeout=60)))
    client.__enter__()
    prober = client.app.state.prober
    try:
        assert checking.wait(GENEROUS)
        stopped = threading.Thread(target=client.__exit__, args=(None, None, None), daemon=True)
        stopped.start()
        stopped.join(GENEROUS)  # before: up to probe_timeout + 1 = 61 s
        assert not stopped.is_alive() and not answered.is_set()
    finally:
        release.set()
    prober._thread.join(GENEROUS)
    assert answered.is_set() and not prober._thread.is_alive()
    assert not [kw for kw in recorded if kw.get("probe")]  # the answer after the stop is dropped


def test_the_mcp_sdk_is_imported_in_a_thread_as_the_prober_starts(tmp_path):
    """No tool is suspected, so no ping runs: the SDK is imported anyway, off the server's threads."""
    pytest.importorskip("mcp")
    script = """
        import sys, threading, time

        importers = {}

        class Spy:
            def find_spec(self, name, path=None, target=None):
                importers.setdefault(name, threading.current_thread().name)
                return None

        sys.meta_path.insert(0, Spy())
        from rated import Tool
        from rated.encode.testing import HashEncoder
        from rated.retriever import Retriever
        from rated.service import Settings
        from rated.service.probes import start_prober, stop_prober

        r = Retriever.from_catalog([Tool(id="a", name="a")], encoder=HashEncoder(16))
        assert "mcp.client" not in sys.modules
        settings = Settings(probe_every=30)
        prober = start_prober(settings, lambda: r)
        deadline = time.monotonic() + 60
        while "mcp.client" not in sys.modules and time.monotonic() < deadline:
            time.sleep(0.01)
        stop_prober(prober, settings)
        print(importers.get("mcp.client"), prober.rounds)
    """
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(script)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["rated-mcp-import", "0"]  # before: not imported (None) until a ping


def test_stop_prober_from_a_thread_still_waits_for_the_check_in_flight(monkeypatch):
    """``stop_prober`` (for callers off an event loop; the HTTP app and ``rated mcp`` use ``astop_prober``)
    keeps its contract: the thread has ended when it returns, or it warns; only ``astop_prober`` leaves a
    check in flight behind."""
    started, release = threading.Event(), threading.Event()

    def hangs(tool):
        started.set()
        release.wait(GENEROUS)
        return True

    monkeypatch.setattr(probes, "default_check", lambda timeout: hangs)
    tools = [Tool(id="t0", name="tool_0", endpoint="http://127.0.0.1:9/x")]
    with Retriever.from_catalog(tools, encoder=HashEncoder(32)) as r:
        r.feedback("t0", "tool_error")
        settings = Settings(probe_every=0.01, probe_timeout=GENEROUS)
        prober = probes.start_prober(settings, lambda: r)
        assert started.wait(GENEROUS)
        threading.Timer(0.05, release.set).start()
        probes.stop_prober(prober, settings)
        assert release.is_set() and not prober._thread.is_alive()
