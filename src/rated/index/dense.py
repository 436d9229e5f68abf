"""Dense inner-product index over unit-norm embeddings (faiss): exact by default, HNSW for large pools.

The vectors are kept in a numpy array beside the faiss index, so tools can be added and removed without
re-encoding the others (removal rebuilds the faiss structure from the stored vectors), and the exact score
of any tool for a query is one dot product (used when fusing with lexical candidates). An HNSW graph can
be exported without its vectors (``graph``) and attached to them again (``attach``) instead of being built:
that is how ``rated.index.hnsw_snapshot`` spares every process that opens a large catalog the build.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import faiss
import numpy as np

from rated.errors import ConfigError, UnknownToolError
from rated.index.ids import check_known_ids, check_new_ids

__all__ = ["DenseIndex", "HnswGraph"]


@dataclass(frozen=True)
class HnswGraph:
    """An HNSW graph without its vectors, in faiss's layout: node ``i`` lives on layers ``0 ..
    levels[i] - 1`` and its neighbours on layer ``l`` are ``neighbors[offsets[i] + cum[l] : offsets[i] +
    cum[l + 1]]`` (-1 ends a list), where ``cum`` follows from ``m`` and ``offsets`` from ``levels`` and
    ``cum``. ``ef_construction`` is what the graph was built with, ``entry_point`` its top node."""

    m: int
    ef_construction: int
    entry_point: int
    max_level: int
    levels: np.ndarray  # int32 (n,)
    neighbors: np.ndarray  # int32 (offsets[-1],)


class DenseIndex:
    """Inner-product search over ``(n, dim)`` float32 vectors, each under a string id.

    ``kind="flat"`` is exact (faiss ``IndexFlatIP``); ``kind="hnsw"`` is approximate (``IndexHNSWFlat`` with
    inner product), for pools of hundreds of thousands of tools. Positions returned by ``search`` index
    ``ids`` as it is now; they shift when tools are removed.

    >>> idx = DenseIndex(dim=2)
    >>> idx.add(["a", "b"], np.array([[1, 0], [0.6, 0.8]], dtype=np.float32))
    >>> pos, scores = idx.search(np.array([0.0, 1.0], dtype=np.float32), 1)
    >>> idx.ids[int(pos[0])], round(float(scores[0]), 2)
    ('b', 0.8)
    """

    def __init__(self, dim: int, kind: str = "flat", hnsw_m: int = 32, ef_search: int = 128):
        if kind not in ("flat", "hnsw"):
            raise ConfigError(f"unknown dense index kind {kind!r}; expected 'flat' or 'hnsw'")
        if dim < 1:
            raise ConfigError(f"embedding dim must be positive, got {dim}")
        self.dim = int(dim)
        self.kind = kind
        self.hnsw_m = int(hnsw_m)
        self.ef_search = int(ef_search)
        self._ids: list[str] = []
        self._pos: dict[str, int] = {}
        self._vecs = np.zeros((0, self.dim), dtype=np.float32)
        self._faiss = self._new_faiss()

    def _new_faiss(self) -> faiss.Index:
        if self.kind == "flat":
            return faiss.IndexFlatIP(self.dim)
        index = faiss.IndexHNSWFlat(self.dim, self.hnsw_m, faiss.METRIC_INNER_PRODUCT)
        index.hnsw.efSearch = self.ef_search
        return index

    def __len__(self) -> int:
        return len(self._ids)

    @property
    def ef_construction(self) -> int:
        """faiss's ``efConstruction`` for an HNSW index (0 for a flat one)."""
        index = self._faiss  # an IndexHNSWFlat exactly when kind == "hnsw"
        return int(index.hnsw.efConstruction) if isinstance(index, faiss.IndexHNSW) else 0

    @property
    def layer_slots(self) -> list[int]:
        """faiss's ``cum_nneighbor_per_level`` for an HNSW index (where each layer's neighbours start in a
        node's slots; it follows from ``hnsw_m``), ``[]`` for a flat one."""
        index = self._faiss
        return (
            faiss.vector_to_array(index.hnsw.cum_nneighbor_per_level).tolist()
            if isinstance(index, faiss.IndexHNSW)
            else []
        )

    def graph(self) -> HnswGraph | None:
        """The HNSW graph's links (copies), ``None`` for a flat or empty index."""
        index = self._faiss
        if not isinstance(index, faiss.IndexHNSW) or not len(self):
            return None
        hnsw = index.hnsw
        return HnswGraph(
            m=self.hnsw_m,
            ef_construction=self.ef_construction,
            entry_point=int(hnsw.entry_point),
            max_level=int(hnsw.max_level),
            levels=faiss.vector_to_array(hnsw.levels),
            neighbors=faiss.vector_to_array(hnsw.neighbors),  # type: ignore[attr-defined]  # stubs lack it
        )

    def attach(self, ids: Sequence[str], vectors: np.ndarray, graph: HnswGraph) -> None:
        """Fill this empty HNSW index with ``vectors`` under ``ids``, linked by ``graph`` (what ``graph()``
        gave on the index ``add`` made of them) instead of building the links: then it searches exactly as
        that index. ``ConfigError``, and nothing changed, for a graph that is not one faiss can walk over
        these vectors with this index's settings (checked in full: faiss reads the links unchecked)."""
        index = self._faiss
        if not isinstance(index, faiss.IndexHNSW) or len(self):
            raise ConfigError("a graph is attached to an empty HNSW index only")
        arr = self._check(vectors, len(ids))
        check_new_ids(ids, {})
        offsets = self._check_graph(graph, len(ids))
        hnsw = index.hnsw
        faiss.copy_array_to_vector(graph.levels, hnsw.levels)
        # faiss's bundled stubs leave HNSW's offsets and neighbors out (faiss-cpu 1.15)
        faiss.copy_array_to_vector(offsets, hnsw.offsets)  # type: ignore[attr-defined]
        faiss.copy_array_to_vector(graph.neighbors, hnsw.neighbors)  # type: ignore[attr-defined]
        hnsw.entry_point, hnsw.max_level = graph.entry_point, graph.max_level
        index.storage.add(arr)  # the flat storage only appends the vectors: no links are made
        index.ntotal = len(ids)
        self._ids = list(ids)
        self._pos = {tool_id: p for p, tool_id in enumerate(self._ids)}
        self._vecs = arr.copy()

    def _check_graph(self, graph: HnswGraph, n: int) -> np.ndarray:
        """``graph``'s offsets (uint64) after checking that every link faiss will follow stays in bounds:
        each node on a layer that exists, each neighbour a node, on an upper layer one that reaches it."""

        def bad(why: str) -> ConfigError:
            return ConfigError(f"the HNSW graph does not fit this index: {why}")

        if (graph.m, graph.ef_construction) != (self.hnsw_m, self.ef_construction):
            raise bad(f"built with M={graph.m}, efConstruction={graph.ef_construction}")
        levels, neighbors = graph.levels, graph.neighbors
        for name, array in (("levels", levels), ("neighbors", neighbors)):
            if not isinstance(array, np.ndarray) or array.dtype != np.int32 or array.ndim != 1:
                raise bad(f"{name} is not a 1-d int32 array")
        cum = np.array(self.layer_slots, dtype=np.int64)
        if n < 1 or len(levels) != n:
            raise bad(f"{len(levels)} nodes for {n} vectors")
        if int(levels.min()) < 1 or int(levels.max()) > len(cum) - 1:
            raise bad("a node's layer count is out of range")
        if graph.max_level != int(levels.max()) - 1 or not 0 <= graph.entry_point < n:
            raise bad("the entry point or top layer does not match the nodes")
        if int(levels[graph.entry_point]) != graph.max_level + 1:
            raise bad("the entry point is not on the top layer")
        offsets = np.zeros(n + 1, dtype=np.uint64)
        np.cumsum(cum[levels], out=offsets[1:])
        if len(neighbors) != int(offsets[-1]):
            raise bad(f"{len(neighbors)} neighbour slots, the layers need {int(offsets[-1])}")
        if len(neighbors) and (int(neighbors.min()) < -1 or int(neighbors.max()) >= n):
            raise bad("a neighbour is not a node")
        # faiss fills each list from its first slot, -1 padding the rest, and relies on it: adding a tool,
        # its add_link takes a list whose last slot is used for a full one and measures the distance to
        # every slot's node unchecked, so a -1 before a link would be read as vector -1, before the storage
        list_starts = offsets[:-1, None].astype(np.int64) + cum[None, :-1]
        starts = np.zeros(len(neighbors), dtype=bool)
        starts[list_starts[np.arange(len(cum) - 1)[None, :] < levels[:, None]]] = True
        if ((neighbors[1:] >= 0) & (neighbors[:-1] == -1) & ~starts[1:]).any():
            raise bad("a neighbour list has a link after an empty slot")
        # every node is on layer 0; a neighbour on layer l >= 1 must be on it too, or faiss reads the
        # neighbour's slots for a layer it does not have (past its own, perhaps past the array)
        upper = np.flatnonzero(levels >= 2)
        if len(upper):
            counts = cum[levels[upper]] - cum[1]
            first = np.repeat(offsets[upper].astype(np.int64) + cum[1], counts)
            within = np.arange(int(counts.sum())) - np.repeat(np.cumsum(counts) - counts, counts)
            layer = np.searchsorted(cum, within + cum[1], side="right") - 1
            linked = neighbors[first + within]
            on = linked >= 0
            if (levels[linked[on]] <= layer[on]).any():
                raise bad("an upper-layer neighbour is not on that layer")
        return offsets

    @property
    def ids(self) -> list[str]:
        return list(self._ids)

    @property
    def vectors(self) -> np.ndarray:
        """The stored ``(n, dim)`` vectors, aligned with ``ids`` (read-only view)."""
        view = self._vecs.view()
        view.flags.writeable = False
        return view

    def _check(self, vectors: np.ndarray, n: int) -> np.ndarray:
        arr = np.ascontiguousarray(vectors, dtype=np.float32)
        if arr.ndim != 2 or arr.shape != (n, self.dim):
            raise ConfigError(f"expected embeddings of shape ({n}, {self.dim}), got {tuple(arr.shape)}")
        if not np.isfinite(arr).all():
            raise ConfigError("embeddings contain NaN or infinite values")
        return arr

    def add(self, ids: Sequence[str], vectors: np.ndarray) -> None:
        """Append tools; an id already present (or repeated in ``ids``) is an error."""
        arr = self._check(vectors, len(ids))
        check_new_ids(ids, self._pos)
        start = len(self._ids)
        for offset, tool_id in enumerate(ids):
            self._pos[tool_id] = start + offset
        self._ids.extend(ids)
        self._vecs = np.concatenate([self._vecs, arr]) if start else arr.copy()
        if len(arr):
            self._faiss.add(arr)

    def remove(self, ids: Sequence[str]) -> None:
        """Drop tools by id (unknown ids raise ``UnknownToolError``); the rest keep their vectors."""
        check_known_ids(ids, self._pos)
        drop = {self._pos[i] for i in ids}
        keep = np.array([p for p in range(len(self._ids)) if p not in drop], dtype=np.int64)
        self._ids = [self._ids[p] for p in keep]
        self._pos = {tool_id: p for p, tool_id in enumerate(self._ids)}
        self._vecs = self._vecs[keep] if len(keep) else np.zeros((0, self.dim), dtype=np.float32)
        self._faiss = self._new_faiss()
        if len(self._vecs):
            self._faiss.add(self._vecs)

    def position(self, tool_id: str) -> int:
        try:
            return self._pos[tool_id]
        except KeyError:
            raise UnknownToolError(tool_id) from None

    def search(self, query_vec: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """Top-``k`` positions (int64) and inner products (float32) for one query vector."""
        pos, scores = self.search_many(np.asarray(query_vec, dtype=np.float32).reshape(1, -1), k)
        return pos[0], scores[0]

    def search_many(self, query_vecs: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """Top-``k`` per row (``k`` is capped at the pool size)."""
        q = self._check(query_vecs, len(query_vecs))
        k = max(0, min(int(k), len(self._ids)))
        if k == 0:
            empty = np.zeros((len(q), 0))
            return empty.astype(np.int64), empty.astype(np.float32)
        scores, pos = self._faiss.search(q, k)
        return pos.astype(np.int64), scores.astype(np.float32)

    def scores(self, query_vecs: np.ndarray, positions: np.ndarray | None = None) -> np.ndarray:
        """Exact inner products: ``(n_queries, n_tools)``, or only at ``positions`` when given."""
        q = np.asarray(query_vecs, dtype=np.float32)
        if positions is not None and len(positions) * 4 > len(self._vecs):
            # most of the pool (a filter barring a few tools): gathering those rows copies about as many
            # bytes as scoring them reads, so score the whole pool and pick the positions
            return self.scores(q)[..., positions]
        vecs = self._vecs if positions is None else self._vecs[positions]
        if q.ndim == 2 and len(q) == 1 and q.shape[1] == self.dim:
            # one query: faiss's single-threaded SIMD kernel; BLAS's thread hand-off costs milliseconds on
            # a small, busy machine (measured: median 50 us, p99 8 ms) and einsum is slower
            vecs, query = np.ascontiguousarray(vecs), np.ascontiguousarray(q[0])
            out = np.empty(len(vecs), dtype=np.float32)
            # faiss's bundled stubs leave this SWIG function out (faiss-cpu 1.15)
            faiss.fvec_inner_products_ny(  # type: ignore[attr-defined]
                faiss.swig_ptr(out), faiss.swig_ptr(query), faiss.swig_ptr(vecs), self.dim, len(vecs)
            )
            return out[None, :]
        return q @ vecs.T
