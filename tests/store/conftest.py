"""Store fixtures: one factory per backend, and a real redis-server on a free loopback port when installed."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class RedisServer:
    """A redis-server of one test's own, to kill, restart on the same port, stall or configure."""

    def __init__(self, binary: str, workdir: Path, *args: str) -> None:
        self.binary, self.workdir, self.args = binary, workdir, args
        self.port = _free_port()
        self.proc: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> RedisServer:
        cmd = [self.binary, "--port", str(self.port), "--bind", "127.0.0.1", "--dir", str(self.workdir)]
        cmd += ["--save", ""] + ([] if "--appendonly" in self.args else ["--appendonly", "no"]) + [*self.args]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 10
        while True:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.2).close()
                return self
            except OSError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    self.stop()
                    pytest.skip("redis-server did not start")
                time.sleep(0.02)

    def kill(self) -> None:
        """``kill -9``: no shutdown, no final save."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=10)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGCONT)  # a stalled server must be able to exit
            self.proc.terminate()
            self.proc.wait(timeout=10)

    def pause(self) -> None:
        assert self.proc is not None
        os.kill(self.proc.pid, signal.SIGSTOP)

    def resume(self) -> None:
        assert self.proc is not None
        os.kill(self.proc.pid, signal.SIGCONT)


def _binary() -> str:
    binary = shutil.which("redis-server")
    if binary is None:
        pytest.skip("redis-server is not installed (apt-get install redis-server)")
    pytest.importorskip("redis")
    return binary


@pytest.fixture(scope="session")
def redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A throwaway redis-server (no persistence) for this test session; skips when the binary is missing."""
    server = RedisServer(_binary(), tmp_path_factory.mktemp("redis")).start()
    try:
        yield server.url
    finally:
        server.stop()


@pytest.fixture
def redis_server(tmp_path: Path) -> Iterator[Callable[..., RedisServer]]:
    """Start servers of this test's own: ``redis_server(*extra_args)`` (stopped at the end)."""
    binary = _binary()
    started: list[RedisServer] = []

    def make(*args: str) -> RedisServer:
        server = RedisServer(binary, tmp_path, *args).start()
        started.append(server)
        return server

    yield make
    for server in started:
        server.stop()
