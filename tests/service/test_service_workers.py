"""``rated serve --workers N`` without processes: the settings handed to workers, the worker app factory,
the metrics folder's life, and the CLI's checks before it starts them. (Real worker processes:
tests/cli/test_serve_workers_live.py.)"""

from __future__ import annotations

import gc
import os
import socket
import threading
import weakref
from pathlib import Path

import pytest

pytest.importorskip("uvicorn")

import uvicorn.supervisors  # noqa: E402
from fastapi.testclient import TestClient  # noqa: E402
from uvicorn.config import STARTUP_FAILURE  # noqa: E402

import rated.cli.serve_cmds as serve_cmds  # noqa: E402
import rated.service.workers as workers  # noqa: E402
from rated import Tool  # noqa: E402
from rated.cli import main  # noqa: E402
from rated.encode.testing import HashEncoder  # noqa: E402
from rated.errors import ConfigError, RatedError  # noqa: E402
from rated.retriever import Retriever  # noqa: E402
from rated.service import Settings  # noqa: E402
from rated.service.app import app_from_env  # noqa: E402
from rated.service.metrics import MULTIPROC_DIR_ENV, Metrics  # noqa: E402

TOOLS = [Tool(id=f"t{i}", name=f"tool_{i}", description=f"Send email message number {i}") for i in range(4)]


@pytest.fixture
def db(tmp_path):
    path = tmp_path / "w.db"
    Retriever.from_catalog(TOOLS, db=path, encoder=HashEncoder(32)).close()
    return str(path)


@pytest.fixture
def unused_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(autouse=True)
def clean_env(monkeypatch):
    for name in (MULTIPROC_DIR_ENV, "RATED_API_KEY", "RATED_WORKERS", "RATED_ENCODER_THREADS"):
        monkeypatch.delenv(name, raising=False)


def test_settings_survive_the_trip_through_the_environment_a_worker_reads():
    given = Settings(db="x.db", port=8123, max_k=9, busy_timeout=2.5, api_key="k-1", workers=3)
    env = given.to_env()
    assert Settings.from_env(env) == given
    assert env["RATED_API_KEY"] == "k-1" and "RATED_WORKERS" in env
    assert "RATED_API_KEY" not in Settings(db="x.db").to_env()  # None is left out, not "None"


def test_workers_must_be_at_least_one_from_the_argument_or_the_environment():
    with pytest.raises(ConfigError, match=r"workers 0: Input should be greater than or equal to 1"):
        Settings.from_env({}, db="x.db", workers=0)
    with pytest.raises(ConfigError, match=r"RATED_WORKERS: Input should be a valid integer"):
        Settings.from_env({"RATED_WORKERS": "two"}, db="x.db")
    assert Settings.from_env({"RATED_WORKERS": "4"}).workers == 4


def test_workers_share_the_cpus_unless_the_user_set_encoder_threads(monkeypatch):
    monkeypatch.setattr(os, "cpu_count", lambda: 8)
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(8)), raising=False)
    settings = Settings(db="x.db", workers=4)
    env = workers.worker_env(settings, "/m")
    assert env["RATED_ENCODER_THREADS"] == "2" and env[MULTIPROC_DIR_ENV] == "/m"
    assert env["RATED_DB"] == "x.db" and env["RATED_WORKERS"] == "4"
    assert workers.worker_env(Settings(db="x.db", workers=16), "/m")["RATED_ENCODER_THREADS"] == "1"
    monkeypatch.setenv("RATED_ENCODER_THREADS", "3")
    assert "RATED_ENCODER_THREADS" not in workers.worker_env(settings, "/m")  # inherited as it is


def test_workers_share_the_cpus_the_process_may_use_not_the_machines(monkeypatch):
    """A container limited to 2 of a host's 64 CPUs (a cpuset): os.cpu_count() says 64, so 2 workers
    got 4 encoder threads each (the default cap) on 2 CPUs."""
    monkeypatch.setattr(os, "cpu_count", lambda: 64)
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {5, 9}, raising=False)
    assert workers.worker_env(Settings(db="x.db", workers=2), "/m")["RATED_ENCODER_THREADS"] == "1"
    monkeypatch.delattr(os, "sched_getaffinity", raising=False)  # a platform without affinity
    assert workers.worker_env(Settings(db="x.db", workers=2), "/m")["RATED_ENCODER_THREADS"] == "4"


def test_the_worker_factory_reads_its_settings_from_the_environment(db, monkeypatch):
    monkeypatch.setenv("RATED_DB", db)
    monkeypatch.setenv("RATED_MAX_K", "7")
    app = app_from_env()
    assert app.state.settings.max_k == 7
    with TestClient(app) as c:  # it opens the store itself
        assert c.get("/health").json()["tools"] == len(TOOLS)
        assert c.post("/retrieve", json={"query": "send email", "k": 8}).status_code == 422  # over max_k
        assert 'rated_http_requests_total{route="/retrieve",status="422"} 1.0' in c.get("/metrics").text


