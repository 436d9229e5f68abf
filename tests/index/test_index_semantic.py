import numpy as np
import pytest

from rated.catalog.schema import Tool
from rated.catalog.text import tool_text
from rated.encode.testing import HashEncoder
from rated.errors import CatalogError, ConfigError, QueryError, UnknownToolError
from rated.index.semantic import DEFAULT_SEMANTIC, SemanticConfig, SemanticIndex

TOOLS = [
    Tool(id="weather", name="getWeatherForecast", description="Weather forecast for a city, next days."),
    Tool(id="email", name="send_email", description="Send an email message to a recipient."),
    Tool(id="flight", name="searchFlights", description="Search flights between two airports on a date."),
    Tool(id="stock", name="stockQuote", description="Latest share price of a listed company."),
]
ENC = HashEncoder(dim=128)


def _emb(tools):
    return ENC.encode_tools([tool_text(t) for t in tools])


def _q(text):
    return ENC.encode_queries([text])[0]


@pytest.mark.parametrize(
    "config",
    [
        DEFAULT_SEMANTIC,
        SemanticConfig(fusion="rrf"),
        SemanticConfig(lexical="tfidf", lexical_norm="none"),
        SemanticConfig(lexical_norm="bound"),
        SemanticConfig(dense_weight=1.0, lexical="none"),
        SemanticConfig(dense_kind="hnsw"),
    ],
)
def test_search_finds_the_matching_tool_with_scores_in_unit_range(config):
    idx = SemanticIndex.build(TOOLS, _emb(TOOLS), config)
    for query, want in [("will it rain in Paris tomorrow weather", "weather"), ("email my boss", "email")]:
        pos, s = idx.search(query, _q(query), k=3)
        assert pos.dtype == np.int64 and s.dtype == np.float32 and len(pos) == 3
        assert idx.tool_ids[int(pos[0])] == want
        assert (s[:-1] >= s[1:]).all() and s.min() >= 0.0 and s.max() <= 1.0


def test_convex_score_is_the_documented_blend():
    cfg = SemanticConfig(dense_weight=0.6, lexical="bm25", lexical_norm="max")
    idx = SemanticIndex.build(TOOLS, _emb(TOOLS), cfg)
    query = "search flights to Rome"
    qv = _q(query)
    pos, s = idx.search(query, qv, k=4)
    lex = idx._lexical.scores(query)
    expect = 0.6 * np.clip(_emb(TOOLS) @ qv, 0, 1) + 0.4 * lex / lex.max()
    np.testing.assert_allclose(s, expect[pos], rtol=1e-5, atol=1e-6)


def test_search_many_add_remove_and_lexical_only():
    idx = SemanticIndex.build(TOOLS[:2], _emb(TOOLS[:2]))
    idx.add(TOOLS[2:], _emb(TOOLS[2:]))
    assert idx.tool_ids == ["weather", "email", "flight", "stock"]
    queries = ["flights to Rome", "share price of ACME"]
    pos, s = idx.search_many(queries, ENC.encode_queries(queries), k=10)
    assert pos.shape == (2, 4) and [idx.tool_ids[int(p)] for p in pos[:, 0]] == ["flight", "stock"]
    idx.remove(["flight"])
    assert idx.tool_ids == ["weather", "email", "stock"] and len(idx) == 3
    pos, _ = idx.search("share price stock quote", None, k=1)  # lexical only
    assert idx.tool_ids[int(pos[0])] == "stock"
    with pytest.raises(UnknownToolError):
        idx.remove(["flight"])
    with pytest.raises(CatalogError):
        idx.add(TOOLS[:1], _emb(TOOLS[:1]))
    with pytest.raises(ConfigError):
        idx.search("x", None, k=0)
    with pytest.raises(QueryError):
        dense_only = SemanticConfig(dense_weight=1.0, lexical="none")
        SemanticIndex.build(TOOLS, _emb(TOOLS), dense_only).search("x", None, 1)


def test_config_validation():
    for bad in [dict(dense_weight=1.5), dict(lexical="splade"), dict(fusion="max"), dict(lexical="none")]:
        with pytest.raises(ConfigError):
            SemanticConfig(**bad)


def _pool(n: int = 60):
    tools = [
        Tool(id=f"t{i}", name=f"tool_{i}", description=f"does task {i} with item {i % 7}") for i in range(n)
    ]
    return tools, _emb(tools)


@pytest.mark.parametrize(
    "config",
    [
        SemanticConfig(dense_kind="hnsw", candidates=5),
        SemanticConfig(dense_kind="hnsw", candidates=5, lexical="none", dense_weight=1.0),
    ],
)
def test_hnsw_search_returns_k_results_when_k_exceeds_candidates(config):
    # the candidate union (5 dense + 5 lexical) used to be shorter than k: search_many raised on the shape
    tools, emb = _pool()
    hnsw = SemanticIndex.build(tools, emb, config)
    flat = SemanticIndex.build(tools, emb, config.with_(dense_kind="flat"))
    queries = ["does task 3", "item 5", "tool 40 task"]
    qvecs = ENC.encode_queries(queries)
    pos, s = hnsw.search_many(queries, qvecs, 20)
    assert pos.shape == s.shape == (3, 20)
    assert all(len(set(row)) == 20 for row in pos.tolist()) and (s[:, :-1] >= s[:, 1:]).all()
    if config.lexical == "none":  # dense only: 60 tools under efSearch 128, the HNSW ranking is exact
        # the same scores as the exact index (positions may differ among tools tied at the cut: the
        # hashed descriptions share words, and HNSW returns any of them)
        np.testing.assert_allclose(s, flat.search_many(queries, qvecs, 20)[1], rtol=1e-5, atol=1e-6)
    assert hnsw.search_many(queries, qvecs, 100)[0].shape == (3, 60)  # capped at the pool


def test_hnsw_search_scores_everything_when_the_graph_returns_too_few(monkeypatch):
    config = SemanticConfig(dense_kind="hnsw", candidates=5, lexical="none", dense_weight=1.0)
    tools, emb = _pool()
    idx = SemanticIndex.build(tools, emb, config)
    flat = SemanticIndex.build(tools, emb, config.with_(dense_kind="flat"))

    def unreachable(query_vec, k):  # an HNSW graph that reaches only two nodes: faiss pads with -1
        pos = np.full(k, -1, dtype=np.int64)
        pos[:2] = [0, 1]
        return pos, np.zeros(k, dtype=np.float32)

    monkeypatch.setattr(idx._dense, "search", unreachable)
    qv = _q("does task 3")
    pos, _ = idx.search("does task 3", qv, 10)
    np.testing.assert_array_equal(pos, flat.search("does task 3", qv, 10)[0])


def test_auto_dense_kind_is_exact_up_to_the_threshold_and_a_graph_above():
    config = SemanticConfig(hnsw_threshold=20)
    rng = np.random.default_rng(0)
    for n, kind in ((20, "flat"), (21, "hnsw")):
        emb = rng.normal(size=(n, 8)).astype(np.float32)
        emb /= np.linalg.norm(emb, axis=1, keepdims=True)
        tools = [Tool(id=f"t{i}", name=f"tool {i}", description="does things") for i in range(n)]
        assert SemanticIndex.build(tools, emb, config)._dense.kind == kind
