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


def _filled(path):
    """A small complete rated database at ``path`` (one tool, a config, a state and one outcome)."""
    with SQLiteStore(path) as s:
        s.put_tools(["a"], ['{"id": "a"}'], np.ones((1, 3), np.float32), np.array([0.5]))
        s.set_meta({"k": 1})
        s.update_states(["a"], lambda cur: {"a": b"1"}, OutcomeRecord(1.0, "a", "success"))


@pytest.mark.parametrize("create", [False, True])
def test_opening_an_existing_database_waits_for_no_writer(tmp_path, create):
    path = tmp_path / "r.db"
    _filled(path)
    blocker = sqlite3.connect(path, isolation_level=None)
    blocker.execute("BEGIN IMMEDIATE")  # another process in the middle of a write
    blocker.execute("INSERT INTO outcomes (time, tool_id, outcome) VALUES (2.0, 'a', 'tool_error')")
    try:
        start = time.monotonic()
        store = SQLiteStore(path, create=create, busy_timeout=0.2)
        assert store.get_meta() == {"k": 1}
        assert store.load_catalog().ids == ("a",)
        assert store.load_states() == {"a": b"1"}
        assert [r.outcome for r in store.outcomes()] == ["success"]  # the open write is not visible yet
        assert set(store.outcome_stats()) == {"a"}
        store.version()
        assert time.monotonic() - start < 0.15  # never waited for the lock
        store.close()
    finally:
        blocker.execute("ROLLBACK")
        blocker.close()


def test_a_refused_file_is_left_as_it_was(tmp_path):
    other = tmp_path / "other.db"
    conn = sqlite3.connect(other)
    conn.execute("CREATE TABLE people (name TEXT)")
    conn.execute("INSERT INTO people VALUES ('ada')")
    conn.commit()
    conn.close()
    before, mtime = other.read_bytes(), other.stat().st_mtime_ns
    for create in (True, False):
        with pytest.raises(IndexFormatError, match=r"other\.db: an SQLite file, but not a rated database$"):
            SQLiteStore(other, create=create)
    assert other.read_bytes() == before and other.stat().st_mtime_ns == mtime
    conn = sqlite3.connect(other)
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "delete"
    conn.close()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["other.db"]  # no -wal / -shm left behind

    empty = tmp_path / "empty.db"
    empty.touch()
    with pytest.raises(StoreError, match=r"empty\.db: empty database \(create one with `rated index`\)"):
        SQLiteStore(empty, create=False)
    assert empty.stat().st_size == 0


def test_a_rated_database_of_another_version_is_left_as_it_was(tmp_path):
    path = tmp_path / "old.db"
    _filled(path)
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA journal_mode=DELETE")
    conn.execute("UPDATE meta SET value = '999' WHERE key = 'format_version'")
    conn.commit()
    conn.close()
    before = path.read_bytes()
    with pytest.raises(IndexFormatError, match="version 999"):
        SQLiteStore(path, create=False)
    assert path.read_bytes() == before


@pytest.mark.parametrize(
    ("sql", "match", "read"),
    [
        (
            "UPDATE meta SET value = '{oops' WHERE key = 'config'",
            r"damaged index settings: not valid JSON",
            "meta",
        ),
        (
            "UPDATE meta SET value = '[1, 2]' WHERE key = 'config'",
            r"damaged index settings: a JSON list",
            "meta",
        ),
        # a prior detail is for display: decoded when read, not by every open
        ("UPDATE prior SET detail = 'nope'", r"damaged prior detail for tool 'a': not valid JSON", "detail"),
        ("UPDATE prior SET detail = '[1]'", r"damaged prior detail for tool 'a'$", "detail"),
        ("UPDATE tools SET record = x'7b7d'", r"damaged record for tool 'a': not text", "catalog"),
        ("UPDATE prior SET r_static = 'high'", r"damaged prior for tool 'a'", "catalog"),
        (
            "UPDATE embeddings SET vector = x'0000'",
            r"damaged embedding for tool 'a' \(2 bytes, expected 12",
            "catalog",
        ),
        (
            "UPDATE embeddings SET vector = zeroblob(40)",
            r"damaged embedding for tool 'a' \(40 bytes",
            "catalog",
        ),
    ],
)
def test_damaged_stored_data_is_an_index_format_error_naming_the_file(tmp_path, sql, match, read):
    path = tmp_path / "damaged.db"
    _filled(path)
    conn = sqlite3.connect(path)
    conn.execute(sql)
    conn.commit()
    conn.close()
    store = SQLiteStore(path, create=False)
    with pytest.raises(IndexFormatError, match=rf"damaged\.db: {match}"):
        if read == "meta":
            store.get_meta()
        elif read == "detail":
            store.load_catalog().prior_detail[0]
        else:
            store.load_catalog()
    store.close()


