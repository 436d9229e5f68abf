"""``serve_workers``: ``rated serve --workers N``, N uvicorn worker processes sharing one listening socket.

Retrieval is CPU-bound (the query encoder), so one process uses one core; N processes use N. Each worker
is a fresh process (uvicorn spawns it) that builds its app with ``app_from_env``: the settings the parent
resolved reach it as ``RATED_*`` variables, and it opens the store itself at start-up (SQLite in WAL mode
and Redis take many processes; each worker follows the others' feedback and catalog changes as replicas
do, and reopens an index rebuilt under it on its own). Metrics are summed across workers through a
private prometheus_client multiprocess folder, which the parent creates and removes when it stops.

A parent killed outright (SIGKILL, the OOM killer) can neither stop its workers nor remove the folder:
each worker watches its parent and stops itself once it is gone (uvicorn's own workers would go on
serving the port unsupervised, as orphans), and the next ``serve_workers`` removes folders no running
parent holds (each parent keeps a lock on its own; the lock dies with the process).

The supervisor is uvicorn's, with ``_Supervision``: a worker that exited has its metrics files merged
(``retire_process``), a replacement failing to start is tried again with back-off, and a worker asked
to stop is waited for only as long as it takes to exit, within ``_STOP_S``.
"""

from __future__ import annotations

import contextlib
import glob
import logging
import os
import shutil
import signal
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from typing import Any

try:
    import fcntl
except ImportError:  # not POSIX: no advisory locks, so no folder can be told stale (none is removed)
    fcntl = None  # type: ignore[assignment]

from rated.errors import RatedError
from rated.service.metrics import MULTIPROC_DIR_ENV, retire_process
from rated.service.settings import Settings

__all__ = ["APP_FACTORY", "PARENT_PID_ENV", "serve_workers", "stop_with_parent", "worker_env"]

APP_FACTORY = "rated.service.app:app_from_env"
PARENT_PID_ENV = "_RATED_SERVE_PARENT_PID"  # private: set only for the workers serve_workers starts
_PREFIX = "rated-metrics-"
_LOCK = "parent.lock"  # held by the running parent; MultiProcessCollector reads *.db files only
_GRACE_S = 30.0  # a worker whose parent is gone and that has not stopped gracefully by then exits
_STOP_S = 30.0  # a worker sent SIGTERM (SIGHUP's restart, SIGTTOU, shutdown) and not gone by then is killed
#: how long SIGHUP waits for each replacement to be ready (uvicorn's: its health-check timeout, 5 s, which a
#: worker opening its index on a busy host overran: the restart was called off after the first worker)
_READY_S = 60.0
_RETRY_S = 1.0  # the wait before a failed replacement is tried again, doubled at each failure in a row ...
_RETRY_MAX_S = 30.0  # ... up to this
_TRIES = 6  # replacements of one worker failing to start in a row before the service stops

log = logging.getLogger("uvicorn.error")  # the log the workers' own lines go to


def serve_workers(settings: Settings, *, log_level: str = "info") -> int:
    """Serve ``settings.workers`` processes until SIGINT or SIGTERM (uvicorn's supervisor: a worker that
    dies is replaced, SIGHUP replaces them all); 0 once they stopped. ``RatedError`` if a worker of the
    first start failed to start (its log says why), or a replacement did ``_TRIES`` times in a row; both
    also stop the others. The store should have been checked by opening it first: a worker cannot report
    an error on one line."""
    import uvicorn
    from uvicorn.config import STARTUP_FAILURE
    from uvicorn.supervisors import Multiprocess

    config = uvicorn.Config(
        APP_FACTORY,
        factory=True,
        host=settings.host,
        port=settings.port,
        workers=settings.workers,
        log_level=log_level,
    )
    tmp = tempfile.gettempdir()
    _remove_stale_metrics(tmp)
    with (
        _metrics_folder(tmp) as metrics_dir,
        _environ(worker_env(settings, metrics_dir)),
        _signals_restored(),
    ):
        sock = config.bind_socket()

        class Supervisor(_Supervision, Multiprocess):
            """uvicorn's supervisor, with ``_Supervision``."""

        try:
            supervisor = Supervisor(config, [sock], metrics_dir=metrics_dir)
            supervisor.run()
        finally:
            sock.close()
    if supervisor.gave_up is not None:
        raise RatedError(supervisor.gave_up)
    failed = [str(p.pid) for p in supervisor.processes if p.exitcode == STARTUP_FAILURE]
    if failed:
        raise RatedError(f"worker process {', '.join(failed)} failed to start (see the log above); stopped")
    return 0


