"""``rated serve --workers``'s supervisor (``workers._Supervision`` over uvicorn's) with stand-in worker
processes: a replacement that fails to start is tried again with back-off instead of stopping the
service, a worker asked to stop is waited for only as long as it runs (within a bound), and every worker
that exits has its metrics files retired. (Real processes: test_service_workers_live_ops.py.)"""

from __future__ import annotations

import itertools
import logging
import socket
import threading
from types import SimpleNamespace

import pytest

pytest.importorskip("uvicorn")

import uvicorn.supervisors  # noqa: E402
from uvicorn.config import STARTUP_FAILURE  # noqa: E402

import rated.service.workers as workers  # noqa: E402
from rated.errors import RatedError  # noqa: E402
from rated.service import Settings  # noqa: E402

_pids = itertools.count(1000)


class Worker:
    """A worker process as the supervisor sees one (uvicorn's ``Process``). ``fate``: ``serves`` (starts,
    stops on SIGTERM), ``fails`` (exits with STARTUP_FAILURE as it starts: the store unavailable),
    ``stuck`` (ignores SIGTERM), ``slow`` (ready after 20 s)."""

    def __init__(self, fate: str) -> None:
        self.pid, self.fate, self.exitcode, self.signals = next(_pids), fate, None, []
        self.process = self  # what stands for the multiprocessing.Process inside

    def start(self) -> None:
        if self.fate == "fails":
            self.exitcode = STARTUP_FAILURE

    def is_alive(self, timeout: float | None = None) -> bool:
        return self.exitcode is None

    def wait_until_ready(self, timeout: float, should_exit: threading.Event | None = None) -> bool:
        if self.fate == "slow" and timeout < 20:  # takes 20 s to open its index on a busy host
            self.exitcode = -9  # killed as not ready
        return self.exitcode is None

    def terminate(self) -> None:
        self.signals.append("TERM")
        if self.exitcode is None and self.fate != "stuck":
            self.exitcode = 0

    def kill(self) -> None:
        self.signals.append("KILL")
        if self.exitcode is None:
            self.exitcode = -9

    def join(self, timeout: float | None = None) -> None:
        pass


class Base:
    """What _Supervision uses of uvicorn's Multiprocess, without its signal handlers and loop."""

    def __init__(self, config, sockets):
        self.config, self.sockets, self.processes = config, sockets, []
        self.processes_num = config.workers
        self.should_exit = threading.Event()


class Supervisor(workers._Supervision, Base):
    """Spawns ``Worker``s whose fates come from ``fates`` (then ``serves``); time is ``self.t``."""

    def __init__(self, fates: list[str], workers_n: int = 2) -> None:
        config = SimpleNamespace(workers=workers_n, timeout_worker_healthcheck=5)
        super().__init__(config, [], metrics_dir="/unused")
        self.fates, self.spawned, self.t = list(fates), [], 0.0
        self._now = lambda: self.t

    def _spawn(self) -> Worker:
        worker = Worker(self.fates.pop(0) if self.fates else "serves")
        worker.start()
        self.spawned.append(worker)
        return worker


@pytest.fixture(autouse=True)
def retired(monkeypatch) -> list[int]:
    """The pids whose metrics files were retired, in order."""
    seen: list[int] = []
    monkeypatch.setattr(workers, "retire_process", lambda path, pid: seen.append(pid) or True)
    return seen


def test_a_replacement_failing_to_start_is_tried_again_after_a_growing_wait(retired, caplog):
    """uvicorn stopped the whole service at the first replacement that failed to start: a store that
    was unavailable for a second (Redis restarting) took every worker down."""
    sup = Supervisor(["serves", "serves", "fails", "fails", "serves"])
    sup.init_processes()
    first, second = sup.processes
    first.exitcode = -9  # died (the OOM killer, say)
    with caplog.at_level(logging.INFO, logger="uvicorn.error"):
        sup.keep_subprocess_alive()  # replaced: the replacement fails to start
        sup.keep_subprocess_alive()  # seen: next try in 1 s
        assert not sup.should_exit.is_set() and sup._retry_at == {0: 1.0}
        sup.t = 0.9
        sup.keep_subprocess_alive()
        assert len(sup.spawned) == 3  # not yet
        sup.t = 1.0
        sup.keep_subprocess_alive()  # the second try fails too
        sup.keep_subprocess_alive()
        assert sup._retry_at == {0: 3.0}  # twice as long
        sup.t = 3.0
        sup.keep_subprocess_alive()  # the third one starts
        sup.keep_subprocess_alive()
    assert not sup.should_exit.is_set() and sup.gave_up is None
    assert sup.processes == [sup.spawned[4], second] and sup.processes[0].exitcode is None
    assert retired == [first.pid, sup.spawned[2].pid, sup.spawned[3].pid]  # each exited worker, once
    tries = [r.getMessage() for r in caplog.records if "failed to start" in r.getMessage()]
    assert len(tries) == 2 and "1 of 6 in a row" in tries[0] and "next try in 2 s" in tries[1]


def test_the_service_stops_after_repeated_failures_and_says_why(retired):
    sup = Supervisor(["serves", "serves"] + ["fails"] * workers._TRIES)
    sup.init_processes()
    sup.processes[1].exitcode = -9
    for _ in range(3 * workers._TRIES):
        if sup.should_exit.is_set():
            break
        sup.keep_subprocess_alive()
        sup.t += workers._RETRY_MAX_S
    assert sup.should_exit.is_set()
    assert sup.gave_up is not None and f"failed to start {workers._TRIES} times in a row" in sup.gave_up
    assert len(sup.spawned) == 2 + workers._TRIES


