"""``serve_workers``: ``rated serve --workers N``, N uvicorn worker processes sharing one listening socket.

Retrieval is CPU-bound (the query encoder), so one process uses one core; N processes use N. Each worker
is a fresh process (uvicorn spawns it) that builds its app with ``app_from_env``: the settings the parent
resolved reach it as ``RATED_*`` variables, and it opens the store itself at start-up (SQLite in WAL mode
and Redis take many processes; each worker follows the others' feedback and catalog changes as replicas
do, and reopens an index rebuilt under it on its own). Metrics are summed across workers through a
private prometheus_client multiprocess folder, which the parent creates and removes when it stops.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import tempfile
from collections.abc import Iterator, Mapping

from rated.errors import RatedError
from rated.service.metrics import MULTIPROC_DIR_ENV
from rated.service.settings import Settings

__all__ = ["APP_FACTORY", "serve_workers", "worker_env"]

APP_FACTORY = "rated.service.app:app_from_env"


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
    metrics_dir = tempfile.mkdtemp(prefix="rated-metrics-")  # private (0700), fresh: no stale counts
    try:
        with _environ(worker_env(settings, metrics_dir)), _signals_restored():
            sock = config.bind_socket()
            try:
                supervisor = Multiprocess(config, sockets=[sock])
                supervisor.run()
            finally:
                sock.close()
    finally:
        shutil.rmtree(metrics_dir, ignore_errors=True)
    failed = [str(p.pid) for p in supervisor.processes if p.exitcode == STARTUP_FAILURE]
    if failed:
        raise RatedError(f"worker process {', '.join(failed)} failed to start (see the log above); stopped")
    return 0


def worker_env(settings: Settings, metrics_dir: str) -> dict[str, str]:
    """The variables a worker needs: the resolved settings, the metrics folder, and unless the user chose
    one, an encoder thread count that shares the CPUs among the workers instead of giving each all."""
    from rated.encode.onnx import ENCODER_THREADS_ENV

    env = {**settings.to_env(), MULTIPROC_DIR_ENV: metrics_dir}
    if not os.environ.get(ENCODER_THREADS_ENV):
        from rated.encode.onnx import default_threads

        share = (os.cpu_count() or 1) // settings.workers
        env[ENCODER_THREADS_ENV] = str(max(1, min(default_threads(), share)))
    return env


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
