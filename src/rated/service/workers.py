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

try:
    import fcntl
except ImportError:  # not POSIX: no advisory locks, so no folder can be told stale (none is removed)
    fcntl = None  # type: ignore[assignment]

from rated.errors import RatedError
from rated.service.metrics import MULTIPROC_DIR_ENV
from rated.service.settings import Settings

__all__ = ["APP_FACTORY", "PARENT_PID_ENV", "serve_workers", "stop_with_parent", "worker_env"]

APP_FACTORY = "rated.service.app:app_from_env"
PARENT_PID_ENV = "_RATED_SERVE_PARENT_PID"  # private: set only for the workers serve_workers starts
_PREFIX = "rated-metrics-"
_LOCK = "parent.lock"  # held by the running parent; MultiProcessCollector reads *.db files only
_GRACE_S = 30.0  # a worker whose parent is gone and that has not stopped gracefully by then exits

log = logging.getLogger("uvicorn.error")  # the log the workers' own lines go to


def serve_workers(settings: Settings, *, log_level: str = "info") -> int:
    """Serve ``settings.workers`` processes until SIGINT or SIGTERM (uvicorn's supervisor: a worker that
    dies is replaced, SIGHUP replaces them all); 0 once they stopped. ``RatedError`` if a worker failed
    to start (its log says why), which also stops the others. The store should have been checked by
    opening it first: a worker cannot report an error on one line."""
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
        try:
            supervisor = Multiprocess(config, sockets=[sock])
            supervisor.run()
        finally:
            sock.close()
    failed = [str(p.pid) for p in supervisor.processes if p.exitcode == STARTUP_FAILURE]
    if failed:
        raise RatedError(f"worker process {', '.join(failed)} failed to start (see the log above); stopped")
    return 0


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
