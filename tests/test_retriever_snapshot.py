"""The retriever saves its lexical index with the catalog and a later open restores it instead of reading
every tool's text again, answering exactly as a build from scratch; the snapshot is a cache: a damaged,
stale or unsavable one never changes an answer nor fails a request."""

import pytest

from rated import Tool
from rated.encode.testing import HashEncoder
from rated.errors import StoreBusyError
from rated.index import semantic, snapshot
from rated.retriever import Retriever
from rated.store.sqlite import SQLiteStore

QUERIES = ["send an email message", "weather forecast for Oslo", "create a calendar event", "translate"]
TOPICS = ["send email message", "weather forecast city", "calendar event create", "translate text language"]


def tools(n: int, start: int = 0) -> list[Tool]:
    return [
        Tool(id=f"t{i}", name=f"tool_{i}", description=f"{TOPICS[i % 4]} variant {i}", provider=f"p{i % 3}")
        for i in range(start, start + n)
    ]


def answers(r: Retriever) -> list[list[tuple[str, float]]]:
    return [[(h.id, h.score, h.semantic) for h in r.retrieve(q, k=6)] for q in QUERIES]


def from_scratch(db) -> list:
    """What a process answers that builds the index itself (no snapshot to read)."""
    with Retriever.open(db) as r:
        r.store.load_cached = lambda name: None
        r.store.save_cached = lambda name, data: None
        return answers(r)


@pytest.fixture
def texts_read(monkeypatch) -> list[str]:
    """Ids of the tools whose lexical text was built (by a build or by following a snapshot)."""
    read: list[str] = []

    def counted(real):
        def text(tool, config):
            if tool.id != "probe":  # the snapshot fingerprint's own probe tool
                read.append(tool.id)
            return real(tool, config)

        return text

    for module in (semantic, snapshot):
        monkeypatch.setattr(module, "lexical_text", counted(module.lexical_text))
    return read


@pytest.mark.parametrize("lexical", ["tfidf", "bm25"])
def test_an_open_restores_the_saved_lexical_index_and_answers_as_a_build(tmp_path, texts_read, lexical):
    db = tmp_path / "s.db"
    config = {"lexical": lexical, "lexical_norm": "max" if lexical == "bm25" else "none"}
    Retriever.from_catalog(tools(20), db=db, encoder=HashEncoder(64), semantic=config).close()
    assert len(texts_read) == 20  # the writer built it once and saved it
    assert SQLiteStore(db).load_cached(snapshot.NAME) is not None
    texts_read.clear()
    with Retriever.open(db) as r:
        got = answers(r)
    assert texts_read == []  # restored: no tool's text was read
    assert got == from_scratch(db)


def test_a_replica_opening_after_adds_and_removals_reads_only_the_new_tools(tmp_path, texts_read):
    db = tmp_path / "s.db"
    Retriever.from_catalog(tools(20), db=db, encoder=HashEncoder(64)).close()
    with Retriever.open(db) as writer:
        writer.add_tools(tools(1, start=50))
        writer.remove_tools(["t3"])
    texts_read.clear()
    with Retriever.open(db) as r:
        got = answers(r)
    assert texts_read == ["t50"]
    assert got == from_scratch(db)


def test_a_snapshot_far_behind_is_saved_again(tmp_path, texts_read):
    db = tmp_path / "s.db"
    Retriever.from_catalog(tools(10), db=db, encoder=HashEncoder(64)).close()
    with Retriever.open(db) as writer:
        writer.add_tools(tools(5, start=50))  # half the pool again: the next open re-saves
    texts_read.clear()
    with Retriever.open(db) as r:
        r.retrieve(QUERIES[0])
    assert len(texts_read) == 5
    texts_read.clear()
    with Retriever.open(db) as r:
        r.retrieve(QUERIES[0])
    assert texts_read == []


def test_a_damaged_or_foreign_snapshot_is_ignored_and_replaced(tmp_path, texts_read):
    db = tmp_path / "s.db"
    Retriever.from_catalog(tools(12), db=db, encoder=HashEncoder(64)).close()
    expected = from_scratch(db)
    for junk in (b"garbage", SQLiteStore(db).load_cached(snapshot.NAME)[:-50]):
        SQLiteStore(db).save_cached(snapshot.NAME, junk)
        texts_read.clear()
        with Retriever.open(db) as r:
            assert answers(r) == expected
        assert len(texts_read) == 12  # built from the texts, and saved again
        assert SQLiteStore(db).load_cached(snapshot.NAME) != junk