def _log(store, n):
    kinds = ["success", "tool_error", "caller_error", "timeout", "success"]
    for i in range(n):
        rec = OutcomeRecord(time=float(i), tool_id=f"t{i % 3}", outcome=kinds[i % len(kinds)])
        store.update_states([], lambda cur: {}, rec)


def test_outcome_totals_are_read_without_scanning_the_log(tmp_path):
    """`rated tools` and GET /tools read per-tool totals kept with each append, not the whole log."""
    store = SQLiteStore(tmp_path / "r.db")
    _log(store, 23)
    scanned = store._scan_outcome_stats(store._conn, "", [])
    statements: list[str] = []
    store._conn.set_trace_callback(statements.append)
    assert store.outcome_stats() == scanned and store.outcome_stats(["t1"]) == {"t1": scanned["t1"]}
    store._conn.set_trace_callback(None)
    assert statements and not any("FROM outcomes" in s for s in statements), statements
    store.close()


def _file_from_before_the_totals(path, n):
    """A database with ``n`` logged outcomes and no outcome_counts table; returns its totals."""
    store = SQLiteStore(path)
    _log(store, n)
    expected = store.outcome_stats()
    store.close()
    conn = sqlite3.connect(path)
    conn.execute("DROP TABLE outcome_counts")
    conn.commit()
    conn.close()
    return expected


def test_a_file_from_before_the_totals_gets_them_counted_from_its_log(tmp_path):
    path = tmp_path / "old.db"
    expected = _file_from_before_the_totals(path, 17)
    store = SQLiteStore(path, create=False)
    assert store._counted and store.outcome_stats() == expected
    _log(store, 1)  # and they go on from there
    assert store.outcome_stats()["t0"].successes == expected["t0"].successes + 1
    store.close()


def test_a_read_only_file_from_before_the_totals_is_still_read(tmp_path, monkeypatch):
    path = tmp_path / "old.db"
    expected = _file_from_before_the_totals(path, 9)
    real_write = SQLiteStore._write

    def read_only(self):  # what a read-only mount answers to BEGIN IMMEDIATE ... CREATE TABLE
        raise StoreError(f"{self.path}: attempt to write a readonly database")

    monkeypatch.setattr(SQLiteStore, "_write", read_only)
    store = SQLiteStore(path, create=False)
    assert not store._counted and store.outcome_stats() == expected
    monkeypatch.setattr(SQLiteStore, "_write", real_write)
    store.close()


def test_max_outcomes_keeps_the_newest_records_and_exact_totals(tmp_path):
    full, capped = SQLiteStore(tmp_path / "full.db"), SQLiteStore(tmp_path / "cap.db", max_outcomes=4)
    for store in (full, capped):
        _log(store, 11)
    assert [r.time for r in capped.outcomes(limit=None)] == [7.0, 8.0, 9.0, 10.0]
    assert len(full.outcomes(limit=None)) == 11 and capped.outcome_stats() == full.outcome_stats()
    for bad in (0, -1, 2.5, True, "10"):
        with pytest.raises(ConfigError, match="max_outcomes"):
            SQLiteStore(tmp_path / "bad.db", max_outcomes=bad)
    full.close()
    capped.close()


