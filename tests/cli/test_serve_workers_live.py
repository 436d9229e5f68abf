"""``rated serve --workers 2`` as real processes: requests spread over both workers, every feedback in the
one store and seen by both, /metrics summing the workers, and a clean stop on SIGTERM."""

from __future__ import annotations

import os
import signal
import socket
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

pytest.importorskip("uvicorn")

from rated.encode.testing import HashEncoder  # noqa: E402
from rated.retriever import Retriever  # noqa: E402
from rated.service.workers import _remove_stale_metrics  # noqa: E402
from rated.store.open import open_store  # noqa: E402
from serve_workers_live import TOOLS, TwoWorkers, alive, get, metric, metrics_folder, served  # noqa: E402

FEEDBACK = 12


def _workers(metrics_dir: str) -> set[int]:
    """The pids of the workers with a counter file in the folder."""
    return {int(owner) for owner in served(metrics_dir) if owner != "retired"}


@pytest.mark.slow  # ~8 s: three interpreters start (the parent and two workers)
def test_two_workers_share_the_store_sum_their_metrics_and_stop_cleanly(tmp_path):
    db = tmp_path / "live.db"
    Retriever.from_catalog(TOOLS, db=db, encoder=HashEncoder(64)).close()
    tmp = tmp_path / "tmp"  # where the server makes its private metrics folder
    tmp.mkdir()
    with TwoWorkers(db, tmp) as server:
        base = server.base
        server.until(lambda: server.started() == 2, "two workers start")
        metrics_dir = metrics_folder(tmp)
        workers = _workers(metrics_dir)
        assert len(workers) == 2 and server.proc.pid not in workers

        # retrieves on fresh connections, concurrently, until both workers have answered some
        sent = 0
        with ThreadPoolExecutor(4) as pool:
            while sent < 400 and min(served(metrics_dir).values()) == 0:
                answers = pool.map(
                    lambda i: get(f"{base}/retrieve", method="POST", json={"query": f"send email {i}"}),
                    range(sent, sent + 20),
                )
                assert all(r.status_code == 200 and r.json()["hits"] for r in answers)
                sent += 20
            counts = served(metrics_dir)
            assert min(counts.values()) > 0, counts

            outcome = {"tool_id": "t1", "outcome": "tool_error", "query": "send email"}
            replies = list(
                pool.map(lambda _: get(f"{base}/feedback", method="POST", json=outcome), range(FEEDBACK))
            )
            assert all(r.status_code == 200 and r.json()["recorded"] for r in replies)
            # each worker follows the other's feedback: every answer counts all of it
            seen = list(pool.map(lambda _: get(f"{base}/tools/t1").json()["failures"], range(8)))
        assert seen == [FEEDBACK] * 8

        metrics = get(f"{base}/metrics").text  # whichever worker answers: the sum of both
        assert metric(metrics, 'rated_http_requests_total{route="/retrieve",status="200"}') == sent
        assert metric(metrics, 'rated_http_requests_total{route="/feedback",status="200"}') == FEEDBACK
        assert metric(metrics, 'rated_http_requests_total{route="/tools/{tool_id:path}"') == 8
        assert metric(metrics, 'rated_feedback_total{outcome="tool_error"}') == FEEDBACK
        assert metric(metrics, "rated_tools ") == len(TOOLS)  # read once, not once per worker
        # counters and histograms only: no live gauge file a dead worker leaves behind (mark_process_dead)
        kinds = {Path(p).name.split("_")[0] for p in os.listdir(metrics_dir) if p.endswith(".db")}
        assert kinds == {"counter", "histogram"}, kinds

        server.proc.send_signal(signal.SIGTERM)
        assert server.proc.wait(30) == 0, server.text()
    assert not os.path.exists(metrics_dir)
    assert not any(alive(pid) for pid in workers)  # no worker outlives the parent
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
    with TwoWorkers(db, tmp) as server:
        server.until(lambda: server.started() == 2, "two workers start")
        metrics_dir = metrics_folder(tmp)
        workers = _workers(metrics_dir)
        assert len(workers) == 2
        server.proc.kill()
        server.proc.wait(10)
        deadline = time.monotonic() + 30
        while any(alive(pid) for pid in workers) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not any(alive(pid) for pid in workers), server.text()  # they served on before
        assert sum("parent process" in line and "is gone" in line for line in server.log) == 2, server.text()
        socket.create_server(("127.0.0.1", server.port)).close()  # the port is free again
    assert os.path.isdir(metrics_dir)  # nobody could remove it then
    _remove_stale_metrics(str(tmp))  # as the next rated serve --workers does first
    assert not os.listdir(tmp)
