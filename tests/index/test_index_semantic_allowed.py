"""SemanticIndex.search(..., allowed=positions): the top-k of the allowed tools, with the S_sem each has
unfiltered; an HNSW index scores few allowed tools exactly and searches its graph wider for many."""

import numpy as np
import pytest

from rated.catalog.schema import Tool
from rated.catalog.text import tool_text
from rated.encode.testing import HashEncoder
from rated.index.semantic import SemanticConfig, SemanticIndex

ENC = HashEncoder(dim=32)
TOPICS = ["send email message", "weather forecast city", "calendar event create", "translate text language"]
POOL = [Tool(id=f"t{i}", name=f"tool_{i}", description=f"{TOPICS[i % 4]} number {i}") for i in range(300)]
EMB = ENC.encode_tools([tool_text(t) for t in POOL])
QUERY = "send an email message"
VEC = ENC.encode_queries([QUERY])[0]


def index(kind: str, monkeypatch=None, calls=None) -> SemanticIndex:
    config = SemanticConfig(dense_kind=kind, candidates=3)
    idx = SemanticIndex.build(POOL, EMB, config)
    if calls is not None:
        real = idx.dense.search
        monkeypatch.setattr(idx.dense, "search", lambda v, k: calls.append(k) or real(v, k))
    return idx


def exact(allowed: np.ndarray, k: int) -> list[tuple[int, float]]:
    """The flat index's unfiltered scores, restricted to ``allowed``: the reference answer."""
    _, s = index("flat").scores(QUERY, VEC)
    order = sorted(allowed.tolist(), key=lambda p: (-s[p], p))[:k]
    return [(p, round(float(s[p]), 6)) for p in order]


def answer(idx: SemanticIndex, allowed: np.ndarray, k: int = 3) -> list[tuple[int, float]]:
    pos, s = idx.search(QUERY, VEC, k, allowed=allowed)
    return [(p, round(float(x), 6)) for p, x in zip(pos.tolist(), s.tolist(), strict=True)]


def test_flat_answers_are_the_unfiltered_scores_of_the_allowed_tools():
    top = index("flat").search(QUERY, VEC, 3)[0]
    allowed = np.setdiff1d(np.arange(300), top)
    assert answer(index("flat"), allowed) == exact(allowed, 3)
    assert not set(answer(index("flat"), allowed)) & set(top.tolist())
    assert answer(index("flat"), np.array([], dtype=np.int64)) == []
    pos, s = index("flat").search_many([QUERY, QUERY], np.stack([VEC, VEC]), 5, np.array([4, 9]))
    assert pos.shape == (2, 2)
    assert list(zip(pos[1].tolist(), [round(float(x), 6) for x in s[1]], strict=True)) == exact(
        np.array([4, 9]), 5
    )


def test_hnsw_scores_few_allowed_tools_exactly_without_the_graph(monkeypatch):
    calls: list[int] = []
    idx = index("hnsw", monkeypatch, calls)
    allowed = np.array([3, 7, 11, 150, 299])  # none about email: the graph's top-3 would not hold them
    assert answer(idx, allowed) == exact(allowed, 3)
    assert calls == []


def test_hnsw_searches_its_graph_wider_when_a_filter_keeps_part_of_the_pool(monkeypatch):
    calls: list[int] = []
    idx = index("hnsw", monkeypatch, calls)
    everything = idx.search(QUERY, VEC, 3)[0]
    assert calls == [3]
    # the best three excluded, 297 > 16 x 3 allowed: the graph, asked for 3 + 3 (the excluded may fill it)
    allowed = np.setdiff1d(np.arange(300), everything)
    assert answer(idx, allowed) == exact(allowed, 3)
    assert calls == [3, 6]
    half = np.arange(0, 300, 2)  # 150 of 300 tools allowed: asked for 3 x 300 / 150
    got = answer(idx, half)
    assert calls == [3, 6, 6] and len(got) == 3 and all(p % 2 == 0 for p, _ in got)
    assert got == exact(half, 3)


