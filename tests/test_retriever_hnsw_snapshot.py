"""Above ``hnsw_threshold`` the writer builds the HNSW graph once and saves it with the catalog, and again
with each of its own adds and removals; a process opening the store (or a replica following the change)
attaches it to the stored embeddings instead of building it, and answers exactly as the writer; a graph of
another pool, or a damaged one, is ignored (built again and saved), never used, and a pool that no longer
uses a graph drops the saved one."""

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
def test_a_writers_change_saves_the_graph_it_holds_and_an_open_attaches_it(tmp_path, builds, change):
    db = tmp_path / "g.db"
    Retriever.from_catalog(tools(90), db=db, encoder=HashEncoder(64), semantic=SEMANTIC).close()
    old = saved_graph(db)
    builds.clear()
    with Retriever.open(db) as writer:
        if change == "add":
            writer.add_tools(tools(1, start=500))
        else:
            writer.remove_tools(["t7"])
        # the opened graph grown by one tool, or the kept tools' graph rebuilt: the writer's only build
        assert builds == ([1] if change == "add" else [89])
        assert saved_graph(db) not in (None, old)  # the new pool's graph, saved with the change
        expected, held = answers(writer), writer.index.dense.graph()
    builds.clear()
    with Retriever.open(db) as reader:
        assert len(reader) == (91 if change == "add" else 89)
        assert answers(reader) == expected  # the writer's graph: the same hits, scores to the last bit
        restored = reader.index.dense.graph()
    assert builds == []  # attached, not built
    assert (restored.levels.tolist(), restored.neighbors.tolist()) == (
        held.levels.tolist(),
        held.neighbors.tolist(),
    )


def test_a_replica_attaches_the_graph_saved_after_a_removal_instead_of_rebuilding_it(tmp_path, builds):
    db = tmp_path / "g.db"
    Retriever.from_catalog(tools(90), db=db, encoder=HashEncoder(64), semantic=SEMANTIC).close()
    with Retriever.open(db) as writer, Retriever.open(db) as replica:
        replica.retrieve(QUERIES[0])  # its index, on the graph saved with the catalog
        writer.remove_tools(["t7", "t8"])
        builds.clear()
        assert answers(replica) == answers(writer)  # followed the removal by attaching the writer's graph
        assert "t7" not in {h.id for h in replica.retrieve("send email message variant 7", k=20)}
    assert builds == []


def test_a_change_crossing_the_threshold_up_builds_and_saves_the_graph(tmp_path, builds):
    db = tmp_path / "g.db"
    semantic = {"hnsw_threshold": 3}
    with Retriever.from_catalog(tools(3), db=db, encoder=HashEncoder(64), semantic=semantic) as writer:
        assert writer.index.dense.kind == "flat" and saved_graph(db) is None
        writer.add_tools(tools(2, start=3))
        assert writer.index.dense.kind == "hnsw"  # as a process opening the store now builds it
        assert builds == [5] and saved_graph(db) is not None
        expected = answers(writer)
    builds.clear()
    with Retriever.open(db) as reader:
        assert answers(reader) == expected and reader.index.dense.kind == "hnsw"
    assert builds == []


@pytest.mark.parametrize("how", ["remove", "sync", "rebuild", "rebuild flat"])
def test_a_pool_no_longer_on_a_graph_drops_the_saved_one(tmp_path, how):
    db = tmp_path / "g.db"
    semantic = {"hnsw_threshold": 3}
    encoder = HashEncoder(64)
    with Retriever.from_catalog(tools(5), db=db, encoder=encoder, semantic=semantic) as writer:
        assert writer.index.dense.kind == "hnsw" and saved_graph(db) is not None
        if how == "remove":
            writer.remove_tools(["t0", "t1"])
        elif how == "sync":
            writer.sync_tools(tools(3), prune=True)
        if how.startswith("remove") or how == "sync":
            assert len(writer) == 3 and writer.index.dense.kind == "flat"
    if how == "rebuild":  # a smaller catalog replaces the index
        Retriever.from_catalog(tools(2), db=db, encoder=encoder, semantic=semantic, overwrite=True).close()
    elif how == "rebuild flat":  # the same catalog, rebuilt with a flat dense part
        flat = {"dense_kind": "flat"}
        Retriever.from_catalog(tools(5), db=db, encoder=encoder, semantic=flat, overwrite=True).close()
    assert saved_graph(db) is None


