"""The metrics files of ``rated serve --workers`` workers that have exited (``retire_process``): their live
gauges' files removed (prometheus_client's ``mark_process_dead``) and their counts merged into one file
per kind, so that a service whose workers are replaced keeps a few files instead of two for every worker
it ever ran, and ``/metrics`` sums the same. Worker processes are stand-ins: interpreters that count into
the folder and exit."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("prometheus_client")

from prometheus_client import generate_latest  # noqa: E402

import rated.service.metrics as metrics  # noqa: E402
from rated.service.metrics import MERGE_LOCK, MULTIPROC_DIR_ENV, retire_process  # noqa: E402

WORKER = """
import os
from prometheus_client import Gauge
from rated.service.metrics import Metrics

m = Metrics(multiprocess=True)
m.requests.labels("/retrieve", "200").inc({n})
m.requests.labels("/feedback", "{status}").inc()
for seconds in (0.0004, 0.004, 0.3):
    m.latency.labels("/retrieve").observe(seconds)
m.feedback.labels("tool_error").inc({n})
Gauge("rated_test_live", "a live gauge", multiprocess_mode="livesum", registry=None).set(1)
print(os.getpid())
"""


def worker(folder: Path, n: int, status: str = "200") -> int:
    """Run a stand-in worker that counts into ``folder`` and exits; its pid."""
    env = {**os.environ, MULTIPROC_DIR_ENV: str(folder)}
    script = textwrap.dedent(WORKER.format(n=n, status=status))
    done = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return int(done.stdout)


def scrape(folder: Path, monkeypatch) -> str:
    """What /metrics shows of the folder: the summed registry a worker exposes (the live gauge left out:
    prometheus_client drops a dead process's live gauges by design)."""
    monkeypatch.setenv(MULTIPROC_DIR_ENV, str(folder))
    text = generate_latest(metrics._summed_registry()).decode()
    lines = sorted(line for line in text.splitlines() if "rated_test_live" not in line)
    return "\n".join(lines)  # sorted: the order of the families follows the order the files are listed in


def files(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


def test_an_exited_workers_counts_are_merged_and_its_files_removed(tmp_path, monkeypatch):
    a, b = worker(tmp_path, 3), worker(tmp_path, 4, status="404")
    before = scrape(tmp_path, monkeypatch)
    assert 'rated_http_requests_total{route="/retrieve",status="200"} 7.0' in before
    assert f"gauge_livesum_{a}.db" in files(tmp_path)
    assert retire_process(str(tmp_path), a)
    assert scrape(tmp_path, monkeypatch) == before  # same sums, buckets and all
    assert retire_process(str(tmp_path), b)
    assert scrape(tmp_path, monkeypatch) == before
    assert files(tmp_path) == ["counter_retired.db", "histogram_retired.db", MERGE_LOCK]
    c = worker(tmp_path, 5)  # a worker alive next to the retired ones: summed with them
    after = scrape(tmp_path, monkeypatch)
    assert 'rated_http_requests_total{route="/retrieve",status="200"} 12.0' in after
    assert 'rated_http_request_seconds_count{route="/retrieve"} 9.0' in after
    assert 'rated_http_requests_total{route="/feedback",status="404"} 1.0' in after
    assert retire_process(str(tmp_path), c) and scrape(tmp_path, monkeypatch) == after
    assert len(files(tmp_path)) == 3  # however many workers came and went


def test_a_pid_with_no_files_and_a_second_retirement_change_nothing(tmp_path, monkeypatch):
    a = worker(tmp_path, 2)
    assert retire_process(str(tmp_path), a)
    before, listed = scrape(tmp_path, monkeypatch), files(tmp_path)
    assert retire_process(str(tmp_path), a) and retire_process(str(tmp_path), 999_999)
    assert scrape(tmp_path, monkeypatch) == before and files(tmp_path) == listed


def test_no_merge_happens_while_a_scrape_reads_the_folder(tmp_path, monkeypatch):
    """A scrape listing the folder, then reading a file the merge had removed meanwhile, failed; or read
    a dead worker's counts twice (its file and the merged one): a counter going up then back down, which
    Prometheus takes for a reset."""
    pytest.importorskip("fcntl")
    a = worker(tmp_path, 2)
    monkeypatch.setattr(metrics, "_MERGE_WAIT_S", 0.0)
    with metrics._locked(str(tmp_path), shared=True):  # a scrape in progress
        assert retire_process(str(tmp_path), a) is False  # it waited, then left the files for now
        assert f"counter_{a}.db" in files(tmp_path) and f"gauge_livesum_{a}.db" not in files(tmp_path)
    assert retire_process(str(tmp_path), a) and f"counter_{a}.db" not in files(tmp_path)


def test_a_skipped_merge_loses_no_count_every_scrape_still_sums_the_files_it_left(tmp_path, monkeypatch):
    """Scrapes holding the folder past ``_MERGE_WAIT_S`` only leave a dead worker's files unmerged: its
    counts stay in every sum (neither lost nor late); a later retirement of another worker merges that one
    alone, and retiring the skipped pid again merges it."""
    pytest.importorskip("fcntl")
    a, b = worker(tmp_path, 2), worker(tmp_path, 3, status="404")
    before = scrape(tmp_path, monkeypatch)
    monkeypatch.setattr(metrics, "_MERGE_WAIT_S", 0.0)
    with metrics._locked(str(tmp_path), shared=True):  # a scrape in progress
        assert retire_process(str(tmp_path), a) is False
        assert scrape(tmp_path, monkeypatch) == before  # a scrape meanwhile: a's counts still summed
    assert scrape(tmp_path, monkeypatch) == before
    assert retire_process(str(tmp_path), b)  # b merged; a's files left as they were
    assert {f"counter_{a}.db", f"histogram_{a}.db", "counter_retired.db"} <= set(files(tmp_path))
    assert scrape(tmp_path, monkeypatch) == before
    assert retire_process(str(tmp_path), a)
    assert files(tmp_path) == ["counter_retired.db", "histogram_retired.db", MERGE_LOCK]
    assert scrape(tmp_path, monkeypatch) == before