def test_multiprocess_metrics_refuse_a_folder_set_after_prometheus_was_imported(tmp_path, monkeypatch):
    with pytest.raises(ConfigError, match=MULTIPROC_DIR_ENV):
        Metrics(multiprocess=True)  # not set at all
    monkeypatch.setenv(MULTIPROC_DIR_ENV, str(tmp_path))
    with pytest.raises(ConfigError, match="set after prometheus_client was imported"):
        Metrics(multiprocess=True)  # this process counts in memory: workers would each count alone


class _FakeSupervisor:
    """Stands in for uvicorn's: records what a spawned worker would inherit, and how its workers ended."""

    seen: dict[str, str | None] = {}
    exitcodes: tuple[int, ...] = (0, 0)

    def __init__(self, config, sockets):
        self.config = config
        self.processes = []

    def run(self):
        env = os.environ
        seen = {k: env.get(k) for k in ("RATED_DB", "RATED_PORT", MULTIPROC_DIR_ENV)}
        seen["dir_exists"] = str(os.path.isdir(env[MULTIPROC_DIR_ENV]))
        seen["factory"] = f"{self.config.app} {self.config.factory} {self.config.workers}"
        _FakeSupervisor.seen = seen  # not type(self): serve_workers runs a subclass of it
        self.processes = [
            type("P", (), {"pid": 100 + i, "exitcode": c}) for i, c in enumerate(self.exitcodes)
        ]


def test_serve_workers_hands_over_settings_and_a_private_metrics_folder_it_removes(
    tmp_path, monkeypatch, unused_port
):
    monkeypatch.setattr(uvicorn.supervisors, "Multiprocess", _FakeSupervisor)
    monkeypatch.setattr(workers.tempfile, "tempdir", str(tmp_path))
    settings = Settings(db="x.db", port=unused_port, workers=2)
    assert workers.serve_workers(settings, log_level="warning") == 0
    seen = _FakeSupervisor.seen
    assert seen["RATED_DB"] == "x.db" and seen["RATED_PORT"] == str(unused_port)
    assert seen["dir_exists"] == "True" and seen["factory"] == f"{workers.APP_FACTORY} True 2"
    assert os.path.dirname(seen[MULTIPROC_DIR_ENV]) == str(tmp_path) and not os.listdir(tmp_path)
    assert "RATED_DB" not in os.environ and MULTIPROC_DIR_ENV not in os.environ  # restored


def test_a_worker_that_failed_to_start_makes_serve_workers_fail(tmp_path, monkeypatch, unused_port):
    monkeypatch.setattr(uvicorn.supervisors, "Multiprocess", _FakeSupervisor)
    monkeypatch.setattr(_FakeSupervisor, "exitcodes", (0, STARTUP_FAILURE))
    with pytest.raises(RatedError, match="worker process 101 failed to start"):
        workers.serve_workers(Settings(db="x.db", port=unused_port, workers=2))


def test_cli_checks_the_store_then_closes_it_before_starting_workers(db, monkeypatch, capsys):
    monkeypatch.setattr(serve_cmds, "_check_can_listen", lambda host, port: None)
    closed = []
    real_close = Retriever.close
    monkeypatch.setattr(Retriever, "close", lambda self: (closed.append(1), real_close(self)))
    started = []

    def serve(settings, log_level):
        started.append((settings.workers, settings.db, log_level, len(closed)))
        return 0

    monkeypatch.setattr(workers, "serve_workers", serve)
    assert main(["serve", "--db", db, "--workers", "3", "--log-level", "warning"]) == 0
    assert started == [(3, db, "warning", 1)]  # the parent's retriever closed before the workers start
    assert "4 tools from" in capsys.readouterr().err


def test_the_parent_keeps_no_copy_of_the_index_while_its_workers_serve(db, monkeypatch):
    """The parent's retriever, which checked the store, stayed referenced by the CLI while the workers ran:
    its index, embeddings and encoder held for nothing (a 20,000-tool index at 384 dims: the parent's RSS
    was a worker's, 305 MB; 246 MB once dropped, the rest imports and what the allocator keeps)."""
    monkeypatch.setattr(serve_cmds, "_check_can_listen", lambda host, port: None)
    opened = []
    real_open = Retriever.open

    def open_(*args, **kw):
        retriever = real_open(*args, **kw)
        opened.append(weakref.ref(retriever))
        return retriever

    monkeypatch.setattr(Retriever, "open", open_)
    alive = []

    def serve(settings, log_level):
        gc.collect()
        alive.extend(ref() is not None for ref in opened)
        return 0

    monkeypatch.setattr(workers, "serve_workers", serve)
    assert main(["serve", "--db", db, "--workers", "2"]) == 0
    assert alive == [False]  # it was opened once, and is gone by the time the workers start


