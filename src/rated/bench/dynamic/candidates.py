"""Each method's candidates: the real top-K of its retriever over the full pool, computed once per query.

A ``CandidateTable`` holds, for every query of the stream's query pool, the positions (into the dataset's
tool list) and ``S_sem`` of the retriever's top-K, plus the query's context vector (what RATED's
contextual part learns on). Tables are computed once per retriever and reused by every method and seed.
Retrievers: ``tfidf`` and ``bm25`` (lexical, from ``rated.index``), ``dense`` (encoder cosine) and
``semantic`` (``rated.index.semantic.SemanticIndex``: dense fused with BM25, the library's default).
Lexical retrievers take their context from ``context_encoder`` (default: a hashed bag of words).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from rated.catalog.schema import Tool
from rated.catalog.text import lexical_text, tool_text
from rated.encode.base import Encoder
from rated.errors import ConfigError
from rated.index.fusion import top_k

__all__ = ["RETRIEVERS", "CandidateTable", "build_table"]

RETRIEVERS = ("tfidf", "bm25", "dense", "semantic")


@dataclass(frozen=True)
class CandidateTable:
    """Top-K per query of one retriever: ``positions`` (Q, K) int64, ``scores`` (Q, K) float32, best first."""

    name: str
    positions: np.ndarray
    scores: np.ndarray
    contexts: np.ndarray | None  # (Q, d) float32 unit rows

    @property
    def k(self) -> int:
        return int(self.positions.shape[1])


def _hash_contexts(queries: Sequence[str]) -> np.ndarray:
    from rated.encode.testing import HashEncoder

    return HashEncoder(dim=256).encode_queries(list(queries))


def _lexical_scores(name: str, tools: Sequence[Tool], queries: Sequence[str]) -> Callable[[int], np.ndarray]:
    texts = [lexical_text(t) for t in tools]
    ids = [t.id for t in tools]
    if name == "tfidf":
        from rated.index.tfidf import TfidfIndex

        tfidf = TfidfIndex(stem=True)
        tfidf.add(ids, texts)
        matrix = tfidf.scores_many(list(queries))
        return lambda i: matrix[i]
    from rated.index.lexical import BM25Index

    bm25 = BM25Index(stem=True)
    bm25.add(ids, texts)

    def score(i: int) -> np.ndarray:
        s = bm25.scores(queries[i])
        top = float(s.max()) if len(s) else 0.0
        return s / top if top > 0 else s  # S_sem in [0, 1]: the best lexical match gets 1

    return score


def build_table(
    name: str,
    tools: Sequence[Tool],
    queries: Sequence[str],
    k: int = 10,
    *,
    encoder: Encoder | None = None,
    context_encoder: Encoder | None = None,
    pool: np.ndarray | None = None,
) -> CandidateTable:
    """The top-``k`` of retriever ``name`` for each query, over ``tools`` (or the subset ``pool`` marks).

    ``encoder`` is needed by ``dense`` and ``semantic``; positions always index ``tools``.
    """
    if name not in RETRIEVERS:
        raise ConfigError(f"unknown retriever {name!r}; expected one of: {', '.join(RETRIEVERS)}")
    keep = np.arange(len(tools)) if pool is None else np.flatnonzero(np.asarray(pool, dtype=bool))
    sub = [tools[i] for i in keep.tolist()]
    if len(sub) < 1 or k < 1:
        raise ConfigError(f"need a non-empty pool and k >= 1 (pool {len(sub)}, k {k})")
    width = min(int(k), len(sub))
    positions = np.zeros((len(queries), width), dtype=np.int64)
    scores = np.zeros((len(queries), width), dtype=np.float32)
    contexts: np.ndarray | None
    if name in ("dense", "semantic"):
        if encoder is None:
            raise ConfigError(f"retriever {name!r} needs an encoder")
        qvecs = np.asarray(encoder.encode_queries(list(queries)), dtype=np.float32)
        tvecs = np.asarray(encoder.encode_tools([tool_text(t) for t in sub]), dtype=np.float32)
        contexts = qvecs
        if name == "dense":
            sims = np.clip(qvecs @ tvecs.T, 0.0, 1.0)
            for i in range(len(queries)):
                positions[i], scores[i] = top_k(sims[i], width)
        else:
            from rated.index.semantic import SemanticIndex

            index = SemanticIndex.build(sub, tvecs)
            positions, scores = index.search_many(list(queries), qvecs, width)
    else:
        score = _lexical_scores(name, sub, queries)
        for i in range(len(queries)):
            positions[i], scores[i] = top_k(score(i), width)
        ctx_enc = context_encoder
        contexts = (
            _hash_contexts(queries)
            if ctx_enc is None
            else np.asarray(ctx_enc.encode_queries(list(queries)), dtype=np.float32)
        )
    return CandidateTable(name=name, positions=keep[positions], scores=scores, contexts=contexts)
