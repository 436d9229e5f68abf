"""``rated serve --workers 2`` as real processes, when workers are replaced: a worker killed while the store
is out of reach has replacements that fail to start until it is back, and the service serves on
(uvicorn stopped it at the first failure); every worker that exited has its metrics files merged, so the
folder does not grow with each replacement, and /metrics still counts what the dead workers served."""

from __future__ import annotations

import glob
import os
import signal
from pathlib import Path

import pytest

pytest.importorskip("uvicorn")

from rated.encode.testing import HashEncoder  # noqa: E402
from rated.retriever import Retriever  # noqa: E402
from serve_workers_live import (  # noqa: E402
    SLOW,
    TOOLS,
    TwoWorkers,
    alive,
    get,
    metric,
    metrics_folder,
    served,
)

RETRIEVES = 'rated_http_requests_total{route="/retrieve"'


@pytest.mark.slow  # ~20 s: five interpreters start, one back-off wait
def test_replaced_workers_keep_their_counts_and_a_passing_store_error_does_not_stop_the_service(tmp_path):
    db = tmp_path / "ops.db"
    Retriever.from_catalog(TOOLS, db=db, encoder=HashEncoder(64)).close()
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    away = tmp_path / "elsewhere.db"
    with TwoWorkers(db, tmp, RATED_BUSY_TIMEOUT="0.5") as server:
        log = server.log
        try:
            server.until(lambda: server.started() == 2, "two workers start")
            metrics_dir = metrics_folder(tmp)
            sent = 0
            while sent < 400 and max(served(metrics_dir).values()) == 0:
                for i in range(10):
                    reply = get(f"{server.base}/retrieve", method="POST", json={"query": f"send email {i}"})
                    assert reply.status_code == 200
                sent += 10
            counts = served(metrics_dir)
            victim = int(max(counts, key=counts.get))
            assert counts[str(victim)] > 0 and len(counts) == 2

            # the database out of reach for a while (a volume remounted, say; the survivor keeps its open
            # file), and a worker dies: its replacements cannot open the store until it is back
            os.rename(db, away)
            os.kill(victim, signal.SIGKILL)
            server.until(lambda: any("failed to start (1 of 6 in a row" in line for line in log), "a retry")
            os.rename(away, db)
            server.until(lambda: server.started() == 3, "the replacement starts once the store is back")

            live = {key for key in served(metrics_dir) if key != "retired"}
            assert str(victim) not in live and len(live) == 2 and all(alive(int(pid)) for pid in live)
            assert metric(get(f"{server.base}/metrics").text, RETRIEVES) == sent

            server.proc.send_signal(signal.SIGHUP)  # both replaced, one after the other
            server.until(
                lambda: server.started() == 5 and sum("Finished server process" in x for x in log) == 2,
                "a reload",
            )
            server.until(lambda: not (live & set(served(metrics_dir))), "the old workers' files merged")
            owners = {Path(p).stem.split("_", 1)[1] for p in glob.glob(os.path.join(metrics_dir, "*.db"))}
            assert len(owners) == 3 and "retired" in owners  # the two running workers' files, and the merged
            assert all(alive(int(pid)) for pid in owners - {"retired"})  # four exited: none of theirs left
            assert metric(get(f"{server.base}/metrics").text, RETRIEVES) == sent

            server.proc.send_signal(signal.SIGTERM)
            assert server.proc.wait(SLOW) == 0, server.text()
        finally:
            if away.exists():
                os.rename(away, db)
    assert not os.path.exists(metrics_dir)
