"""Saved HNSW graphs: a process opening a catalog above ``hnsw_threshold`` attaches the graph another
process built to the stored embeddings instead of building it again (tens of seconds to minutes).

A snapshot holds the graph's links only (``DenseIndex.graph``: each node's layer count and its neighbour
slots, 264 bytes a tool with faiss's M=32), never the vectors, which the store already holds. It is
used only for the very pool it was built on: the same ids in the same order with bit-identical embeddings
(one SHA-256 over both), by the same faiss version with the same M and efConstruction (the fingerprint).
Anything else (another pool, tools added or removed since, embeddings of another encoder, a damaged or
foreign blob) is ignored and the graph built as usual; a graph whose links could lead faiss out of bounds
is refused whatever its checksums say (``DenseIndex.attach``). The restored index searches bit for bit as
the one the writer built.

>>> from rated.index.dense import DenseIndex
>>> from rated.index.semantic import DEFAULT_SEMANTIC
>>> hnsw = DEFAULT_SEMANTIC.with_(dense_kind="hnsw")
>>> built = DenseIndex(2, kind="hnsw")
>>> built.add(["a", "b"], np.array([[1, 0], [0.6, 0.8]], dtype=np.float32))
>>> restored = restore(dump(built), hnsw, ["a", "b"], built.vectors)
>>> restored.ids, restored.graph().levels.tolist() == built.graph().levels.tolist()
(['a', 'b'], True)
>>> restore(dump(built), hnsw, ["b", "a"], built.vectors) is None  # another pool
True
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING

import faiss
import numpy as np

from rated.index.dense import DenseIndex, HnswGraph
from rated.index.npzblob import from_json, json_array, open_npz, pack

if TYPE_CHECKING:  # for type hints only
    from rated.index.semantic import SemanticConfig

__all__ = ["FORMAT", "NAME", "dump", "fingerprint", "pool_digest", "restore"]

NAME = "hnsw-graph"  # the name a store keeps the snapshot under
FORMAT = 1
log = logging.getLogger(__name__)


def fingerprint(dense: DenseIndex) -> str:
    """What a graph must have been built under to be attached to ``dense``: format, faiss version, metric,
    M, efConstruction and faiss's layer layout for that M."""
    parts = [FORMAT, faiss.__version__, "ip", dense.hnsw_m, dense.ef_construction, dense.layer_slots]
    return hashlib.blake2b(json.dumps(parts).encode(), digest_size=16).hexdigest()


def pool_digest(ids: Sequence[str], vectors: np.ndarray) -> str:
    """SHA-256 of the ids in order and the vectors' bytes: what a graph is a graph of (SHA-256: the fastest
    hash here, 0.06 s for 50,000 tools of 384 dimensions)."""
    arr = np.ascontiguousarray(vectors, dtype=np.float32)
    digest = hashlib.sha256(json.dumps([list(ids), list(arr.shape)]).encode())
    digest.update(arr.data.cast("B"))
    return digest.hexdigest()


def _graph_digest(graph: HnswGraph) -> str:
    digest = hashlib.sha256(json.dumps([graph.entry_point, graph.max_level]).encode())
    digest.update(np.ascontiguousarray(graph.levels).data.cast("B"))
    digest.update(np.ascontiguousarray(graph.neighbors).data.cast("B"))
    return digest.hexdigest()


def dump(dense: DenseIndex) -> bytes | None:
    """A snapshot of ``dense``'s graph; ``None`` for a flat or empty index."""
    graph = dense.graph()
    if graph is None:
        return None
    header = {
        "format": FORMAT,
        "fingerprint": fingerprint(dense),
        "tools": len(dense),
        "dim": dense.dim,
        "pool": pool_digest(dense.ids, dense.vectors),
        "graph": _graph_digest(graph),
        "entry_point": graph.entry_point,
        "max_level": graph.max_level,
    }
    return pack(header=json_array(header), levels=graph.levels, neighbors=graph.neighbors)


def restore(
    blob: bytes, config: SemanticConfig, ids: Sequence[str], embeddings: np.ndarray
) -> DenseIndex | None:
    """The HNSW dense index of ``ids`` with ``embeddings`` (as ``config`` makes it for that pool) with the
    snapshot's graph attached; ``None`` when the snapshot is not a graph of exactly this pool for it, or
    ``config`` picks a flat index for the pool."""
    try:
        return _restore(blob, config, ids, embeddings)
    except Exception as exc:  # a cache: whatever is wrong with it, the graph is built instead
        log.debug("HNSW graph snapshot not used: %s: %s", type(exc).__name__, exc)
        return None


def _restore(
    blob: bytes, config: SemanticConfig, ids: Sequence[str], embeddings: np.ndarray
) -> DenseIndex | None:
    from rated.index.semantic import new_dense_index

    emb = np.ascontiguousarray(embeddings, dtype=np.float32)
    if emb.ndim != 2:
        return None
    dense = new_dense_index(config, emb.shape[1], len(ids))
    if dense.kind != "hnsw":
        return None
    with open_npz(blob) as saved:
        header = from_json(saved["header"])
        expected = (FORMAT, fingerprint(dense), len(ids), emb.shape[1])
        if (header["format"], header["fingerprint"], header["tools"], header["dim"]) != expected:
            return None
        if header["pool"] != pool_digest(ids, emb):
            return None
        graph = HnswGraph(
            m=dense.hnsw_m,
            ef_construction=dense.ef_construction,
            entry_point=int(header["entry_point"]),
            max_level=int(header["max_level"]),
            levels=saved["levels"],
            neighbors=saved["neighbors"],
        )
    if header["graph"] != _graph_digest(graph):
        return None
    dense.attach(ids, emb, graph)  # checks that faiss can walk it (ConfigError: not used)
    return dense