def test_a_writer_that_another_change_overtook_saves_nothing(tmp_path, builds, monkeypatch):
    """The other writer's change lands between this writer's refresh and its own change: the index this
    writer holds is then not the stored catalog, and the graph saved for the other writer's catalog is
    left as it is; the next open builds the graph of the catalog stored now (a graph is attached to its
    own pool only), never uses another."""
    db = tmp_path / "g.db"
    Retriever.from_catalog(tools(90), db=db, encoder=HashEncoder(64), semantic=SEMANTIC).close()
    with Retriever.open(db) as late, Retriever.open(db) as other:
        late.retrieve(QUERIES[0])
        delete = late.store.delete_tools

        def overtaken(ids, **kwargs):
            nonlocal other_graph
            other.add_tools(tools(1, start=500))
            other_graph = saved_graph(db)
            return delete(ids, **kwargs)

        other_graph = None

        with monkeypatch.context() as patch:
            patch.setattr(late.store, "delete_tools", overtaken)
            late.remove_tools(["t7"])
        assert saved_graph(db) == other_graph  # the other writer's, of tools(90) and t500
        builds.clear()
        with Retriever.open(db) as fresh:
            expected = answers(fresh)
        assert builds == [90]  # tools(90) - t7 + t500: no graph of it was saved, none other is used
        assert answers(late) == expected  # the late writer reloaded the stored catalog too


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
    def busy(self, name, data, **kwargs):
        raise StoreBusyError("locked")

    monkeypatch.setattr(SQLiteStore, "save_cached", busy)
    db = tmp_path / "g.db"
    with Retriever.from_catalog(tools(60), db=db, encoder=HashEncoder(64), semantic=SEMANTIC) as writer:
        expected = answers(writer)
    monkeypatch.undo()
    assert saved_graph(db) is None
    with Retriever.open(db) as r:
        assert len(answers(r)) == len(expected)


def test_a_graph_built_while_a_writer_changed_the_catalog_does_not_replace_the_writers(
    tmp_path, builds, monkeypatch
):
    """A reader builds the graph of the catalog it read (seconds for a large one) while a writer adds a
    tool and saves the graph of the new catalog: the reader's, of a catalog no longer stored, is not saved
    over it, and the next open attaches the writer's."""
    db = tmp_path / "g.db"
    Retriever.from_catalog(tools(60), db=db, encoder=HashEncoder(64), semantic=SEMANTIC).close()
    with Retriever.open(db) as writer, Retriever.open(db) as reader:
        writer.retrieve(QUERIES[0])  # its index, on the saved graph
        SQLiteStore(db).delete_cached(hnsw_snapshot.NAME)  # the reader must build one
        add, writers_graph = faiss.IndexHNSWFlat.add, []

        def add_meanwhile(self, x, *args, **kwargs):
            if not writers_graph:  # the reader's build: the writer's change lands meanwhile
                writers_graph.append(None)
                writer.add_tools(tools(1, start=500))
                writers_graph[0] = saved_graph(db)
            return add(self, x, *args, **kwargs)

        with monkeypatch.context() as patch:
            patch.setattr(faiss.IndexHNSWFlat, "add", add_meanwhile)
            reader.retrieve(QUERIES[0])
        assert writers_graph[0] is not None and saved_graph(db) == writers_graph[0]
        expected = answers(writer)
        assert answers(reader) == expected  # the reader follows by attaching the writer's graph
    builds.clear()
    with Retriever.open(db) as fresh:
        assert answers(fresh) == expected
    assert builds == []
