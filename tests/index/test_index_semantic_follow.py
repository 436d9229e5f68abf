"""``SemanticIndex.follow``: an index that follows removals and appends in place is the index ``build``
makes of the new pool (the same positions, so the same answers as a process that opens the store now), or
it declines (``False``) and is rebuilt."""

from __future__ import annotations

import numpy as np

from rated import Tool
from rated.index.semantic import SemanticConfig, SemanticIndex


def _pool(n: int, dim: int, seed: int) -> tuple[list[Tool], np.ndarray]:
    rng = np.random.default_rng(seed)
    emb = rng.normal(size=(n, dim)).astype(np.float32)
    emb /= np.linalg.norm(emb, axis=1, keepdims=True)
    return [Tool(id=f"t{i}", name=f"tool_{i}", description=f"tool number {i}") for i in range(n)], emb


def _answers(index: SemanticIndex, queries: np.ndarray, k: int) -> list[tuple[list[int], list[float]]]:
    out = []
    for q in queries:
        pos, s = index.search("tool", q, k)
        out.append((pos.tolist(), s.tolist()))
    return out


def test_an_hnsw_index_given_appends_searches_as_one_built_afresh():
    """A graph grown by appends is not the graph a build makes (faiss inserts a batch by level), so an
    approximate search may find other candidates: following appends must leave it as a build would."""
    config = SemanticConfig(dense_kind="hnsw", candidates=1, lexical="none", dense_weight=1.0)
    tools, emb = _pool(3000, 256, 0)
    queries = _pool(60, 256, 1)[1]
    followed = SemanticIndex.build(tools[:-5], emb[:-5], config)
    built = SemanticIndex.build(tools, emb, config)
    kept = followed.tools  # the same objects, as a replica's reload keeps them
    if not followed.follow(kept + tools[-5:], emb):  # declined: a replica rebuilds it
        followed = SemanticIndex.build(kept + tools[-5:], emb, config)
    assert _answers(followed, queries, 10) == _answers(built, queries, 10)


def test_an_hnsw_index_follows_removals_in_place():
    config = SemanticConfig(dense_kind="hnsw", candidates=1, lexical="none", dense_weight=1.0)
    tools, emb = _pool(3000, 256, 2)
    queries = _pool(60, 256, 3)[1]
    index = SemanticIndex.build(tools, emb, config)
    keep = [i for i in range(len(tools)) if i % 97]
    assert index.follow([index.tools[i] for i in keep], emb[keep])
    assert _answers(index, queries, 10) == _answers(
        SemanticIndex.build([tools[i] for i in keep], emb[keep], config), queries, 10
    )