class _Supervision:
    """What ``serve_workers`` changes in uvicorn's supervisor (``Multiprocess``, after this class in the
    supervisor's bases; its ``run`` loop calls these methods):

    - a worker that has exited, whatever the way, is retired from the metrics folder (``retire_process``):
      its counts merged, its files removed; uvicorn left two files for every worker it ever ran. A merge
      that scrapes held off is not tried again, and loses nothing: the files stay, summed as before;
    - a replacement that fails to start (the store unavailable for a moment: Redis restarting, SQLite
      locked) is started again after ``_RETRY_S``, doubling up to ``_RETRY_MAX_S``, and the service stops
      only at the ``_TRIES``-th failure in a row (``gave_up`` says why); uvicorn stopped it at the first.
      A worker of the first start that fails still stops it at once: the parent checked the store just
      before, so the cause lasts;
    - a worker sent SIGTERM (SIGHUP replaces each once its successor is ready, SIGTTOU, the shutdown) is
      waited for as long as it takes to exit, and killed if it has not within ``_STOP_S``; uvicorn waited
      without a bound, handling no signal meanwhile. SIGHUP waits up to ``_READY_S`` for each successor.
    """

    def __init__(self, config: Any, sockets: list[Any], *, metrics_dir: str) -> None:
        super().__init__(config, sockets)  # type: ignore[call-arg]
        self.metrics_dir = metrics_dir
        self.gave_up: str | None = None
        self._first: set[int | None] = set()  # pids of the first start's workers
        self._failures: dict[int, int] = {}  # slot -> its replacements that failed to start, in a row
        self._retry_at: dict[int, float] = {}  # slot -> when its next replacement starts
        self._retired: set[int] = set()
        self._now = time.monotonic

    # what uvicorn's Multiprocess has, written against it: self.config, sockets, processes, processes_num,
    # should_exit, and its Process objects (pid, exitcode, process: the multiprocessing one)
    config: Any
    sockets: list[Any]
    processes: list[Any]
    processes_num: int
    should_exit: threading.Event

    def _spawn(self) -> Any:
        from uvicorn.supervisors.multiprocess import Process

        process = Process(self.config, self.sockets)
        process.start()
        return process

    def init_processes(self) -> None:
        for _ in range(self.processes_num):
            self.processes.append(self._spawn())
        self._first = {process.pid for process in self.processes}

    def keep_subprocess_alive(self) -> None:
        from uvicorn.config import STARTUP_FAILURE

        if self.should_exit.is_set():
            return
        for idx, process in enumerate(self.processes):
            if idx in self._retry_at:  # its last replacement failed to start: the next one, when due
                if self._now() >= self._retry_at[idx]:
                    del self._retry_at[idx]
                    self.processes[idx] = self._spawn()
                continue
            if process.is_alive(timeout=self.config.timeout_worker_healthcheck):
                continue
            process.kill()  # hung, or gone already
            process.join()
            self._retire(process)
            if process.exitcode == STARTUP_FAILURE and process.pid in self._first:
                log.error(f"Child process [{process.pid}] failed to start, stopping the parent process.")
                self.should_exit.set()
                return
            if process.exitcode == STARTUP_FAILURE:
                if self._failed_to_start(idx, process.pid):
                    return
                continue
            self._failures.pop(idx, None)  # it had started: a failure of its replacement is a first
            if self.should_exit.is_set():
                return
            log.info(f"Child process [{process.pid}] died")
            self.processes[idx] = self._spawn()

    def _failed_to_start(self, idx: int, pid: int) -> bool:
        """Count a replacement's failure to start in slot ``idx``; schedule the next, or give up (True)."""
        failures = self._failures[idx] = self._failures.get(idx, 0) + 1
        if failures >= _TRIES:
            self.gave_up = (
                f"worker processes failed to start {failures} times in a row (the last: {pid}; the log "
                "above says why); stopped"
            )
            log.error("rated: %s", self.gave_up)
            self.should_exit.set()
            return True
        wait = min(_RETRY_S * 2 ** (failures - 1), _RETRY_MAX_S)
        log.warning(
            "rated: worker [%d] failed to start (%d of %d in a row; the log above says why): "
            "next try in %g s",
            pid,
            failures,
            _TRIES,
            wait,
        )
        self._retry_at[idx] = self._now() + wait
        return False

    def restart_all(self) -> None:
        """Replace each worker once its replacement is ready (as uvicorn does, waiting up to ``_READY_S``
        for it), each old one waited for only as long as it takes to stop (``_stop``)."""
        ready_s = max(_READY_S, self.config.timeout_worker_healthcheck)
        for idx, old in enumerate(self.processes):
            if self.should_exit.is_set():
                return
            new = self._spawn()
            if not new.wait_until_ready(ready_s, self.should_exit):
                new.kill()
                new.join()
                self._retire(new)
                if not self.should_exit.is_set():
                    log.error(
                        f"New child process [{new.pid}] was not ready in time; "
                        f"keeping worker [{old.pid}] and aborting the restart."
                    )
                return
            self._stop([old])
            self.processes[idx] = new
            self._failures.pop(idx, None)
            self._retry_at.pop(idx, None)

    def handle_ttou(self) -> None:
        if self.processes_num <= 1:
            log.info("Already reached one process, cannot decrease the number of processes anymore.")
            return
        log.info("Received SIGTTOU, decreasing number of processes.")
        self.processes_num -= 1
        process = self.processes.pop()
        self._failures.pop(len(self.processes), None)
        self._retry_at.pop(len(self.processes), None)
        self._stop([process])

    def join_all(self) -> None:
        """At the shutdown (SIGTERM sent to every worker already): wait for them, within ``_STOP_S``."""
        self._reap(self.processes)  # nothing to retire: the folder is removed next

    def _stop(self, processes: list[Any]) -> None:
        """SIGTERM ``processes``, wait until they exit (``_reap``), and retire them."""
        for process in processes:
            process.terminate()  # nothing for one that has exited
        self._reap(processes)
        for process in processes:
            self._retire(process)

    def _reap(self, processes: list[Any]) -> None:
        """Wait for ``processes``, sent SIGTERM, to exit: as long as they take, but the ones still there
        ``_STOP_S`` from now are killed."""
        deadline = self._now() + _STOP_S
        for process in processes:
            log.info(f"Waiting for child process [{process.pid}]")
            process.process.join(max(deadline - self._now(), 0.0))
            if process.process.is_alive():
                log.warning("rated: worker [%d] still ran %g s after SIGTERM: killed", process.pid, _STOP_S)
                process.kill()
                process.process.join()

    def _retire(self, process: Any) -> None:
        """Merge the metrics files of ``process``, which has exited (once per pid). A merge that scrapes
        held off past ``_MERGE_WAIT_S`` loses no count, nor delays one: the files stay where they are and
        every scrape sums them as before. It costs two files in the folder until the service stops: it is
        not tried again (a later worker may get the same pid and write to them meanwhile)."""
        pid = process.pid
        if pid is None or pid in self._retired:
            return
        self._retired.add(pid)
        try:
            if not retire_process(self.metrics_dir, pid):
                log.warning(
                    "rated: the metrics files of worker [%d] are left unmerged (still summed): scrapes held "
                    "them",
                    pid,
                )
        except Exception as exc:  # a damaged file: summed as it is (a scrape would fail on it as well)
            log.warning("rated: the metrics files of worker [%d] are kept: %s", pid, exc)