def test_hnsw_scores_exactly_when_the_graph_would_be_searched_wide(monkeypatch):
    calls: list[int] = []
    idx = index("hnsw", monkeypatch, calls)
    allowed = np.arange(74, 300)  # 74 barred: 3 + 74 graph results would be over a quarter of the pool
    assert answer(idx, allowed) == exact(allowed, 3)
    assert calls == []
    allowed = np.arange(0, 300, 5)  # 60 allowed, 240 barred: 3 x 300 / 60 = 15 from the graph,
    # which holds fewer than 3 allowed tools (1 in 5 is allowed, 1 in 20 about email): 4 x wider
    assert answer(idx, allowed) == exact(allowed, 3)
    assert calls == [15, 60]
    calls.clear()
    allowed = np.arange(1, 300, 4)  # 75 weather tools: 12 from the graph, then 48, all about email,
    assert answer(idx, allowed) == exact(allowed, 3)  # and 192 would be over a quarter: exactly
    assert calls == [12, 48]


def clustered(kind: str, **config) -> tuple[SemanticIndex, np.ndarray, np.ndarray, str]:
    """Two clusters of 1,000 tools (embeddings only: their texts share no word with the query), the
    query in cluster A, and a filter allowing cluster B and 40 tools of A: the graph's neighbourhood of
    the query holds few allowed tools, though the filter allows half of the pool."""
    rng = np.random.default_rng(0)
    centers = rng.normal(size=(2, 32))
    side = np.arange(2000) % 2
    emb = centers[side] + 0.35 * rng.normal(size=(2000, 32))
    emb = (emb / np.linalg.norm(emb, axis=1, keepdims=True)).astype(np.float32)
    words = ["alpha", "beta", "gamma", "delta", "omega", "sigma"]
    pool = [
        Tool(id=f"c{i}", name=f"tool_{i}", description=f"{words[i % 6]} {words[i // 6 % 6]}")
        for i in range(2000)
    ]
    idx = SemanticIndex.build(pool, emb, SemanticConfig(dense_kind=kind, candidates=10, **config))
    allowed = np.sort(np.concatenate([np.flatnonzero(side == 1), np.flatnonzero(side == 0)[::25]]))
    vec = (centers[0] / np.linalg.norm(centers[0])).astype(np.float32)
    return idx, allowed, vec, "fetch the quarterly invoices"


@pytest.mark.parametrize("lexical", ["tfidf", "bm25"])
def test_hnsw_finds_the_allowed_tools_near_the_query_when_the_filter_goes_against_it(lexical):
    """A filter whose allowed tools are rare near the query (a platform with few tools for this task): the
    graph's proportional widening holds one or two of them, and the lexical part (no word in common)
    filled the rest with arbitrary allowed tools; the allowed tools near the query are scored now."""
    flat, allowed, vec, query = clustered("flat", lexical=lexical)
    hnsw = clustered("hnsw", lexical=lexical)[0]
    assert len(allowed) == 1040 and hnsw.dense.kind == "hnsw"
    expected = flat.search(query, vec, 10, allowed)
    got = hnsw.search(query, vec, 10, allowed)
    assert got[0].tolist() == expected[0].tolist()
    assert np.allclose(got[1], expected[1])


def test_rrf_ranks_the_allowed_tools_as_the_unfiltered_search_does():
    """RRF scores are ranks: ranked among the allowed tools only, S_sem and the order changed with the
    filter; ranked over the whole pool, a filtered answer is the unfiltered ranking of the allowed tools."""
    for lexical in ("tfidf", "bm25"):
        idx = SemanticIndex.build(POOL, EMB, SemanticConfig(fusion="rrf", lexical=lexical))
        _, s = idx.scores(QUERY, VEC)
        rng = np.random.default_rng(1)
        for size in (2, 7, 40, 150, 299):
            allowed = np.sort(rng.choice(300, size=size, replace=False))
            pos, got = idx.search(QUERY, VEC, 10, allowed)
            assert pos.tolist() == sorted(allowed.tolist(), key=lambda p: (-s[p], p))[:10]
            assert np.array_equal(got, s[pos])