def test_cli_refuses_zero_workers_in_one_line_before_opening_anything(monkeypatch, capsys):
    opened = []
    monkeypatch.setattr(Retriever, "open", lambda *a, **kw: opened.append(a))
    assert main(["serve", "--db", "x.db", "--workers", "0"]) != 0
    err = capsys.readouterr().err
    assert "workers 0" in err and "greater than or equal to 1" in err and not opened
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_cli_refuses_a_store_it_cannot_open_before_starting_workers(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(serve_cmds, "_check_can_listen", lambda host, port: None)
    monkeypatch.setattr(workers, "serve_workers", lambda *a, **kw: pytest.fail("workers started"))
    assert main(["serve", "--db", str(tmp_path / "none.db"), "--workers", "2"]) != 0
    err = capsys.readouterr().err
    assert "none.db" in err and len(err.strip().splitlines()) == 1


def test_a_worker_stops_itself_once_its_parent_is_gone(monkeypatch):
    parents = iter([7, 7, 7])  # the supervisor three times, then init, which adopted the orphan
    monkeypatch.setattr(os, "getppid", lambda: next(parents, 1))
    stopped = threading.Event()
    watch = workers.stop_with_parent(7, every=0.001, stop=stopped.set)
    assert stopped.wait(5)
    watch.join(5)
    assert not watch.is_alive() and next(parents, None) is None  # watched until the parent changed
    gone = threading.Event()
    workers.stop_with_parent(os.getpid(), every=0.001, stop=gone.set)  # dead before the worker looked
    assert gone.wait(5)


def test_only_workers_serve_workers_started_watch_their_parent(db, monkeypatch, tmp_path):
    env = workers.worker_env(Settings(db="x.db", workers=2), str(tmp_path))
    assert env[workers.PARENT_PID_ENV] == str(os.getpid())  # the parent that spawns the workers
    watched = []
    monkeypatch.setattr(workers, "stop_with_parent", lambda parent: watched.append(parent))
    monkeypatch.setenv("RATED_DB", db)
    app_from_env()
    assert watched == []  # uvicorn --factory: its own supervisor, or none
    monkeypatch.setenv(workers.PARENT_PID_ENV, "4242")
    app_from_env()
    assert watched == [4242]


def test_a_metrics_folder_left_by_a_killed_parent_is_removed_by_the_next_start(tmp_path):
    with workers._metrics_folder(str(tmp_path)) as running:
        (Path(running) / "counter_1.db").write_bytes(b"x")
        killed = tmp_path / "rated-metrics-killed"  # its parent died holding the lock
        killed.mkdir()
        (killed / "counter_2.db").write_bytes(b"x")
        (killed / workers._LOCK).touch()
        other = tmp_path / "rated-metrics-nolock"  # being made, or an older version's: not ours to judge
        other.mkdir()
        (tmp_path / "rated-metrics-file").touch()
        workers._remove_stale_metrics(str(tmp_path))
        assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
            [Path(running).name, "rated-metrics-nolock", "rated-metrics-file"]
        )  # the running parent's folder is kept: its lock is held
        assert (Path(running) / "counter_1.db").exists()
    assert not Path(running).exists()
    workers._remove_stale_metrics(str(tmp_path))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["rated-metrics-file", "rated-metrics-nolock"]


def test_serve_workers_removes_stale_metrics_folders_before_it_starts(tmp_path, monkeypatch, unused_port):
    monkeypatch.setattr(uvicorn.supervisors, "Multiprocess", _FakeSupervisor)
    monkeypatch.setattr(workers.tempfile, "tempdir", str(tmp_path))
    stale = tmp_path / "rated-metrics-stale"
    stale.mkdir()
    (stale / workers._LOCK).touch()
    assert workers.serve_workers(Settings(db="x.db", port=unused_port, workers=2)) == 0
    assert not os.listdir(tmp_path)


def test_a_metrics_folder_variable_that_names_no_folder_is_a_one_line_error(
    db, tmp_path, monkeypatch, capsys
):
    monkeypatch.setattr(serve_cmds, "_check_can_listen", lambda host, port: None)
    monkeypatch.setattr(uvicorn, "run", lambda app, **kw: pytest.fail("uvicorn started"))
    for path in (str(tmp_path / "missing"), ""):  # a user's own; an empty one meant the working folder
        monkeypatch.setenv(MULTIPROC_DIR_ENV, path)
        with pytest.raises(ConfigError, match=f"{MULTIPROC_DIR_ENV} is {path!r}, which is not a folder"):
            Metrics()
        assert main(["serve", "--db", db]) != 0  # one worker: a traceback at the first counter before
        err = capsys.readouterr().err
        assert MULTIPROC_DIR_ENV in err and "Traceback" not in err and "starting" not in err, err
    monkeypatch.setenv(MULTIPROC_DIR_ENV, str(tmp_path))
    Metrics()  # a folder: fine (the metrics are this process's alone)