def test_a_rebuild_with_other_lexical_settings_does_not_use_the_old_snapshot(tmp_path):
    db = tmp_path / "s.db"
    Retriever.from_catalog(tools(12), db=db, encoder=HashEncoder(64)).close()
    Retriever.from_catalog(
        tools(12), db=db, encoder=HashEncoder(64), overwrite=True, semantic={"stem": False}
    ).close()
    with Retriever.open(db) as r:
        assert answers(r) == from_scratch(db)


def test_a_store_that_cannot_save_the_snapshot_still_answers(tmp_path, monkeypatch):
    def busy(self, name, data):
        raise StoreBusyError("locked")

    monkeypatch.setattr(SQLiteStore, "save_cached", busy)
    db = tmp_path / "s.db"
    Retriever.from_catalog(tools(8), db=db, encoder=HashEncoder(64)).close()
    with Retriever.open(db) as r:
        assert answers(r) == from_scratch(db)
    assert SQLiteStore(db).load_cached(snapshot.NAME) is None


def test_an_older_database_without_the_cache_table_opens_and_gains_it(tmp_path):
    import sqlite3

    db = tmp_path / "s.db"
    Retriever.from_catalog(tools(8), db=db, encoder=HashEncoder(64)).close()
    with sqlite3.connect(db) as conn:
        conn.execute("DROP TABLE cached")
    assert SQLiteStore(db, create=False).load_cached(snapshot.NAME) is None
    with Retriever.open(db) as r:
        assert answers(r) == from_scratch(db)
    assert SQLiteStore(db, create=False).load_cached(snapshot.NAME) is not None


def test_a_first_search_does_not_wait_out_another_writers_lock_to_save_the_snapshot(tmp_path):
    import sqlite3
    import time

    db = tmp_path / "s.db"
    Retriever.from_catalog(tools(12), db=db, encoder=HashEncoder(64)).close()
    expected = from_scratch(db)
    other = sqlite3.connect(db, isolation_level=None)
    other.execute("DELETE FROM cached")  # no snapshot: the first search builds the index and saves one
    other.execute("BEGIN IMMEDIATE")  # another process's long write holds the lock
    try:
        with Retriever.open(db, busy_timeout=3) as r:
            start = time.monotonic()
            got = answers(r)
            took = time.monotonic() - start
    finally:
        other.execute("ROLLBACK")
        other.close()
    assert got == expected
    assert took < 1.5  # was busy_timeout (3 s): the save waited for the lock inside the first search


def test_a_cached_table_this_rated_cannot_read_never_fails_a_search(tmp_path):
    import sqlite3

    db = tmp_path / "s.db"
    Retriever.from_catalog(tools(8), db=db, encoder=HashEncoder(64)).close()
    expected = from_scratch(db)
    with sqlite3.connect(db) as conn:  # e.g. laid out by another rated version
        conn.execute("DROP TABLE cached")
        conn.execute("CREATE TABLE cached (name TEXT PRIMARY KEY, blob BLOB)")
    with Retriever.open(db) as r:
        assert answers(r) == expected


def test_a_snapshot_made_by_other_text_code_of_the_same_version_is_not_used(tmp_path, monkeypatch):
    """Two builds of one rated version (checkouts of two commits) whose lexical text differs where the
    fingerprint's probe tool never goes: a flat parameter map (the probe's parameters have "properties")."""
    import importlib.util
    import sys
    from pathlib import Path

    import rated.catalog.text as text

    db = tmp_path / "s.db"
    flat = [
        Tool(
            id=t.id,
            name=t.name,
            description=t.description,
            parameters={"city": {"description": f"zebra {i}"}},
        )
        for i, t in enumerate(tools(12))
    ]
    Retriever.from_catalog(flat, db=db, encoder=HashEncoder(64)).close()
    # the other build: the same text module, but a flat map's parameters are not read
    source = Path(text.__file__).read_text(encoding="utf-8")
    line = "        props = {k: v for k, v in parameters.items() if k not in "
    assert source.count(line) == 1
    other = tmp_path / "text.py"
    other.write_text(
        source.replace(line, "        props = {} and {k: v for k, v in parameters.items() if k not in ")
    )
    spec = importlib.util.spec_from_file_location("other_text", other)
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "other_text", module)
    spec.loader.exec_module(module)
    monkeypatch.setattr(text, "__file__", str(other))
    monkeypatch.setattr(text, "parameter_items", module.parameter_items)
    snapshot.fingerprint.cache_clear()
    try:
        queries = ["zebra city 3", "send email zebra", "weather city"]
        with Retriever.open(db) as r:
            got = [[(h.id, h.score, h.semantic) for h in r.retrieve(q, k=6)] for q in queries]
        with Retriever.open(db) as r:
            r.store.load_cached = lambda name: None
            expected = [[(h.id, h.score, h.semantic) for h in r.retrieve(q, k=6)] for q in queries]
    finally:
        snapshot.fingerprint.cache_clear()
    assert got == expected
