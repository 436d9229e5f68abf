"""The semantic stage of RATED: dense cosine fused with lexical evidence into one score, ``S_sem``.

``S_sem`` scale (what the policy fuses as ``0.75*S_sem + 0.15*S_bandit + 0.10*r_static``):
with the default ``convex`` fusion,

    S_sem = w * clip(cos(e_q, e_a), 0, 1) + (1 - w) * lexical_norm(q, a)

where ``cos`` is the encoder cosine (unit vectors) and ``lexical_norm`` is a lexical score on [0, 1]
chosen by ``SemanticConfig.lexical_norm``. The default is ``w = 0.45`` with the TF-IDF cosine
(``lexical="tfidf"``, ``lexical_norm="none"``): both terms are absolute cosines, not per-query
normalised, so ``S_sem`` means the same thing for every query and can be compared across queries
(e.g. to abstain); a tool that shares neither meaning nor words with the query scores near 0.
Other options: ``max`` (BM25 divided by the query's best BM25, so the best lexical match gets 1),
``bound`` (BM25 divided by the query's score bound). With ``rrf`` fusion, ``S_sem`` is the
reciprocal-rank score divided by its maximum (1 = ranked first by both).
``dense_weight=1`` is the plain dense encoder; ``0`` is lexical only.

The default was chosen on the validation splits of BFCL, StableToolBench and MetaTool
(``rated bench offline --split val --ablation``, rule in ``rated.bench.ablation``): it has the largest
worst-case MRR gain over the best of TF-IDF, BM25 and dense on each benchmark.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from numbers import Integral, Real
from typing import Any

import numpy as np

from rated.catalog.schema import Tool
from rated.catalog.text import DEFAULT_LEXICAL, TextConfig, lexical_text
from rated.errors import ConfigError, QueryError
from rated.index.dense import DenseIndex
from rated.index.fusion import NORMALISERS, convex, normalise, ranks, rrf, top_k
from rated.index.ids import check_known_ids, check_new_ids
from rated.index.lexical import BM25Index
from rated.index.tfidf import TfidfIndex

__all__ = [
    "DEFAULT_SEMANTIC",
    "SemanticConfig",
    "SemanticIndex",
    "dense_kind",
    "new_dense_index",
    "new_lexical_index",
]

LEXICAL_KINDS = ("bm25", "tfidf", "none")
_EXACT_ALLOWED = 16  # a filter allowing at most this many times the candidates is scored exactly
_WIDEN = 4  # a graph search short of allowed tools is repeated this many times wider
FUSIONS = ("convex", "rrf")


@dataclass(frozen=True)
class SemanticConfig:
    """How the semantic stage scores a query against the pool (defaults chosen on validation splits)."""

    dense_weight: float = 0.45  # w in S_sem = w*cos + (1-w)*lexical_norm (convex) or the dense RRF weight
    lexical: str = "tfidf"  # bm25 | tfidf | none
    lexical_norm: str = "none"  # none | max | minmax | bound (a TF-IDF cosine needs none)
    fusion: str = "convex"  # convex | rrf
    rrf_k: int = 60
    stem: bool = True  # s-stemming in the lexical tokenizer
    bm25_k1: float = 1.2
    bm25_b: float = 0.75
    dense_kind: str = "auto"  # flat | hnsw | auto (hnsw above hnsw_threshold tools)
    hnsw_threshold: int = 200_000
    candidates: int = 200  # per retriever, when the dense index is approximate
    lexical_text: TextConfig = field(default_factory=lambda: DEFAULT_LEXICAL)

    def __post_init__(self) -> None:
        # every field is checked here, naming the key: a bad value is saved with the index and would
        # otherwise fail (or score silently wrong) on every later search, e.g. rrf_k=-1 divides by zero
        _number(self, "dense_weight", 0.0, 1.0)
        _number(self, "bm25_k1", 0.0, math.inf)
        _number(self, "bm25_b", 0.0, 1.0)
        _integer(self, "rrf_k", 0)
        _integer(self, "hnsw_threshold", 0)
        _integer(self, "candidates", 1)
        if not isinstance(self.stem, bool):
            raise ConfigError(f"semantic option stem must be true or false, got {self.stem!r}")
        if not isinstance(self.lexical_text, TextConfig):
            raise ConfigError(f"semantic option lexical_text must be a TextConfig, got {self.lexical_text!r}")
        if self.lexical_norm not in NORMALISERS:
            expected = ", ".join(NORMALISERS)
            raise ConfigError(f"unknown lexical_norm {self.lexical_norm!r}; expected one of {expected}")
        if self.lexical not in LEXICAL_KINDS:
            expected = ", ".join(LEXICAL_KINDS)
            raise ConfigError(f"unknown lexical index {self.lexical!r}; expected one of {expected}")
        if self.fusion not in FUSIONS:
            raise ConfigError(f"unknown fusion {self.fusion!r}; expected one of {', '.join(FUSIONS)}")
        if self.lexical == "none" and self.dense_weight < 1.0:
            raise ConfigError("lexical='none' needs dense_weight=1")
        if self.dense_kind not in ("flat", "hnsw", "auto"):
            raise ConfigError(f"unknown dense_kind {self.dense_kind!r}")

    def with_(self, **changes: Any) -> SemanticConfig:  # Any: __post_init__ checks every value
        return replace(self, **changes)


def _number(config: SemanticConfig, name: str, low: float, high: float) -> None:
    value = getattr(config, name)
    if (
        isinstance(value, bool)
        or not isinstance(value, Real)
        or not math.isfinite(value)
        or not low <= value <= high  # type: ignore[operator]  # typeshed: numbers.Real has no __ge__
    ):
        bounds = f"in [{low:g}, {high:g}]" if math.isfinite(high) else f">= {low:g}"
        raise ConfigError(f"semantic option {name} must be a finite number {bounds}, got {value!r}")


def _integer(config: SemanticConfig, name: str, low: int) -> None:
    value = getattr(config, name)
    if isinstance(value, bool) or not isinstance(value, Integral) or value < low:
        raise ConfigError(f"semantic option {name} must be an integer >= {low}, got {value!r}")


DEFAULT_SEMANTIC = SemanticConfig()


def new_lexical_index(config: SemanticConfig) -> BM25Index | TfidfIndex | None:
    """An empty lexical index of the kind and settings ``config`` asks for (``None``: no lexical part)."""
    if config.lexical == "bm25":
        return BM25Index(k1=config.bm25_k1, b=config.bm25_b, stem=config.stem)
    if config.lexical == "tfidf":
        return TfidfIndex(stem=config.stem)
    return None


def dense_kind(config: SemanticConfig, size: int) -> str:
    """The dense index kind ``config`` picks for a pool of ``size`` tools: ``flat`` or ``hnsw``."""
    if config.dense_kind == "auto":
        return "hnsw" if size > config.hnsw_threshold else "flat"
    return config.dense_kind


def new_dense_index(config: SemanticConfig, dim: int, size: int) -> DenseIndex:
    """An empty dense index of the kind and settings ``config`` asks for, for a pool of ``size`` tools."""
    return DenseIndex(dim, kind=dense_kind(config, size))


class SemanticIndex:
    """Dense + lexical index over a tool pool; ``search`` returns positions into ``tool_ids`` and ``S_sem``.

    Positions refer to the pool as it is when ``search`` runs: ``remove`` compacts it, ``add`` appends.
    """

    def __init__(self, dim: int, config: SemanticConfig | None = None, expected_size: int = 0):
        self.config = config or DEFAULT_SEMANTIC
        self._dense = new_dense_index(self.config, dim, expected_size)
        self._lexical = new_lexical_index(self.config)
        self._tools: list[Tool] = []

    @classmethod
    def build(
        cls,
        tools: Sequence[Tool],
        embeddings: np.ndarray,
        config: SemanticConfig | None = None,
        *,
        lexical: BM25Index | TfidfIndex | None = None,
        dense: DenseIndex | None = None,
    ) -> SemanticIndex:
        """Index ``tools`` with their encoder embeddings (``(len(tools), dim)``, unit-norm rows).

        ``lexical``: the lexical index of exactly these tools, in this order, already built (restored by
        ``rated.index.snapshot``, made by ``new_lexical_index(config)``); their texts are then not read.
        ``dense``: likewise the dense index of exactly these tools and embeddings (restored by
        ``rated.index.hnsw_snapshot``, made by ``new_dense_index(config, ...)``); no graph is built then."""
        emb = np.asarray(embeddings, dtype=np.float32)
        if emb.ndim != 2:
            raise ConfigError(f"embeddings must be a 2-d array, got shape {emb.shape}")
        index = cls(emb.shape[1], config, expected_size=len(tools))
        ids = [t.id for t in tools]
        if lexical is not None and (type(lexical) is not type(index._lexical) or lexical.ids != ids):
            raise ConfigError("the lexical index given to build is not one of these tools for this config")
        if dense is not None and (
            (dense.kind, dense.dim) != (index._dense.kind, index.dim) or dense.ids != ids
        ):
            raise ConfigError("the dense index given to build is not one of these tools for this config")
        if lexical is not None:
            index._lexical = None  # adopted once the rest is added
        if dense is None:
            index.add(tools, emb)
        else:  # it holds these tools already: add the pool and the lexical part only
            index._dense = dense
            if index._lexical is not None:
                index._lexical.add(ids, [lexical_text(t, index.config.lexical_text) for t in tools])
            index._tools = list(tools)
        if lexical is not None:
            index._lexical = lexical
        return index

    @property
    def dense(self) -> DenseIndex:
        """The dense part, for ``rated.index.hnsw_snapshot``."""
        return self._dense

    @property
    def lexical(self) -> BM25Index | TfidfIndex | None:
        """The lexical part (``None`` with ``lexical="none"``), for ``rated.index.snapshot``."""
        return self._lexical

    # ------------------------------------------------------------------ pool
    def __len__(self) -> int:
        return len(self._tools)

    @property
    def tool_ids(self) -> list[str]:
        return [t.id for t in self._tools]

    @property
    def tools(self) -> list[Tool]:
        return list(self._tools)

    @property
    def dim(self) -> int:
        return self._dense.dim

    def add(self, tools: Sequence[Tool], embeddings: np.ndarray) -> None:
        """Append tools with their embeddings; the others are not re-encoded."""
        ids = [t.id for t in tools]
        check_new_ids(ids, set(self._dense.ids))
        self._dense.add(ids, embeddings)
        if self._lexical is not None:
            self._lexical.add(ids, [lexical_text(t, self.config.lexical_text) for t in tools])
        self._tools.extend(tools)

    def remove(self, tool_ids: Sequence[str]) -> None:
        """Drop tools by id (``UnknownToolError`` for an id not in the pool)."""
        check_known_ids(tool_ids, set(self._dense.ids))
        self._dense.remove(tool_ids)
        if self._lexical is not None:
            self._lexical.remove(tool_ids)
        drop = set(tool_ids)
        self._tools = [t for t in self._tools if t.id not in drop]

    def follow(self, tools: Sequence[Tool], embeddings: np.ndarray) -> bool:
        """Become the index of ``tools`` in place, if that is only removals and appends; else ``False``.

        That is what another writer's ``add_tools`` / ``remove_tools`` make of a stored catalog: the tools
        this index keeps come first, in its order, as the very same objects with the same embeddings,
        and new ones follow. Anything else (a tool changed in place, a new order, a pool whose size
        calls for the other dense kind, appends to an HNSW graph) is left to a rebuild, so that this index
        always equals the one ``build`` would make (the same order, so the same ties, as a process that
        opens the store now). An HNSW graph grown by appends is not the graph ``build`` makes (faiss
        inserts a batch level by level), so its approximate search can return other candidates; a removal
        rebuilds the graph from the kept vectors in one batch, as ``build`` does.
        """
        emb = np.asarray(embeddings, dtype=np.float32)
        new_ids = {t.id for t in tools}
        kept = [p for p, t in enumerate(self._tools) if t.id in new_ids]
        n = len(kept)
        if (
            n > len(tools)
            or emb.shape != (len(tools), self.dim)
            or any(self._tools[p] is not tools[j] for j, p in enumerate(kept))
            or self._dense.kind != self._dense_kind(len(tools))
            or (self._dense.kind == "hnsw" and n < len(tools))
            or not np.array_equal(self._dense.vectors[kept], emb[:n])
        ):
            return False
        removed = [t.id for t in self._tools if t.id not in new_ids]
        if removed:
            self.remove(removed)
        if n < len(tools):
            self.add(tools[n:], emb[n:])
        return True

    def _dense_kind(self, size: int) -> str:
        return dense_kind(self.config, size)

    # ------------------------------------------------------------------ scoring
    def _lexical_norm(self, query: str) -> np.ndarray:
        assert self._lexical is not None
        raw = self._lexical.scores(query)
        method = self.config.lexical_norm
        if method == "bound":
            if not isinstance(self._lexical, BM25Index):
                return raw  # a TF-IDF cosine is its own bound
            return normalise(raw, "bound", self._lexical.score_bound(query))
        return normalise(raw, method)

    def _candidates(
        self,
        query: str,
        query_vec: np.ndarray | None,
        at_least: int = 0,
        allowed: np.ndarray | None = None,
    ) -> np.ndarray | None:
        """Positions to score exactly; ``None`` means all (a flat dense index scores the whole pool).

        ``allowed`` (sorted positions, a filter's) restricts them: all of them when the dense index is
        flat, when they are few (scoring a few thousand vectors exactly costs about what the lexical part
        does anyway) or when the graph would have to be searched wide. With an approximate index, each
        retriever is asked for ``max(candidates, at_least)``, plus the number of tools barred when few
        are, else in proportion to the share allowed; when their union is still short of ``min(at_least,
        pool)`` (an HNSW graph need not reach every node), all.

        The graph must also hold enough allowed tools (``_graph_allowed``): a filter can go against the
        query (a platform with few tools for this task), so that the tools near the query are rarely
        allowed, and the lexical candidates, taken among the allowed tools whatever their words, would
        hide the shortfall."""
        n = max(self.config.candidates, int(at_least))
        if self._dense.kind == "flat" or (allowed is not None and len(allowed) <= _EXACT_ALLOWED * n):
            return allowed
        pool = len(self) if allowed is None else len(allowed)
        # a few excluded tools (an agent skipping the ones that just failed) are likely the best matches:
        # asking for that many more keeps n allowed ones; else ask in proportion to the share allowed
        barred = len(self) - pool
        wide = n + barred if barred <= len(self) // 4 else -(-n * len(self) // pool)
        if wide > len(self) // 4:  # the graph would visit most of the pool: the allowed ones, exactly
            return allowed
        parts = []
        if query_vec is not None:
            if allowed is None:
                pos, _ = self._dense.search(query_vec, wide)
                parts.append(pos[pos >= 0])
            else:
                near = self._graph_allowed(query_vec, wide, allowed, int(at_least))
                if near is None:
                    return allowed
                parts.append(near)
        if self._lexical is not None:
            lex = self._lexical.scores(query)
            if allowed is None:
                parts.append(top_k(lex, n)[0])
            else:
                parts.append(allowed[top_k(lex[allowed], n)[0]])
        cand = np.unique(np.concatenate(parts)) if parts else np.zeros(0, dtype=np.int64)
        return allowed if len(cand) < min(int(at_least), pool) else cand

    def _graph_allowed(
        self, query_vec: np.ndarray, wide: int, allowed: np.ndarray, enough: int
    ) -> np.ndarray | None:
        """The allowed tools among the graph's ``wide`` nearest, searched ``_WIDEN`` times wider while
        fewer than ``enough`` are allowed (the filter goes against the query). ``None`` (score the allowed
        tools exactly) once the search would be wider than the allowed tools or a quarter of the pool (a
        graph search costs about what scoring as many tools exactly does, and scoring over a quarter of
        the pool costs the whole pool), or when the graph reaches no more tools than it returned."""
        enough = min(enough, len(allowed))
        limit = min(len(allowed), len(self) // 4)
        while True:
            pos, _ = self._dense.search(query_vec, wide)
            pos = pos[pos >= 0]
            reached = len(pos)
            pos = pos[np.isin(pos, allowed, assume_unique=True)]
            if len(pos) >= enough:
                return pos
            wide *= _WIDEN
            if wide > limit or reached < wide // _WIDEN:
                return None

    def scores(
        self,
        query: str,
        query_vec: np.ndarray | None,
        at_least: int = 0,
        allowed: np.ndarray | None = None,
    ) -> tuple[np.ndarray | None, np.ndarray]:
        """``(positions, S_sem)``: scored positions (``None``: the whole pool, in order) and their S_sem;
        at least ``min(at_least, len(self))`` positions when the dense index is approximate. ``allowed``:
        sorted positions (a filter's) that the scored ones are taken from. A lexical score normalised per
        query is normalised over the whole pool, and with a flat dense index RRF ranks over the whole pool,
        so that a filter does not change S_sem. (With an HNSW one, RRF ranks the scored candidates, which
        are the graph's and the filter's: S_sem is then a rank among those, filtered or not.)"""
        if not isinstance(query, str):
            raise QueryError(f"query must be a string, got {type(query).__name__}")
        cfg = self.config
        if allowed is not None and cfg.fusion == "rrf" and self._dense.kind == "flat":
            # a rank among the allowed tools is not the tool's rank: rank the pool, as unfiltered
            _, fused = self.scores(query, query_vec, at_least)
            return allowed, fused[allowed]
        use_dense = query_vec is not None and cfg.dense_weight > 0
        use_lex = self._lexical is not None and (cfg.dense_weight < 1 or not use_dense)
        if not use_dense and not use_lex:
            raise QueryError("this index needs a query embedding (it has no lexical part)")
        cand = self._candidates(query, query_vec if use_dense else None, at_least, allowed)
        n = len(self) if cand is None else len(cand)
        dense = np.zeros(n, dtype=np.float32)
        lex = np.zeros(n, dtype=np.float32)
        if use_dense:
            qv = np.asarray(query_vec, dtype=np.float32).reshape(1, -1)
            dense = self._dense.scores(qv, cand)[0]
        if use_lex:
            lex_all = self._lexical_norm(query)
            lex = lex_all if cand is None else lex_all[cand]
        if not use_dense:
            return cand, np.clip(lex, 0.0, 1.0)
        if not use_lex:
            return cand, np.clip(dense, 0.0, 1.0)
        if cfg.fusion == "rrf":
            fused = rrf(
                [np.argsort(ranks(dense)), np.argsort(ranks(lex))],
                n=n,
                k=cfg.rrf_k,
                weights=[cfg.dense_weight, 1.0 - cfg.dense_weight],
            )
            return cand, fused
        return cand, np.clip(convex(np.clip(dense, 0.0, 1.0), lex, cfg.dense_weight), 0.0, 1.0)

    def search(
        self, query: str, query_vec: np.ndarray | None, k: int, allowed: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """Top-``k`` positions into ``tool_ids`` (int64) and their ``S_sem`` (float32, best first).

        ``query_vec`` is the query's unit-norm embedding; ``None`` ranks by lexical evidence alone.
        ``allowed``: sorted positions (``rated.tool_filter``) the results are taken from; ``None``: all.
        Fewer than ``k`` results come back only when the pool (or ``allowed``) is smaller than ``k``.
        """
        if k < 1:
            raise ConfigError(f"k must be at least 1, got {k}")
        if not len(self) or (allowed is not None and not len(allowed)):
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
        cand, s = self.scores(query, query_vec, at_least=k, allowed=allowed)
        pos, top = top_k(s, k)
        return (pos if cand is None else cand[pos]).astype(np.int64), top.astype(np.float32)

    def search_many(
        self, queries: Sequence[str], query_vecs: np.ndarray | None, k: int, allowed: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """``search`` for each query: ``(len(queries), min(k, pool))`` positions and scores, the pool being
        ``allowed`` when given."""
        if query_vecs is not None and len(query_vecs) != len(queries):
            raise ConfigError(f"{len(queries)} queries but {len(query_vecs)} query vectors")
        width = min(int(k), len(self) if allowed is None else len(allowed))
        pos = np.zeros((len(queries), width), dtype=np.int64)
        out = np.zeros((len(queries), width), dtype=np.float32)
        for i, query in enumerate(queries):
            p, s = self.search(query, None if query_vecs is None else query_vecs[i], k, allowed)
            pos[i], out[i] = p, s
        return pos, out

    def position(self, tool_id: str) -> int:
        return self._dense.position(tool_id)
