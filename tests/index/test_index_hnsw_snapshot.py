"""HNSW graph snapshots: a graph attached to its stored vectors searches bit for bit as the index that was
built, only the pool it was built on under the same faiss settings gets it, and a damaged, foreign or
hostile blob is refused (never half-used, never handed to faiss unchecked)."""

import dataclasses
import io

import faiss
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rated.errors import ConfigError
from rated.index import hnsw_snapshot
from rated.index.dense import DenseIndex
from rated.index.semantic import DEFAULT_SEMANTIC

HNSW = DEFAULT_SEMANTIC.with_(dense_kind="hnsw")
N, DIM = 1500, 16


def unit(n: int, seed: int) -> np.ndarray:
    v = np.random.default_rng(seed).standard_normal((n, DIM)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def ids(n: int = N) -> list[str]:
    return [f"t{i}" for i in range(n)]


def build(n: int = N, **options) -> DenseIndex:
    index = DenseIndex(DIM, kind="hnsw", **options)
    index.add(ids(n), unit(n, 0))
    return index


@pytest.fixture(scope="module")
def built() -> DenseIndex:
    return build()


@pytest.fixture(scope="module")
def blob(built) -> bytes:
    return hnsw_snapshot.dump(built)


@pytest.fixture(scope="module")
def small() -> DenseIndex:
    return build(400)


def refuse_graph_builds(monkeypatch) -> None:
    """From now on, fail on any insertion into an HNSW graph: a restore only attaches one."""

    def refuse(self, *args, **kwargs):
        raise AssertionError("an HNSW graph was built")

    monkeypatch.setattr(faiss.IndexHNSWFlat, "add", refuse)


def assert_same_search(a: DenseIndex, b: DenseIndex) -> None:
    queries = unit(300, 7)
    for k in (1, 10, 60):
        pa, sa = a.search_many(queries, k)
        pb, sb = b.search_many(queries, k)
        np.testing.assert_array_equal(pa, pb)
        np.testing.assert_array_equal(sa, sb)  # to the last bit


def assert_same_graph(a: DenseIndex, b: DenseIndex) -> None:
    ga, gb = a.graph(), b.graph()
    assert (ga.m, ga.ef_construction, ga.entry_point, ga.max_level) == (
        gb.m,
        gb.ef_construction,
        gb.entry_point,
        gb.max_level,
    )
    np.testing.assert_array_equal(ga.levels, gb.levels)
    np.testing.assert_array_equal(ga.neighbors, gb.neighbors)


def test_an_attached_graph_searches_bit_for_bit_as_the_built_index(monkeypatch):
    built = build(ef_search=16)  # a small beam: the graph's approximation shows
    exact = DenseIndex(DIM)
    exact.add(ids(), unit(N, 0))
    refuse_graph_builds(monkeypatch)
    attached = DenseIndex(DIM, kind="hnsw", ef_search=16)
    attached.attach(ids(), unit(N, 0), built.graph())
    assert attached.ids == built.ids and len(attached) == N
    np.testing.assert_array_equal(attached.vectors, built.vectors)
    assert_same_graph(attached, built)
    assert_same_search(attached, built)
    queries = unit(300, 7)  # what is compared is the graph's answer, not an exact scan's
    assert (attached.search_many(queries, 10)[0] != exact.search_many(queries, 10)[0]).any()


def test_a_restored_snapshot_answers_as_the_index_the_writer_built(built, blob, monkeypatch):
    refuse_graph_builds(monkeypatch)
    restored = hnsw_snapshot.restore(blob, HNSW, ids(), unit(N, 0))
    assert restored is not None and restored.ids == ids()
    assert (restored.kind, restored.hnsw_m, restored.ef_search) == ("hnsw", built.hnsw_m, built.ef_search)
    assert_same_graph(restored, built)
    assert_same_search(restored, built)
    assert len(blob) < 300 * N  # the links only: the vectors alone are 4 * 16 bytes a tool here


def test_a_restored_index_takes_removals_and_appends(small):
    restored = hnsw_snapshot.restore(hnsw_snapshot.dump(small), HNSW, ids(400), unit(400, 0))
    restored.remove(["t3"])  # the graph is rebuilt from the kept vectors
    restored.add(["new"], unit(1, 9))  # and grows
    assert restored.ids == [*ids(400)[:3], *ids(400)[4:], "new"]
    for tool_id in ("t0", "t399", "new"):
        position = restored.position(tool_id)
        assert int(restored.search(restored.vectors[position], 1)[0][0]) == position


def test_a_flat_or_empty_index_has_no_snapshot():
    flat = DenseIndex(DIM)
    flat.add(ids(5), unit(5, 0))
    assert hnsw_snapshot.dump(flat) is None
    assert hnsw_snapshot.dump(DenseIndex(DIM, kind="hnsw")) is None


def _pools():
    vecs, names = unit(N, 0), ids()
    nudged = vecs.copy()
    nudged[17, 3] = np.nextafter(nudged[17, 3], np.float32(2))  # one bit of one embedding
    swapped = names[:]
    swapped[4], swapped[5] = swapped[5], swapped[4]
    return {
        "ids in another order": (swapped, vecs),
        "an id renamed": (["x0", *names[1:]], vecs),
        "a tool appended": ([*names, "new"], np.vstack([vecs, unit(1, 9)])),
        "the last tool removed": (names[:-1], vecs[:-1]),
        "the first tool removed": (names[1:], vecs[1:]),
        "one embedding one bit off": (names, nudged),
        "other embeddings": (names, unit(N, 1)),
        "another dimension": (names, np.hstack([vecs, np.zeros((N, 1), np.float32)])),
    }


@pytest.mark.parametrize("change", list(_pools()))
def test_a_snapshot_of_another_pool_is_not_used(blob, change):
    names, vecs = _pools()[change]
    assert hnsw_snapshot.restore(blob, HNSW, names, vecs) is None


def test_a_pool_the_config_keeps_flat_gets_no_graph(blob):
    assert hnsw_snapshot.restore(blob, DEFAULT_SEMANTIC, ids(), unit(N, 0)) is None  # auto: flat here
    assert hnsw_snapshot.restore(blob, DEFAULT_SEMANTIC.with_(hnsw_threshold=N - 1), ids(), unit(N, 0))


def test_a_graph_built_under_other_settings_is_not_used(blob, monkeypatch):
    other_m = build(300, hnsw_m=16)
    assert hnsw_snapshot.restore(hnsw_snapshot.dump(other_m), HNSW, ids(300), unit(300, 0)) is None
    other_ef = DenseIndex(DIM, kind="hnsw")
    other_ef._faiss.hnsw.efConstruction = 80
    other_ef.add(ids(300), unit(300, 0))
    assert hnsw_snapshot.restore(hnsw_snapshot.dump(other_ef), HNSW, ids(300), unit(300, 0)) is None
    assert hnsw_snapshot.restore(blob, HNSW, ids(), unit(N, 0)) is not None
    monkeypatch.setattr(faiss, "__version__", "0.0.1")  # another faiss may lay its links out otherwise
    assert hnsw_snapshot.restore(blob, HNSW, ids(), unit(N, 0)) is None
    monkeypatch.undo()
    monkeypatch.setattr(hnsw_snapshot, "FORMAT", hnsw_snapshot.FORMAT + 1)
    assert hnsw_snapshot.restore(blob, HNSW, ids(), unit(N, 0)) is None


def _compressed(blob: bytes) -> bytes:
    with np.load(io.BytesIO(blob)) as saved:
        arrays = {name: saved[name] for name in saved.files}
    out = io.BytesIO()
    np.savez_compressed(out, **arrays)
    return out.getvalue()


def _flipped(blob: bytes, built: DenseIndex) -> bytes:
    at = blob.index(built.graph().neighbors[:64].tobytes()) + 100  # inside the neighbour slots
    return blob[:at] + bytes([blob[at] ^ 1]) + blob[at + 1 :]


def test_a_damaged_or_foreign_blob_is_ignored(built, blob):
    damaged = [b"", b"garbage", b"PK\x03\x04" + bytes(200), _compressed(blob), _flipped(blob, built)]
    damaged += [blob[:cut] for cut in range(0, len(blob), len(blob) // 40)]
    damaged.append(blob[: len(blob) - 1])
    for junk in damaged:
        assert hnsw_snapshot.restore(junk, HNSW, ids(), unit(N, 0)) is None
    assert hnsw_snapshot.restore(blob, HNSW, ids(), unit(N, 0)) is not None


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    edits=st.lists(st.tuples(st.floats(0, 1, exclude_max=True), st.integers(0, 255)), min_size=1, max_size=4)
)
def test_an_edited_blob_is_refused_or_still_the_same_graph(built, blob, edits):
    data = bytearray(blob)
    for where, value in edits:
        data[int(where * len(data))] = value
    restored = hnsw_snapshot.restore(bytes(data), HNSW, ids(), unit(N, 0))
    if restored is not None:  # only bytes nothing reads (zip metadata) were changed
        assert_same_graph(restored, built)


def _slot(graph, layer_slots, node: int, layer: int) -> int:
    """Where ``node``'s first neighbour on ``layer`` is kept in ``graph.neighbors``."""
    offsets = np.concatenate([[0], np.cumsum(np.array(layer_slots)[graph.levels])])
    return int(offsets[node]) + layer_slots[layer]


def _hostile(built: DenseIndex) -> dict[str, object]:
    g, cum = built.graph(), built.layer_slots
    top = int(np.flatnonzero(g.levels >= 2)[0])  # a node on layer 1
    low = int(np.flatnonzero(g.levels == 1)[0])  # a node on layer 0 only
    on_layer_1 = g.neighbors.copy()
    on_layer_1[_slot(g, cum, top, 1)] = low  # faiss would read low's layer-1 slots, which it has not
    past_end = g.neighbors.copy()
    past_end[-1] = N
    below = g.neighbors.copy()
    below[0] = -2
    levels_zero = g.levels.copy()
    levels_zero[low] = 0
    levels_high = g.levels.copy()
    levels_high[low] = len(cum)
    not_top = int(np.flatnonzero(g.levels < g.max_level + 1)[0])
    # a -1 before a link in one list: faiss's lists are filled from the front, and its add_link, finding
    # the last slot taken, computes a distance to every slot's node unchecked: vector -1, out of bounds
    hole_0, hole_1 = g.neighbors.copy(), g.neighbors.copy()
    hole_0[_slot(g, cum, low, 0)] = -1
    assert hole_0[_slot(g, cum, low, 0) + 1] >= 0
    first = _slot(g, cum, top, 1)
    assert (g.neighbors[first : first + 2] >= 0).all()
    hole_1[first] = -1
    return {
        "a hole before a link on layer 0": dataclasses.replace(g, neighbors=hole_0),
        "a hole before a link on an upper layer": dataclasses.replace(g, neighbors=hole_1),
        "an upper-layer neighbour off that layer": dataclasses.replace(g, neighbors=on_layer_1),
        "a neighbour past the last node": dataclasses.replace(g, neighbors=past_end),
        "a neighbour below -1": dataclasses.replace(g, neighbors=below),
        "a node on no layer": dataclasses.replace(g, levels=levels_zero),
        "a node above the top layer": dataclasses.replace(g, levels=levels_high),
        "too few slots": dataclasses.replace(g, neighbors=g.neighbors[:-1]),
        "too many slots": dataclasses.replace(g, neighbors=np.append(g.neighbors, np.int32(-1))),
        "too few nodes": dataclasses.replace(g, levels=g.levels[:-1]),
        "64-bit links": dataclasses.replace(g, neighbors=g.neighbors.astype(np.int64)),
        "a 2-d level array": dataclasses.replace(g, levels=g.levels.reshape(-1, 1)),
        "an entry point past the end": dataclasses.replace(g, entry_point=N),
        "an entry point below the top": dataclasses.replace(g, entry_point=not_top),
        "a wrong top layer": dataclasses.replace(g, max_level=g.max_level + 1),
        "another M": dataclasses.replace(g, m=16),
        "another efConstruction": dataclasses.replace(g, ef_construction=80),
    }


HOSTILE = [
    "a hole before a link on layer 0",
    "a hole before a link on an upper layer",
    "an upper-layer neighbour off that layer",
    "a neighbour past the last node",
    "a neighbour below -1",
    "a node on no layer",
    "a node above the top layer",
    "too few slots",
    "too many slots",
    "too few nodes",
    "64-bit links",
    "a 2-d level array",
    "an entry point past the end",
    "an entry point below the top",
    "a wrong top layer",
]


@pytest.mark.parametrize("case", [*HOSTILE, "another M", "another efConstruction"])
def test_a_graph_faiss_could_walk_out_of_bounds_is_refused(small, case, monkeypatch):
    graph = _hostile(small)[case]
    fresh = DenseIndex(DIM, kind="hnsw")
    with pytest.raises(ConfigError, match="does not fit"):
        fresh.attach(ids(400), unit(400, 0), graph)
    assert len(fresh) == 0 and fresh._faiss.ntotal == 0  # nothing changed
    if case in HOSTILE:  # a blob carrying it (its checksums made for it) is not used either
        monkeypatch.setattr(DenseIndex, "graph", lambda self: graph)
        data = hnsw_snapshot.dump(small)
        monkeypatch.undo()
        assert hnsw_snapshot.restore(data, HNSW, ids(400), unit(400, 0)) is None


def test_attach_needs_an_empty_hnsw_index(built):
    flat = DenseIndex(DIM)
    with pytest.raises(ConfigError, match="empty HNSW"):
        flat.attach(ids(), unit(N, 0), built.graph())
    with pytest.raises(ConfigError, match="empty HNSW"):
        built.attach(ids(), unit(N, 0), built.graph())
