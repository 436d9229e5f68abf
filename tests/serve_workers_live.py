"""``rated serve --workers 2`` run as real processes, for the live worker tests (tests/cli/
test_serve_workers_live.py, tests/service/test_service_workers_live_ops.py): their catalog, the server in a
session of its own with its log read as it comes, and readers of its metrics files and of /metrics. The
tests folder is not a package: imported as ``from serve_workers_live import ...``, after
``pytest.importorskip("uvicorn")`` (this module needs httpx and prometheus_client, which come with it)."""

from __future__ import annotations

import contextlib
import glob
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Self

import httpx
from prometheus_client.multiprocess import MultiProcessCollector

from rated import Tool

TOOLS = [Tool(id=f"t{i}", name=f"tool_{i}", description=f"Send email message number {i}") for i in range(6)]
SLOW = 90  # seconds for what takes a few: interpreters starting on two shared cores
STARTED = "Application startup complete"  # what uvicorn logs as each worker is ready


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class TwoWorkers:
    """``rated serve --workers 2`` on a free port, in a session of its own (its workers in its process
    group), its metrics folder under ``tmp``, ``env`` added to its environment; ``log`` collects its
    stderr as it comes. Leaving the ``with`` block kills whatever is left of the group."""

    def __init__(self, db: Path, tmp: Path, **env: str) -> None:
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        environ = {
            k: v for k, v in os.environ.items() if k not in ("RATED_API_KEY", "PROMETHEUS_MULTIPROC_DIR")
        }
        environ.update(TMPDIR=str(tmp), RATED_ENCODER_THREADS="1", **env)
        cmd = [sys.executable, "-m", "rated.cli", "serve", "--db", str(db), "--port", str(self.port)]
        self.proc = subprocess.Popen(
            [*cmd, "--workers", "2"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            env=environ,
            start_new_session=True,
        )
        self.log: list[str] = []
        stderr = self.proc.stderr
        assert stderr is not None
        self.reader = threading.Thread(target=lambda: self.log.extend(iter(stderr.readline, "")), daemon=True)
        self.reader.start()

    def text(self) -> str:
        return "".join(self.log)

    def started(self) -> int:
        """Workers started so far (replacements included)."""
        return sum(STARTED in line for line in self.log)

    def until(self, done: Callable[[], bool], what: str) -> None:
        """Wait until ``done()``, failing with the log if the server exits or ``SLOW`` seconds pass."""
        deadline = time.monotonic() + SLOW
        while not done():
            assert self.proc.poll() is None, f"rated serve exited ({what}):\n{self.text()}"
            assert time.monotonic() < deadline, f"{what}:\n{self.text()}"
            time.sleep(0.1)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGKILL)  # the group this test started: parent and workers
        if self.proc.poll() is None:
            self.proc.wait(10)
        self.reader.join(10)


def metrics_folder(tmp: Path) -> str:
    """The server's private metrics folder under ``tmp`` (its only one)."""
    (folder,) = glob.glob(str(tmp / "rated-metrics-*"))
    return folder


def served(metrics_dir: str) -> dict[str, float]:
    """Retrieves counted in each counter file of the folder, by the part of its name after the kind: a
    worker's pid, or ``retired`` (exited workers' counts, merged): the per-process view /metrics sums."""
    out = {}
    for path in glob.glob(os.path.join(metrics_dir, "counter_*.db")):
        out[Path(path).stem.split("_", 1)[1]] = sum(
            s.value
            for m in MultiProcessCollector.merge([path])
            for s in m.samples
            if s.name == "rated_http_requests_total" and s.labels.get("route") == "/retrieve"
        )
    return out


def metric(text: str, line_start: str) -> float:
    """The sum of the samples of a /metrics ``text`` whose lines start with ``line_start``."""
    return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines() if line.startswith(line_start))


def get(url: str, **kw) -> httpx.Response:
    """One request on its own connection: the kernel may hand it to either worker."""
    with httpx.Client(timeout=30) as client:
        return client.request(kw.pop("method", "GET"), url, **kw)


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True