def test_max_outcomes_reaches_the_store_through_retriever_open(tmp_path):
    from rated import Tool
    from rated.encode.testing import HashEncoder
    from rated.retriever import Retriever

    db = tmp_path / "r.db"
    tools = [Tool(id="a", name="a", description="send mail"), Tool(id="b", name="b", description="weather")]
    Retriever.from_catalog(tools, db=db, encoder=HashEncoder(16)).close()
    with Retriever.open(db, encoder=HashEncoder(16), max_outcomes=2) as r:
        for outcome in ("success", "tool_error", "timeout"):
            r.feedback("a", outcome)
        assert [o.outcome for o in r.outcomes(limit=None)] == ["tool_error", "timeout"]
        (health,) = [h for h in r.tools() if h.tool.id == "a"]
        assert (health.stats.successes, health.stats.failures) == (1, 2)


def test_two_openers_of_a_file_from_before_the_totals_count_its_log_once(tmp_path, monkeypatch):
    """Two processes open an older file at once: both see no totals table, but only one may count the
    log into it (the other, waiting on the write lock, would otherwise add every count a second time)."""
    path = tmp_path / "old.db"
    expected = _file_from_before_the_totals(path, 13)
    real_add = SQLiteStore._add_outcome_counts
    raced = []

    def other_process_first(self):  # the other opener migrates between our check and our transaction
        if not raced:
            raced.append(True)
            SQLiteStore(path, create=False).close()
        real_add(self)

    monkeypatch.setattr(SQLiteStore, "_add_outcome_counts", other_process_first)
    store = SQLiteStore(path, create=False)
    assert raced and store.outcome_stats() == expected
    store.close()


def test_put_tools_beyond_the_parameter_limit_replaces_in_place_and_appends(tmp_path):
    """Existing positions are looked up for the written ids only, in chunks of SQLite's parameter limit."""
    store = SQLiteStore(tmp_path / "big.db")
    ids = [f"t{i}" for i in range(1200)]
    store.put_tools(ids, [f'{{"id": "{i}"}}' for i in ids], np.ones((1200, 2), np.float32), np.ones(1200))
    again = ids[::2] + [f"n{i}" for i in range(150)]  # 600 replaced where they are, 150 appended
    records = [f'{{"id": "{i}", "v": 2}}' for i in again]
    store.put_tools(again, records, np.full((750, 2), 2.0, np.float32), np.full(750, 0.5))
    cat = store.load_catalog()
    assert cat.ids == tuple(ids) + tuple(f"n{i}" for i in range(150))
    assert cat.records[2].endswith('"v": 2}') and not cat.records[1].endswith('"v": 2}')
    assert cat.embeddings[1200, 0] == 2.0 and cat.embeddings[1, 0] == 1.0
    store.close()


def test_save_cached_gives_up_at_once_on_a_held_lock_and_other_writes_still_wait(tmp_path):
    path = tmp_path / "s.db"
    store = SQLiteStore(path, busy_timeout=2)
    other = sqlite3.connect(path, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    start = time.monotonic()
    with pytest.raises(StoreBusyError):
        store.save_cached("lexical-index", b"blob")  # a cache, saved from a first search: no long wait
    assert time.monotonic() - start < 1
    assert store._conn.execute("PRAGMA busy_timeout").fetchone()[0] == 2000  # the store's own, back
    other.execute("ROLLBACK")
    other.close()
    store.save_cached("lexical-index", b"blob")
    assert store.load_cached("lexical-index") == b"blob"
    store.close()


def test_deleting_a_cached_entry_that_is_not_there_takes_no_write_lock(tmp_path):
    path = tmp_path / "s.db"
    store = SQLiteStore(path, busy_timeout=2)
    assert store.delete_cached("hnsw-graph") is False  # no cached table yet: none made for this
    assert "cached" not in {r[0] for r in store._conn.execute("SELECT name FROM sqlite_master")}
    store.save_cached("lexical-index", b"blob")
    other = sqlite3.connect(path, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")  # another writer holds the lock
    try:
        assert store.delete_cached("hnsw-graph") is False  # read only: no wait, no StoreBusyError
        start = time.monotonic()
        with pytest.raises(StoreBusyError):  # one that is there needs the lock: a short wait, then busy
            store.delete_cached("lexical-index")
        assert time.monotonic() - start < 1
    finally:
        other.execute("ROLLBACK")
        other.close()
    assert store.delete_cached("lexical-index") is True and store.load_cached("lexical-index") is None
    store.close()
