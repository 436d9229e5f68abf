"""``rated serve --workers 2`` as real processes, when workers are replaced: a worker killed while the store
is out of reach has replacements that fail to start until it is back, and the service serves on
(uvicorn stopped it at the first failure); every worker that exited has its metrics files merged, so the
folder does not grow with each replacement, and /metrics still counts what the dead workers served."""

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

import pytest

pytest.importorskip("uvicorn")

import httpx  # noqa: E402
from prometheus_client.multiprocess import MultiProcessCollector  # noqa: E402

from rated import Tool  # noqa: E402
from rated.encode.testing import HashEncoder  # noqa: E402
from rated.retriever import Retriever  # noqa: E402

TOOLS = [Tool(id=f"t{i}", name=f"tool_{i}", description=f"Send email message number {i}") for i in range(6)]
SLOW = 90  # seconds for what takes a few: interpreters starting on two shared cores


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _served(metrics_dir: str) -> dict[str, float]:
    """Retrieves counted in each file of the folder, by the part of its name after the kind (a worker's
    pid, or ``retired``)."""
    out = {}
    for path in glob.glob(os.path.join(metrics_dir, "counter_*.db")):
        out[Path(path).stem.split("_", 1)[1]] = sum(
            s.value
            for m in MultiProcessCollector.merge([path])
            for s in m.samples
            if s.name == "rated_http_requests_total" and s.labels.get("route") == "/retrieve"
        )
    return out


def _metric(text: str, line_start: str) -> float:
    return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines() if line.startswith(line_start))


def _get(url: str, **kw) -> httpx.Response:
    with httpx.Client(timeout=30) as client:  # its own connection: either worker may take it
        return client.request(kw.pop("method", "GET"), url, **kw)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.mark.slow  # ~20 s: five interpreters start, one back-off wait
def test_replaced_workers_keep_their_counts_and_a_passing_store_error_does_not_stop_the_service(tmp_path):
    db = tmp_path / "ops.db"
    Retriever.from_catalog(TOOLS, db=db, encoder=HashEncoder(64)).close()
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    port, base = _free_port(), None
    env = {k: v for k, v in os.environ.items() if k not in ("RATED_API_KEY", "PROMETHEUS_MULTIPROC_DIR")}
    env.update(TMPDIR=str(tmp), RATED_ENCODER_THREADS="1", RATED_BUSY_TIMEOUT="0.5")
    cmd = [sys.executable, "-m", "rated.cli", "serve", "--db", str(db), "--port", str(port), "--workers", "2"]
    proc = subprocess.Popen(
        cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env, start_new_session=True
    )
    log: list[str] = []
    reader = threading.Thread(target=lambda: log.extend(iter(proc.stderr.readline, "")), daemon=True)
    reader.start()
    base = f"http://127.0.0.1:{port}"

    def until(done: Callable[[], bool], what: str) -> None:
        deadline = time.monotonic() + SLOW
        while not done():
            assert proc.poll() is None, f"rated serve exited ({what}):\n" + "".join(log)
            assert time.monotonic() < deadline, f"{what}:\n" + "".join(log)
            time.sleep(0.1)

    def started() -> int:
        return sum("Application startup complete" in line for line in log)

    away = tmp_path / "elsewhere.db"
    try:
        until(lambda: started() == 2, "two workers start")
        (metrics_dir,) = glob.glob(str(tmp / "rated-metrics-*"))
        sent = 0
        while sent < 400 and max(_served(metrics_dir).values()) == 0:
            for i in range(10):
                reply = _get(f"{base}/retrieve", method="POST", json={"query": f"send email {i}"})
                assert reply.status_code == 200
            sent += 10
        served = _served(metrics_dir)
        victim = int(max(served, key=served.get))
        assert served[str(victim)] > 0 and len(served) == 2

        # the database out of reach for a while (a volume remounted, say; the survivor keeps its open
        # file), and a worker dies: its replacements cannot open the store until it is back
        os.rename(db, away)
        os.kill(victim, signal.SIGKILL)
        until(lambda: any("failed to start (1 of 6 in a row" in line for line in log), "a retry")
        os.rename(away, db)
        until(lambda: started() == 3, "the replacement starts once the store is back")

        live = {key for key in _served(metrics_dir) if key != "retired"}
        assert str(victim) not in live and len(live) == 2 and all(_alive(int(pid)) for pid in live)
        assert _metric(_get(f"{base}/metrics").text, 'rated_http_requests_total{route="/retrieve"') == sent

        proc.send_signal(signal.SIGHUP)  # both replaced, one after the other
        until(lambda: started() == 5 and sum("Finished server process" in x for x in log) == 2, "a reload")
        until(lambda: not (live & set(_served(metrics_dir))), "the old workers' files merged")
        owners = {Path(p).stem.split("_", 1)[1] for p in glob.glob(os.path.join(metrics_dir, "*.db"))}
        assert len(owners) == 3 and "retired" in owners  # files of the two running workers, and the merged
        assert all(_alive(int(pid)) for pid in owners - {"retired"})  # four exited: none of theirs is left
        assert _metric(_get(f"{base}/metrics").text, 'rated_http_requests_total{route="/retrieve"') == sent

        proc.send_signal(signal.SIGTERM)
        assert proc.wait(SLOW) == 0, "".join(log)
    finally:
        if away.exists():
            os.rename(away, db)
        if proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)  # the group this test started: parent and workers
            proc.wait(10)
        reader.join(10)
    assert not os.path.exists(metrics_dir)
