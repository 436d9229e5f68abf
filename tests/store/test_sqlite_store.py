"""SQLite-specific guarantees: real multi-process writers, crash safety, lock time-outs, clear errors."""

from __future__ import annotations

import multiprocessing as mp
import sqlite3
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

from rated.errors import ConfigError, IndexFormatError, StoreBusyError, StoreError
from rated.store.base import OutcomeRecord
from rated.store.codec import decode_state, encode_state
from rated.store.sqlite import SQLiteStore

N_PROCS, N_UPDATES = 4, 25


def _bump(cur):
    n = decode_state(cur["count"])["n"] if "count" in cur else np.zeros(1, np.int64)
    return {"count": encode_state({"n": n + 1})}


def _writer(path: str, worker: int) -> None:
    store = SQLiteStore(path, busy_timeout=30)
    for i in range(N_UPDATES):
        store.update_states(["count"], _bump, OutcomeRecord(time.time(), f"w{worker}", "success", str(i)))
    store.close()


def test_concurrent_processes_lose_no_update(tmp_path):
    path = str(tmp_path / "shared.db")
    SQLiteStore(path).close()
    ctx = mp.get_context("forkserver")  # real processes; the server imports once, workers fork from it
    ctx.set_forkserver_preload(["rated.store.sqlite", "rated.store.codec"])
    procs = [ctx.Process(target=_writer, args=(path, w)) for w in range(N_PROCS)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    store = SQLiteStore(path)
    assert int(decode_state(store.load_states()["count"])["n"][0]) == N_PROCS * N_UPDATES
    assert len(store.outcomes(limit=None)) == N_PROCS * N_UPDATES
    assert {s.tool_id: s.successes for s in store.outcome_stats().values()} == {
        f"w{w}": N_UPDATES for w in range(N_PROCS)
    }
    store.close()


def test_another_process_sees_changes_through_version(tmp_path):
    a, b = SQLiteStore(tmp_path / "v.db"), SQLiteStore(tmp_path / "v.db")
    v = b.version()
    assert b.version() == v  # stable while nothing changes
    a.update_states(["k"], lambda cur: {"k": b"1"})
    assert b.version() != v
    assert b.states_since(0)[0] == {"k": b"1"}
    a.close(), b.close()


@pytest.mark.parametrize("durability", ["normal", "full"])
def test_acknowledged_write_survives_kill_9(tmp_path, durability):
    path = tmp_path / "crash.db"
    script = textwrap.dedent(
        f"""
        import sys, time
        from rated.store.sqlite import SQLiteStore
        from rated.store.base import OutcomeRecord
        s = SQLiteStore({str(path)!r}, durability={durability!r})
        s.update_states(["t"], lambda cur: {{"t": b"acked"}}, OutcomeRecord(1.0, "t", "tool_error", "q"))
        print("acked", flush=True)
        time.sleep(60)
        """
    )
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "acked"
    finally:
        proc.kill()  # SIGKILL: no close, no checkpoint, no atexit
        proc.wait(10)
    store = SQLiteStore(path)
    assert store.load_states() == {"t": b"acked"}
    assert [r.outcome for r in store.outcomes()] == ["tool_error"]
    store.close()


def test_writer_gives_up_with_store_busy_error(tmp_path):
    path = tmp_path / "busy.db"
    store = SQLiteStore(path, busy_timeout=0.2)
    blocker = sqlite3.connect(path, isolation_level=None)
    blocker.execute("BEGIN IMMEDIATE")
    try:
        start = time.monotonic()
        with pytest.raises(StoreBusyError, match="locked"):
            store.update_states(["k"], lambda cur: {"k": b"1"})
        assert 0.15 < time.monotonic() - start < 5
    finally:
        blocker.execute("ROLLBACK")
        blocker.close()
    store.update_states(["k"], lambda cur: {"k": b"1"})  # usable again once the lock is gone
    assert store.load_states() == {"k": b"1"}
    store.close()


def test_errors_name_the_path(tmp_path):
    missing_dir = tmp_path / "no" / "such" / "dir" / "x.db"
    with pytest.raises(StoreError, match="no/such/dir"):
        SQLiteStore(missing_dir)
    with pytest.raises(StoreError, match="no rated database"):
        SQLiteStore(tmp_path / "absent.db", create=False)
    junk = tmp_path / "junk.db"
    junk.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(StoreError, match="junk.db"):
        SQLiteStore(junk)
    other = tmp_path / "other.db"
    conn = sqlite3.connect(other)
    conn.execute("CREATE TABLE people (name TEXT)")
    conn.commit()
    conn.close()
    with pytest.raises(IndexFormatError, match="not a rated database"):
        SQLiteStore(other)
    with pytest.raises(ConfigError):
        SQLiteStore(tmp_path / "x.db", durability="sometimes")


def test_other_format_version_is_refused(tmp_path):
    path = tmp_path / "old.db"
    SQLiteStore(path).close()
    conn = sqlite3.connect(path)
    conn.execute("UPDATE meta SET value = '999' WHERE key = 'format_version'")
    conn.commit()
    conn.close()
    with pytest.raises(IndexFormatError, match="version 999"):
        SQLiteStore(path)


def test_wal_mode_and_durability_setting(tmp_path):
    store = SQLiteStore(tmp_path / "w.db", durability="full")
    assert store._conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert store._conn.execute("PRAGMA synchronous").fetchone()[0] == 2  # FULL
    store.close()