def worker_env(settings: Settings, metrics_dir: str) -> dict[str, str]:
    """The variables a worker needs: the resolved settings, the metrics folder, and unless the user chose
    one, an encoder thread count that shares the CPUs among the workers instead of giving each all."""
    from rated.encode.onnx import ENCODER_THREADS_ENV

    env = {**settings.to_env(), MULTIPROC_DIR_ENV: metrics_dir, PARENT_PID_ENV: str(os.getpid())}
    if not os.environ.get(ENCODER_THREADS_ENV):
        from rated.encode.onnx import default_threads, usable_cpus

        share = usable_cpus() // settings.workers
        env[ENCODER_THREADS_ENV] = str(max(1, min(default_threads(), share)))
    return env


def stop_with_parent(
    parent: int, *, every: float = 1.0, stop: Callable[[], object] | None = None
) -> threading.Thread:
    """Watch, in a daemon thread, that this worker's parent is still ``parent``; once it is not (the parent
    was killed and the worker adopted), ``stop()``: by default SIGTERM to itself, which uvicorn answers
    with a graceful shutdown, then a hard exit if that has not ended the process within ``_GRACE_S``."""

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(every)
        log.warning("rated: the parent process [%d] is gone; stopping worker [%d]", parent, os.getpid())
        (stop or _stop_self)()

    thread = threading.Thread(target=watch, name="rated-parent-watch", daemon=True)
    thread.start()
    return thread


