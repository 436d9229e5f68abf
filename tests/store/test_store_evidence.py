"""``EvidenceStore`` (``load_evidence`` / ``update_evidence``) on every backend: atomic read-modify-write
of a blob per key, None drops it, concurrent writers lose nothing, and policy state never sees it."""

from __future__ import annotations

import multiprocessing as mp
import sqlite3
import threading
import uuid

import numpy as np
import pytest

from rated.store.base import EvidenceStore, OutcomeRecord
from rated.store.memory import MemoryStore
from rated.store.sqlite import SQLiteStore

N_THREADS, N_UPDATES = 4, 20


@pytest.fixture(params=["memory", "sqlite", pytest.param("redis", marks=pytest.mark.redis)])
def make_store(request, tmp_path):
    """A factory of stores over one shared backend (each call: another connection, as another process)."""
    made = []
    namespace = f"t{uuid.uuid4().hex[:8]}"
    memory = MemoryStore()

    def make():
        if request.param == "memory":
            return memory
        if request.param == "sqlite":
            store = SQLiteStore(tmp_path / "rated.db", busy_timeout=30)
        else:
            from rated.store.redis import RedisStore

            store = RedisStore(request.getfixturevalue("redis_url"), namespace=namespace, busy_timeout=30)
        made.append(store)
        return store

    yield make
    for store in made:
        store.close()


def _count_up(blob: bytes | None) -> bytes:
    return str(int(blob or b"0") + 1).encode()


def test_implements_the_protocol(make_store):
    assert isinstance(make_store(), EvidenceStore)


def test_update_reads_what_was_saved_and_none_drops_it(make_store):
    store = make_store()
    assert store.load_evidence("retired:a") is None
    seen = []

    def remember(blob):
        seen.append(blob)
        return b"one" if blob is None else blob + b"+"

    store.update_evidence("retired:a", remember)
    store.update_evidence("retired:a", remember)
    assert seen == [None, b"one"]
    assert store.load_evidence("retired:a") == b"one+"
    assert store.load_evidence("retired:b") is None  # keys are apart
    store.update_evidence("retired:a", lambda blob: None)
    assert store.load_evidence("retired:a") is None
    store.update_evidence("retired:never", lambda blob: None)  # dropping nothing is fine
    assert store.load_evidence("retired:never") is None


def test_evidence_is_no_policy_state_and_no_outcome(make_store):
    store = make_store()
    store.update_evidence("retired:a", _count_up)
    assert store.load_states() == {}
    assert store.states_since(0) == ({}, 0)  # retrievers (and older rated versions) never meet it
    assert store.outcomes(limit=None) == []
    store.update_states(["a"], lambda cur: {"a": b"state"}, OutcomeRecord(1.0, "a", "success"))
    assert store.load_evidence("retired:a") == b"1"


def test_another_connection_sees_it(make_store):
    writer, reader = make_store(), make_store()
    writer.update_evidence("retired:a", _count_up)
    assert reader.load_evidence("retired:a") == b"1"
    reader.update_evidence("retired:a", _count_up)
    assert writer.load_evidence("retired:a") == b"2"


def test_concurrent_writers_lose_no_update(make_store):
    stores = [make_store() for _ in range(N_THREADS)]
    start = threading.Barrier(N_THREADS)
    errors = []

    def work(store):
        try:
            start.wait()
            for _ in range(N_UPDATES):
                store.update_evidence("retired:a", _count_up)
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(s,)) for s in stores]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert errors == []
    assert stores[0].load_evidence("retired:a") == str(N_THREADS * N_UPDATES).encode()


def _process_writer(path: str) -> None:
    store = SQLiteStore(path, busy_timeout=30)
    for _ in range(N_UPDATES):
        store.update_evidence("retired:a", _count_up)
    store.close()


