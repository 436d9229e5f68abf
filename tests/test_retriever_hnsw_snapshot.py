"""Above ``hnsw_threshold`` the writer builds the HNSW graph once and saves it with the catalog; a process
opening the store attaches it to the stored embeddings instead of building it, and answers exactly as the
writer; a graph of another pool, or a damaged one, is ignored (built again and saved), never used."""

import faiss
import pytest

from rated import Tool
from rated.encode.testing import HashEncoder
from rated.errors import StoreBusyError
from rated.index import hnsw_snapshot
from rated.retriever import Retriever
from rated.store.sqlite import SQLiteStore

QUERIES = ["send an email message", "weather forecast for Oslo", "create a calendar event", "translate", "x"]
TOPICS = ["send email message", "weather forecast city", "calendar event create", "translate text language"]
# a graph above 40 tools, and few candidates per retriever: the graph's own answers decide the hits
SEMANTIC = {"hnsw_threshold": 40, "candidates": 4}


def tools(n: int, start: int = 0) -> list[Tool]:
    return [
        Tool(id=f"t{i}", name=f"tool_{i}", description=f"{TOPICS[i % 4]} variant {i}", provider=f"p{i % 3}")
        for i in range(start, start + n)
    ]


def answers(r: Retriever) -> list[list[tuple[str, float, float]]]:
    return [[(h.id, h.score, h.semantic) for h in r.retrieve(q, k=8)] for q in QUERIES]


@pytest.fixture
def builds(monkeypatch) -> list[int]:
    """Sizes of the batches inserted into an HNSW graph (each is a build or an append)."""
    sizes: list[int] = []
    add = faiss.IndexHNSWFlat.add

    def counted(self, x, *args, **kwargs):
        sizes.append(len(x))
        return add(self, x, *args, **kwargs)

    monkeypatch.setattr(faiss.IndexHNSWFlat, "add", counted)
    return sizes


def saved_graph(db) -> bytes | None:
    store = SQLiteStore(db)
    try:
        return store.load_cached(hnsw_snapshot.NAME)
    finally:
        store.close()


def put_graph(db, data: bytes) -> None:
    store = SQLiteStore(db)
    try:
        store.save_cached(hnsw_snapshot.NAME, data)
    finally:
        store.close()


def test_the_writer_builds_the_graph_once_and_an_open_attaches_it(tmp_path, builds):
    db = tmp_path / "g.db"
    with Retriever.from_catalog(tools(90), db=db, encoder=HashEncoder(64), semantic=SEMANTIC) as writer:
        assert builds == [90]  # once, for the index and its snapshot: no other step builds it
        assert writer.index.dense.kind == "hnsw" and saved_graph(db) is not None
        expected = answers(writer)
        with Retriever.open(db) as reader:
            got = answers(reader)
            restored, built = reader.index.dense.graph(), writer.index.dense.graph()
    assert builds == [90]  # the reader attached the saved graph
    assert got == expected  # the same hits, scores to the last bit
    assert (restored.levels.tolist(), restored.neighbors.tolist()) == (
        built.levels.tolist(),
        built.neighbors.tolist(),
    )


@pytest.mark.parametrize("change", ["add", "remove"])
def test_a_graph_of_the_pool_before_a_change_is_rebuilt_once_and_saved(tmp_path, builds, change):
    db = tmp_path / "g.db"
    Retriever.from_catalog(tools(90), db=db, encoder=HashEncoder(64), semantic=SEMANTIC).close()
    old = saved_graph(db)
    with Retriever.open(db) as writer:
        if change == "add":
            writer.add_tools(tools(1, start=500))
        else:
            writer.remove_tools(["t7"])
    builds.clear()
    with Retriever.open(db) as first:
        expected = answers(first)
    assert builds == [91 if change == "add" else 89]  # the saved graph lacks a tool or has one too many
    assert saved_graph(db) not in (None, old)  # the new pool's graph is saved
    builds.clear()
    with Retriever.open(db) as second:
        assert answers(second) == expected
    assert builds == []


def test_a_graph_of_other_embeddings_for_the_same_tools_is_not_used(tmp_path, builds):
    db = tmp_path / "g.db"
    Retriever.from_catalog(tools(60), db=db, encoder=HashEncoder(64), semantic=SEMANTIC).close()
    old = saved_graph(db)
    other = HashEncoder(64, seed=1)  # the same ids and records, other vectors
    Retriever.from_catalog(tools(60), db=db, encoder=other, semantic=SEMANTIC, overwrite=True).close()
    put_graph(db, old)  # as if the rebuild had not replaced it
    builds.clear()
    with Retriever.open(db, encoder=other) as r:
        r.retrieve(QUERIES[0])
    assert builds == [60]


def test_a_damaged_graph_never_fails_a_search_and_is_replaced(tmp_path, builds):
    db = tmp_path / "g.db"
    semantic = {"hnsw_threshold": 40}  # candidates cover the pool: any graph gives the same hits
    Retriever.from_catalog(tools(60), db=db, encoder=HashEncoder(64), semantic=semantic).close()
    good = saved_graph(db)
    with Retriever.open(db) as r:
        expected = answers(r)
    for junk in (b"", b"garbage", good[: len(good) // 2], good[:-1], good[:100] + bytes(len(good) - 100)):
        put_graph(db, junk)
        builds.clear()
        with Retriever.open(db) as r:
            assert answers(r) == expected
        assert builds == [60]  # built, and saved again
        assert saved_graph(db) != junk


def test_a_flat_pool_neither_reads_nor_saves_a_graph(tmp_path, monkeypatch):
    names: list[str] = []
    load = SQLiteStore.load_cached
    monkeypatch.setattr(SQLiteStore, "load_cached", lambda self, name: names.append(name) or load(self, name))
    db = tmp_path / "g.db"
    with Retriever.from_catalog(tools(40), db=db, encoder=HashEncoder(64), semantic=SEMANTIC) as r:
        assert r.index.dense.kind == "flat"
    with Retriever.open(db) as r:
        r.retrieve(QUERIES[0])
    assert hnsw_snapshot.NAME not in names and saved_graph(db) is None


def test_a_store_that_cannot_save_the_graph_still_answers(tmp_path, monkeypatch):
    def busy(self, name, data):
        raise StoreBusyError("locked")

    monkeypatch.setattr(SQLiteStore, "save_cached", busy)
    db = tmp_path / "g.db"
    with Retriever.from_catalog(tools(60), db=db, encoder=HashEncoder(64), semantic=SEMANTIC) as writer:
        expected = answers(writer)
    monkeypatch.undo()
    assert saved_graph(db) is None
    with Retriever.open(db) as r:
        assert len(answers(r)) == len(expected)