def _stop_self() -> None:
    os.kill(os.getpid(), signal.SIGTERM)
    time.sleep(_GRACE_S)  # a daemon thread: it dies with the process once the shutdown completes
    os._exit(1)


def _remove_stale_metrics(tmp: str) -> None:
    """Remove the metrics folders under ``tmp`` that no running parent holds (their parent was killed
    before it could); a folder without a lock (being made, or another version's) is left alone."""
    if fcntl is None:
        return
    for path in glob.glob(os.path.join(glob.escape(tmp), _PREFIX + "*")):
        try:
            fd = os.open(os.path.join(path, _LOCK), os.O_RDONLY)
        except OSError:  # no lock file, not a folder, or not ours to read
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:  # held: a running rated serve's
            os.close(fd)
            continue
        try:
            shutil.rmtree(path, ignore_errors=True)
        finally:
            os.close(fd)


@contextlib.contextmanager
def _metrics_folder(tmp: str) -> Iterator[str]:
    """A fresh private (0700) folder under ``tmp`` holding no stale counts, locked for as long as the block
    runs (the lock file is locked before it gets its name: a sweep never sees it unlocked), then removed."""
    path = tempfile.mkdtemp(prefix=_PREFIX, dir=tmp)
    fd = None
    try:
        if fcntl is not None:
            making = os.path.join(path, _LOCK + ".new")
            fd = os.open(making, os.O_RDONLY | os.O_CREAT, 0o600)
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            os.rename(making, os.path.join(path, _LOCK))
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)  # still locked: no sweep races the removal
        if fd is not None:
            os.close(fd)


@contextlib.contextmanager
def _environ(values: Mapping[str, str]) -> Iterator[None]:
    """``values`` in ``os.environ`` (which spawned processes inherit) for the block; restored after."""
    saved = {name: os.environ.get(name) for name in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for name, old in saved.items():
            if old is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = old


@contextlib.contextmanager
def _signals_restored() -> Iterator[None]:
    """uvicorn's supervisor takes over SIGINT, SIGTERM, SIGHUP ... for good: give them back after."""
    from uvicorn.supervisors.multiprocess import SIGNALS

    saved = {sig: signal.getsignal(sig) for sig in SIGNALS}
    try:
        yield
    finally:
        for sig, handler in saved.items():
            if handler is not None:
                signal.signal(sig, handler)