def test_sqlite_processes_lose_no_update(tmp_path):
    path = str(tmp_path / "shared.db")
    SQLiteStore(path).close()
    ctx = mp.get_context("forkserver")
    ctx.set_forkserver_preload(["rated.store.sqlite"])
    procs = [ctx.Process(target=_process_writer, args=(path,)) for _ in range(3)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    with SQLiteStore(path) as store:
        assert store.load_evidence("retired:a") == str(3 * N_UPDATES).encode()


def test_sqlite_file_without_the_table_opens_unchanged_and_makes_it_on_first_update(tmp_path):
    path = tmp_path / "old.db"
    SQLiteStore(path).close()
    names = lambda: {r[0] for r in sqlite3.connect(path).execute("SELECT name FROM sqlite_master")}  # noqa: E731
    assert "evidence" not in names()  # opening writes no new table: older files stay as they were
    with SQLiteStore(path, create=False) as store:
        assert store.load_evidence("retired:a") is None
        assert "evidence" not in names()
        store.update_evidence("retired:a", _count_up)
    assert "evidence" in names()
    with SQLiteStore(path, create=False) as store:
        assert store.load_evidence("retired:a") == b"1"


def test_a_failing_update_saves_nothing(make_store):
    store = make_store()
    store.update_evidence("retired:a", _count_up)

    def fail(blob):
        raise RuntimeError("no")

    with pytest.raises(RuntimeError):
        store.update_evidence("retired:a", fail)
    assert store.load_evidence("retired:a") == b"1"


def _put(store, ids):
    store.put_tools(
        ids, [f'{{"id": "{i}"}}' for i in ids], np.ones((len(ids), 3), np.float32), np.ones(len(ids))
    )


def _gather(store, *keys):
    for key in keys:
        store.update_evidence(key, _count_up)


def test_removing_a_tool_drops_its_evidence_and_keeps_the_others(make_store):
    store, other = make_store(), make_store()
    _put(store, ["a", "b", "a:x", "c"])
    _gather(store, "retired:a", "other:a", "retired:b", "retired:a:x", "retired:c")
    store.delete_tools(["a"], keep_one=True)
    # another connection: what is gone is gone from the store, not from one connection's view
    assert other.load_evidence("retired:a") is None
    assert other.load_evidence("other:a") is None  # every kind of evidence about the tool
    assert other.load_evidence("retired:b") == b"1"
    assert other.load_evidence("retired:a:x") == b"1"  # another tool, whose id only starts alike
    store.put_tools(["a"], ['{"id": "a"}'], np.ones((1, 3), np.float32), np.ones(1), delete=["b"])
    assert other.load_evidence("retired:b") is None  # removed in the change that added "a"
    assert other.load_evidence("retired:c") == b"1"
    store.update_evidence("retired:a", _count_up)
    assert other.load_evidence("retired:a") == b"1"  # the tool added again starts with none
    store.delete_tools(["a:x", "c"])
    assert [other.load_evidence(k) for k in ("retired:a:x", "retired:c")] == [None, None]


def test_an_id_added_anew_starts_without_what_a_late_writer_left_under_it(make_store):
    """A writer that found a tool before another removed it (a feedback racing ``delete_tools``) writes its
    state and evidence after the removal; the change that adds a tool under that id drops them, while a
    tool replaced in place keeps its own."""
    store, late = make_store(), make_store()
    _put(store, ["a", "b", "c"])
    store.delete_tools(["a"])
    late.update_states(["a", "b"], lambda current: {"a": b"late", "b": b"kept"})
    _gather(late, "retired:a", "other:a", "retired:b")
    _put(store, ["b", "a"])  # b replaced in place, a added anew
    assert late.load_states(["a", "b"]) == {"b": b"kept"}
    assert [late.load_evidence(k) for k in ("retired:a", "other:a", "retired:b")] == [None, None, b"1"]
    store.delete_tools(["a"])
    late.update_states(["a"], lambda current: {"a": b"late"})
    _gather(late, "retired:a")
    store.put_tools(
        ["a"], ['{"id": "a"}'], np.ones((1, 3), np.float32), np.ones(1), new_only=True, delete=["c"]
    )
    assert late.load_states(["a"]) == {} and late.load_evidence("retired:a") is None


def test_a_rebuild_and_clear_drop_all_evidence(make_store):
    store, other = make_store(), make_store()
    _put(store, ["a", "b"])
    _gather(store, "retired:a", "retired:b")
    store.replace_catalog(["a"], ['{"id": "a"}'], np.ones((1, 3), np.float32), np.ones(1), None, {"k": 1})
    assert [other.load_evidence(k) for k in ("retired:a", "retired:b")] == [None, None]
    _gather(store, "retired:a")
    assert other.load_evidence("retired:a") == b"1"  # counted from nothing again
    store.clear()
    assert other.load_evidence("retired:a") is None
    _gather(store, "retired:a")
    assert other.load_evidence("retired:a") == b"1"


def test_removing_tools_of_a_file_that_never_gathered_evidence_makes_no_table(tmp_path):
    path = tmp_path / "old.db"
    names = lambda: {r[0] for r in sqlite3.connect(path).execute("SELECT name FROM sqlite_master")}  # noqa: E731
    with SQLiteStore(path) as store:
        _put(store, ["a", "b", "c"])
        store.delete_tools(["a"])
        store.put_tools(["d"], ['{"id": "d"}'], np.ones((1, 3), np.float32), np.ones(1), delete=["b"])
        store.replace_catalog(["a"], ['{"id": "a"}'], np.ones((1, 3), np.float32), np.ones(1), None, {})
        store.clear()
    assert "evidence" not in names()


def test_load_evidence_many_reads_the_keys_that_have_a_blob(make_store):
    store, other = make_store(), make_store()
    assert store.load_evidence_many([]) == {} and store.load_evidence_many(["retired:a"]) == {}
    keys = [f"retired:t{i}" for i in range(1200)]  # more than one SQLite statement's bound parameters
    _gather(store, *keys[::2], "retired:a:x")
    found = other.load_evidence_many([*keys, "retired:a", "retired:a:x", keys[0]])
    assert found == {**{k: b"1" for k in keys[::2]}, "retired:a:x": b"1"}
    assert found == {k: other.load_evidence(k) for k in found}  # as read one by one


def test_load_evidence_many_of_a_file_that_never_gathered_evidence_makes_no_table(tmp_path):
    path = tmp_path / "old.db"
    SQLiteStore(path).close()
    with SQLiteStore(path, create=False) as store:
        assert store.load_evidence_many(["retired:a"]) == {}
    assert "evidence" not in {r[0] for r in sqlite3.connect(path).execute("SELECT name FROM sqlite_master")}