def test_a_failure_in_a_row_counts_from_the_last_worker_that_started(retired):
    sup = Supervisor(["serves", "fails", "serves", "fails"], workers_n=1)
    sup.init_processes()
    sup.processes[0].exitcode = -9
    sup.keep_subprocess_alive()  # replaced: fails
    sup.keep_subprocess_alive()
    sup.t = 10.0
    sup.keep_subprocess_alive()  # starts, serves a while
    sup.processes[0].exitcode = 1  # then dies
    sup.keep_subprocess_alive()  # replaced: fails
    sup.keep_subprocess_alive()
    assert sup._failures == {0: 1} and sup._retry_at == {0: 11.0}  # a first failure again: 1 s


def test_a_worker_of_the_first_start_that_fails_still_stops_the_service_at_once(retired):
    sup = Supervisor(["serves", "fails"])
    sup.init_processes()
    sup.keep_subprocess_alive()
    assert sup.should_exit.is_set() and sup.gave_up is None  # serve_workers names the worker
    assert len(sup.spawned) == 2


def test_a_restart_waits_for_each_old_worker_only_until_it_exits_and_kills_one_that_does_not(
    retired, monkeypatch
):
    """uvicorn joined each old worker without a bound, handling no signal meanwhile."""
    monkeypatch.setattr(workers, "_STOP_S", 0.0)  # the bound: here, none
    sup = Supervisor(["serves", "stuck"])
    sup.init_processes()
    old = list(sup.processes)
    sup.restart_all()
    assert sup.processes == sup.spawned[2:] and all(w.exitcode is None for w in sup.processes)
    assert old[0].signals == ["TERM"] and old[1].signals == ["TERM", "KILL"]
    assert retired == [old[0].pid, old[1].pid]


def test_a_restart_waits_for_a_replacement_slower_to_start_than_the_health_check(retired):
    """uvicorn gave each replacement its health-check timeout (5 s) to be ready, then killed it and called
    the restart off: a worker that opens a large index on a busy host was never replaced by SIGHUP."""
    sup = Supervisor(["serves", "serves", "slow", "slow"])
    sup.init_processes()
    sup.restart_all()
    assert sup.processes == sup.spawned[2:] and all(w.exitcode is None for w in sup.processes)


def test_a_restart_also_fills_a_slot_waiting_to_try_again(retired):
    sup = Supervisor(["serves", "serves", "fails"])
    sup.init_processes()
    sup.processes[0].exitcode = -9
    sup.keep_subprocess_alive()
    sup.keep_subprocess_alive()
    assert 0 in sup._retry_at
    sup.restart_all()  # SIGHUP: a fresh worker everywhere
    assert sup._retry_at == {} and sup._failures == {}
    assert all(w.exitcode is None for w in sup.processes)


def test_fewer_workers_and_the_shutdown_stop_within_the_bound(retired, monkeypatch):
    monkeypatch.setattr(workers, "_STOP_S", 0.0)
    sup = Supervisor(["serves", "stuck", "serves"], workers_n=3)
    sup.init_processes()
    last = sup.processes[-1]
    sup.handle_ttou()  # SIGTTOU
    assert last.signals == ["TERM"] and retired == [last.pid] and len(sup.processes) == 2
    for worker in sup.processes:
        worker.terminate()  # what uvicorn's terminate_all does first
    sup.join_all()
    assert sup.processes[1].signals == ["TERM", "KILL"]
    assert retired == [last.pid]  # the folder goes with the parent: nothing to merge at the shutdown


def test_serve_workers_fails_with_the_reason_the_supervisor_gave_up(tmp_path, monkeypatch):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]

    class GivesUp:
        def __init__(self, config, sockets):
            self.processes = []

        def run(self):
            self.gave_up = "worker processes failed to start 6 times in a row (the last: 7); stopped"

    monkeypatch.setattr(uvicorn.supervisors, "Multiprocess", GivesUp)
    monkeypatch.setattr(workers.tempfile, "tempdir", str(tmp_path))
    monkeypatch.delenv("PROMETHEUS_MULTIPROC_DIR", raising=False)
    with pytest.raises(RatedError, match="failed to start 6 times in a row"):
        workers.serve_workers(Settings(db="x.db", port=port, workers=2))


def test_a_merge_scrapes_held_off_is_logged_as_still_summed_and_not_tried_again(monkeypatch, caplog):
    """The counts of a worker whose merge was skipped stay summed from its own files (see
    test_service_workers_metrics.py); the supervisor says so and leaves them: a later worker may reuse
    the pid and write to them."""
    tried: list[int] = []
    monkeypatch.setattr(workers, "retire_process", lambda path, pid: tried.append(pid) and False)
    sup = Supervisor(["serves", "serves"])
    sup.init_processes()
    first, second = sup.processes
    first.exitcode = -9
    with caplog.at_level(logging.WARNING, logger="uvicorn.error"):
        sup.keep_subprocess_alive()
    said = [r.getMessage() for r in caplog.records if "metrics files" in r.getMessage()]
    assert len(said) == 1 and f"worker [{first.pid}] are left unmerged (still summed)" in said[0]
    second.exitcode = -9
    sup.keep_subprocess_alive()
    sup._retire(first)
    assert tried == [first.pid, second.pid]  # each once: the skipped one is not merged later
