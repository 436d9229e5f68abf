"""The mcp SDK's client is never imported on an event loop: the import takes half a second or more on a busy
host, and ``aping`` made it on the loop that awaited it (a server's loop stalled that long at the first
ping). Fresh interpreters: what a process that has not imported the SDK yet does."""

from __future__ import annotations

import socket
import subprocess
import sys
import textwrap

import pytest

pytest.importorskip("mcp")

SPY = """
import sys, threading

importers = {}

class Spy:  # records the thread that imports each module it is asked about, before the import happens
    def find_spec(self, name, path=None, target=None):
        importers.setdefault(name, threading.current_thread())
        return None

sys.meta_path.insert(0, Spy())
"""


def run(script: str) -> list[str]:
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(SPY) + textwrap.dedent(script)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.split()


def closed_port() -> int:
    with socket.socket() as s:  # a port nothing listens on: the ping fails at once, after the import
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_aping_imports_the_sdk_off_the_event_loop_that_awaits_it():
    out = run(
        f"""
        import anyio
        from rated.mcp_ping import aping

        async def main():
            outcome = await aping("http://127.0.0.1:{closed_port()}/mcp", 30)
            loop = threading.current_thread()
            print(outcome.kind.value, importers["mcp.client"] is loop, "mcp.client" in sys.modules)

        anyio.run(main)
        """
    )
    assert out == ["tool_error", "False", "True"]  # imported, and not by the loop's thread
