"""``rated serve --workers 2`` as real processes: requests spread over both workers, every feedback in the
one store and seen by both, /metrics summing the workers, and a clean stop on SIGTERM."""

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
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

pytest.importorskip("uvicorn")

import httpx  # noqa: E402
from prometheus_client.multiprocess import MultiProcessCollector  # noqa: E402

from rated import Tool  # noqa: E402
from rated.encode.testing import HashEncoder  # noqa: E402
from rated.retriever import Retriever  # noqa: E402
from rated.service.workers import _remove_stale_metrics  # noqa: E402
from rated.store.open import open_store  # noqa: E402

TOOLS = [Tool(id=f"t{i}", name=f"tool_{i}", description=f"Send email message number {i}") for i in range(6)]
FEEDBACK = 12
STARTUP_S = 60  # three interpreters importing on a busy machine


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _served_by_worker(metrics_dir: str) -> dict[int, float]:
    """Requests each worker counted, read from its own file (the per-process view /metrics sums)."""
    served = {}
    for path in glob.glob(os.path.join(metrics_dir, "counter_*.db")):
        pid = int(Path(path).stem.split("_")[1])
        served[pid] = sum(
            s.value
            for m in MultiProcessCollector.merge([path])
            if m.name == "rated_http_requests"
            for s in m.samples
            if s.name == "rated_http_requests_total"
        )
    return served


def _metric(text: str, line_start: str) -> float:
    return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines() if line.startswith(line_start))


def _serve_two_workers(
    db: Path, tmp: Path, port: int
) -> tuple[subprocess.Popen, list[str], threading.Thread]:
    """``rated serve --workers 2`` in a session of its own, its metrics folder under ``tmp``; its log is
    read into the list as it comes."""
    env = {k: v for k, v in os.environ.items() if k not in ("RATED_API_KEY", "PROMETHEUS_MULTIPROC_DIR")}
    env.update(TMPDIR=str(tmp), RATED_ENCODER_THREADS="1")
    cmd = [sys.executable, "-m", "rated.cli", "serve", "--db", str(db), "--port", str(port), "--workers", "2"]
    proc = subprocess.Popen(
        cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env, start_new_session=True
    )
    log: list[str] = []
    reader = threading.Thread(target=lambda: log.extend(iter(proc.stderr.readline, "")), daemon=True)
    reader.start()
    return proc, log, reader


def _wait_started(proc: subprocess.Popen, log: list[str]) -> None:
    deadline = time.monotonic() + STARTUP_S
    while sum("Application startup complete" in line for line in log) < 2:
        assert proc.poll() is None, "".join(log)
        assert time.monotonic() < deadline, "".join(log)
        time.sleep(0.1)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def _get(url: str, **kw) -> httpx.Response:
    """One request on its own connection: the kernel may hand it to either worker."""
    with httpx.Client(timeout=20) as client:
        return client.request(kw.pop("method", "GET"), url, **kw)


@pytest.mark.slow  # ~8 s: three interpreters start (the parent and two workers)
def test_two_workers_share_the_store_sum_their_metrics_and_stop_cleanly(tmp_path):
    db = tmp_path / "live.db"
    Retriever.from_catalog(TOOLS, db=db, encoder=HashEncoder(64)).close()
    tmp = tmp_path / "tmp"  # where the server makes its private metrics folder
    tmp.mkdir()
    port = _free_port()
    proc, log, reader = _serve_two_workers(db, tmp, port)
    base = f"http://127.0.0.1:{port}"
    try:
        _wait_started(proc, log)
        (metrics_dir,) = glob.glob(str(tmp / "rated-metrics-*"))
        workers = set(_served_by_worker(metrics_dir))
        assert len(workers) == 2 and proc.pid not in workers

        # retrieves on fresh connections, concurrently, until both workers have answered some
        sent = 0
        with ThreadPoolExecutor(4) as pool:
            while sent < 400 and min(_served_by_worker(metrics_dir).values()) == 0:
                answers = pool.map(
                    lambda i: _get(f"{base}/retrieve", method="POST", json={"query": f"send email {i}"}),
                    range(sent, sent + 20),
                )
                assert all(r.status_code == 200 and r.json()["hits"] for r in answers)
                sent += 20
            served = _served_by_worker(metrics_dir)
            assert min(served.values()) > 0, served

            outcome = {"tool_id": "t1", "outcome": "tool_error", "query": "send email"}
            replies = list(
                pool.map(lambda _: _get(f"{base}/feedback", method="POST", json=outcome), range(FEEDBACK))
            )
            assert all(r.status_code == 200 and r.json()["recorded"] for r in replies)
            # each worker follows the other's feedback: every answer counts all of it
            seen = list(pool.map(lambda _: _get(f"{base}/tools/t1").json()["failures"], range(8)))
        assert seen == [FEEDBACK] * 8

        metrics = _get(f"{base}/metrics").text  # whichever worker answers: the sum of both
        assert _metric(metrics, 'rated_http_requests_total{route="/retrieve",status="200"}') == sent
        assert _metric(metrics, 'rated_http_requests_total{route="/feedback",status="200"}') == FEEDBACK
        assert _metric(metrics, 'rated_http_requests_total{route="/tools/{tool_id:path}"') == 8
        assert _metric(metrics, 'rated_feedback_total{outcome="tool_error"}') == FEEDBACK
        assert _metric(metrics, "rated_tools ") == len(TOOLS)  # read once, not once per worker
        # counters and histograms only: no live gauge file a dead worker leaves behind (mark_process_dead)
        kinds = {Path(p).name.split("_")[0] for p in glob.glob(os.path.join(metrics_dir, "*.db"))}
        assert kinds == {"counter", "histogram"}, kinds

        proc.send_signal(signal.SIGTERM)
        assert proc.wait(30) == 0, "".join(log)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)  # the group this test started: parent and workers
            proc.wait(10)
        reader.join(10)
    assert not os.path.exists(metrics_dir)
    assert not any(_alive(pid) for pid in workers)  # no worker outlives the parent
    store = open_store(str(db), create=False)
    try:
        logged = store.outcomes(None, None)
    finally:
        store.close()
    assert len(logged) == FEEDBACK


@pytest.mark.slow  # ~8 s
def test_workers_stop_when_their_parent_is_killed_and_the_next_start_removes_its_metrics(tmp_path):
    """SIGKILL (or the OOM killer) gives the parent no chance to stop its workers: uvicorn's went on
    serving the port unsupervised (nobody replaced one that died; a new rated serve found the port taken)
    and kept the metrics folder, which nothing removed."""
    db = tmp_path / "live.db"
    Retriever.from_catalog(TOOLS, db=db, encoder=HashEncoder(64)).close()
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    port = _free_port()
    proc, log, reader = _serve_two_workers(db, tmp, port)
    try:
        _wait_started(proc, log)
        (metrics_dir,) = glob.glob(str(tmp / "rated-metrics-*"))
        workers = set(_served_by_worker(metrics_dir))
        assert len(workers) == 2
        proc.kill()
        proc.wait(10)
        deadline = time.monotonic() + 30
        while any(_alive(pid) for pid in workers) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not any(_alive(pid) for pid in workers), "".join(log)  # they served on before
        assert sum("parent process" in line and "is gone" in line for line in log) == 2, "".join(log)
        socket.create_server(("127.0.0.1", port)).close()  # the port is free again
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)  # whatever is left of the group this test started
        reader.join(10)
    assert os.path.isdir(metrics_dir)  # nobody could remove it then
    _remove_stale_metrics(str(tmp))  # as the next rated serve --workers does first
    assert not os.listdir(tmp)
