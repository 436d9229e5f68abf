"""Offline retrieval benchmark (the paper's Table 1): rank the whole pool for every query of a split.

Methods (all rank the full pool; baselines see the same tool text as the semantic stage):

- ``tfidf``: TF-IDF cosine (scikit-learn) over ``lexical_text``;
- ``bm25``: BM25 (bm25s) over ``lexical_text``;
- ``dense``: cosine of the default encoder's embeddings of ``tool_text`` and of the query;
- ``hybrid``: reciprocal-rank fusion (k=60) of ``bm25`` and ``dense``, the common hybrid baseline;
- ``semantic``: the default ``SemanticIndex`` (the fusion chosen on validation splits);
- ``rated``: RATED's static ranking: the semantic top-10 re-ranked by ``0.75*S_sem + 0.10*r_static``
  (``rated.catalog.prior.compute_prior``), as the policy fuses them before any feedback (with no
  evidence yet, ``S_bandit`` is the same for every tool and leaves the order unchanged);
- ``finetuned`` / ``rated-finetuned``: ``dense`` / ``rated`` with the encoder given by ``encoder_path``.

Query and tool embeddings are cached on disk (``CachedEncoder``), so reruns only pay for ranking.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np

from rated.bench.dataset import Dataset, Query, load_dataset
from rated.bench.metrics import METRIC_KEYS, bootstrap_ci, expected_query_metrics, summarise
from rated.catalog.schema import Tool
from rated.catalog.text import DEFAULT_TEXT, TextConfig, lexical_text, tool_text
from rated.encode.base import Encoder
from rated.errors import ConfigError, DataError
from rated.index.fusion import ranks, rrf
from rated.index.lexical import BM25Index
from rated.index.semantic import DEFAULT_SEMANTIC, SemanticConfig, SemanticIndex
from rated.index.tfidf import TfidfIndex

__all__ = [
    "DEFAULT_METHODS",
    "METHODS",
    "OfflineContext",
    "OfflineResult",
    "W_SEM",
    "W_STATIC",
    "markdown_table",
    "run_ablation",
    "run_offline",
    "write_result",
]

W_SEM, W_STATIC, RERANK_K = 0.75, 0.10, 10
DEFAULT_METHODS = ("tfidf", "bm25", "dense", "hybrid", "semantic", "rated")
PAIRED_WITH = "semantic"  # the default stage: the JSON gives its paired MRR difference to every other method
ScoreStream = Iterator[np.ndarray]


@dataclass
class OfflineContext:
    """Everything a method needs, built lazily and shared between methods."""

    dataset: Dataset
    encoder: Encoder | None
    finetuned: Encoder | None = None
    semantic: SemanticConfig = DEFAULT_SEMANTIC
    text: TextConfig = DEFAULT_TEXT
    progress: bool = False
    _emb: dict[tuple[int, str, tuple[str, ...]], np.ndarray] = field(default_factory=dict, repr=False)
    _indexes: dict[tuple[int, SemanticConfig, TextConfig], SemanticIndex] = field(
        default_factory=dict, repr=False
    )
    _priors: dict[int, np.ndarray] = field(default_factory=dict, repr=False)

    @property
    def tools(self) -> list[Tool]:
        return self.dataset.tools

    @cached_property
    def tool_ids(self) -> list[str]:
        return [t.id for t in self.tools]

    @cached_property
    def lexical_texts(self) -> list[str]:
        return [lexical_text(t) for t in self.tools]

    @cached_property
    def bm25(self) -> BM25Index:
        idx = BM25Index()
        idx.add(self.tool_ids, self.lexical_texts)
        return idx

    @cached_property
    def tfidf(self) -> TfidfIndex:
        idx = TfidfIndex()
        idx.add(self.tool_ids, self.lexical_texts)
        return idx

    def need(self, encoder: Encoder | None, what: str) -> Encoder:
        if encoder is None:
            raise ConfigError(f"method {what!r} needs an encoder")
        return encoder

    def tool_vectors(self, encoder: Encoder, text: TextConfig | None = None) -> np.ndarray:
        texts = tuple(tool_text(t, text or self.text) for t in self.tools)
        key = (id(encoder), "t", texts)
        if key not in self._emb:
            self._emb[key] = encoder.encode_tools(list(texts), progress=self.progress)
        return self._emb[key]

    def query_vectors(self, encoder: Encoder, texts: Sequence[str]) -> np.ndarray:
        key = (id(encoder), "q", tuple(texts))
        if key not in self._emb:
            self._emb[key] = encoder.encode_queries(list(texts), progress=self.progress)
        return self._emb[key]

    def semantic_index(
        self, encoder: Encoder, config: SemanticConfig | None = None, text: TextConfig | None = None
    ) -> SemanticIndex:
        key = (id(encoder), config or self.semantic, text or self.text)
        if key not in self._indexes:
            self._indexes[key] = SemanticIndex.build(
                self.tools, self.tool_vectors(encoder, text), config or self.semantic
            )
        return self._indexes[key]

    def prior(self, encoder: Encoder) -> np.ndarray:
        from rated.catalog.prior import compute_prior

        if id(encoder) not in self._priors:
            self._priors[id(encoder)] = compute_prior(self.tools, encoder).r_static.astype(np.float32)
        return self._priors[id(encoder)]


# ---------------------------------------------------------------------------------------------- methods
def _tfidf(ctx: OfflineContext, texts: Sequence[str]) -> ScoreStream:
    for start in range(0, len(texts), 256):
        yield from ctx.tfidf.scores_many(texts[start : start + 256])


def _bm25(ctx: OfflineContext, texts: Sequence[str]) -> ScoreStream:
    for text in texts:
        yield ctx.bm25.scores(text)


def _dense_with(encoder_attr: str) -> Callable[[OfflineContext, Sequence[str]], ScoreStream]:
    def method(ctx: OfflineContext, texts: Sequence[str]) -> ScoreStream:
        enc = ctx.need(getattr(ctx, encoder_attr), encoder_attr)
        tv, qv = ctx.tool_vectors(enc), ctx.query_vectors(enc, texts)
        for start in range(0, len(texts), 256):
            yield from qv[start : start + 256] @ tv.T

    return method


def _hybrid(ctx: OfflineContext, texts: Sequence[str]) -> ScoreStream:
    n = len(ctx.tools)
    for lex, dense in zip(_bm25(ctx, texts), _dense_with("encoder")(ctx, texts), strict=True):
        yield rrf([np.argsort(ranks(lex)), np.argsort(ranks(dense))], n=n, k=60)


def semantic_scores(
    ctx: OfflineContext, index: SemanticIndex, enc: Encoder, texts: Sequence[str]
) -> ScoreStream:
    qv = ctx.query_vectors(enc, texts)
    for text, vec in zip(texts, qv, strict=True):
        cand, s = index.scores(text, vec)
        if cand is None:
            yield s
        else:
            full = np.full(len(index), -1.0, dtype=np.float32)
            full[cand] = s
            yield full


def rerank_with_prior(s_sem: np.ndarray, r_static: np.ndarray, k: int = RERANK_K) -> np.ndarray:
    """Scores whose order is RATED's before feedback: the top ``k`` by ``S_sem`` re-ordered by
    ``W_SEM*S_sem + W_STATIC*r_static``, the rest after them in ``S_sem`` order."""
    top = np.argsort(-s_sem, kind="stable")[:k]
    out = s_sem.astype(np.float32).copy() - 2.0  # below every re-ranked candidate
    out[top] = W_SEM * s_sem[top] + W_STATIC * r_static[top]
    return out


def _semantic_with(encoder_attr: str, prior: bool) -> Callable[[OfflineContext, Sequence[str]], ScoreStream]:
    def method(ctx: OfflineContext, texts: Sequence[str]) -> ScoreStream:
        enc = ctx.need(getattr(ctx, encoder_attr), encoder_attr)
        index = ctx.semantic_index(enc)
        r_static = ctx.prior(enc) if prior else None
        for s in semantic_scores(ctx, index, enc, texts):
            yield s if r_static is None else rerank_with_prior(s, r_static)

    return method


METHODS: dict[str, Callable[[OfflineContext, Sequence[str]], ScoreStream]] = {
    "tfidf": _tfidf,
    "bm25": _bm25,
    "dense": _dense_with("encoder"),
    "hybrid": _hybrid,
    "semantic": _semantic_with("encoder", prior=False),
    "rated": _semantic_with("encoder", prior=True),
    "finetuned": _dense_with("finetuned"),
    "rated-finetuned": _semantic_with("finetuned", prior=True),
}
# scores on an absolute scale, usable to abstain when nothing fits
ABSOLUTE = ("dense", "semantic", "rated", "finetuned", "rated-finetuned")


# ---------------------------------------------------------------------------------------------- running
@dataclass
class OfflineResult:
    dataset: str
    split: str
    n_queries: int
    n_tools: int
    encoder: str | None
    methods: dict[str, dict[str, float]]
    ci95: dict[str, dict[str, list[float]]]
    timing_ms: dict[str, float]
    abstention: dict[str, dict[str, float]] = field(default_factory=dict)
    per_query_rr: dict[str, list[float]] = field(default_factory=dict, repr=False)
    paired_mrr: dict[str, dict[str, Any]] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "dataset": self.dataset,
            "split": self.split,
            "n_queries": self.n_queries,
            "n_tools": self.n_tools,
            "encoder": self.encoder,
            "methods": self.methods,
            "ci95": self.ci95,
            "timing_ms_per_query": self.timing_ms,
            "abstention": self.abstention,
            "paired_mrr": self.paired_mrr,
        }


def evaluate(
    ids: Sequence[str], queries: Sequence[Query], scores: ScoreStream, top1: list[float] | None = None
) -> tuple[list, float]:
    """Per-query metrics of a score stream, and the seconds spent producing and ranking the scores.
    Tied scores count at their expected value over every order of the tie (not by pool position: a
    pool can list its labelled tools first, e.g. before appended distractors). When ``top1`` is a list,
    each query's best score is appended to it."""
    rows = []
    start = time.perf_counter()
    position = {tool_id: i for i, tool_id in enumerate(ids)}
    for q, s in zip(queries, scores, strict=True):
        s = np.asarray(s)
        relevant = set(q.relevant)
        mask = np.zeros(len(s), dtype=bool)
        mask[[position[t] for t in relevant if t in position]] = True
        rows.append(expected_query_metrics(s, mask, len(relevant)))
        if top1 is not None:
            finite = s[~np.isnan(s)]
            top1.append(float(finite.max()) if finite.size else float("nan"))
    return rows, time.perf_counter() - start


def _split_queries(dataset: Dataset, split: str) -> list[Query]:
    queries = dataset.split(split)
    if not queries:
        raise DataError(f"dataset {dataset.name!r} has no {split!r} queries")
    return queries


def _mean_metrics(rows: Sequence) -> dict[str, float]:
    """The per-query metrics averaged, rounded to 4 places for the report."""
    return {k: round(v, 4) for k, v in summarise(rows).items()}


def _auroc(pos: np.ndarray, neg: np.ndarray) -> float:
    """Probability that a query with a correct tool gets a higher top-1 score than one without
    (a tie counts one half, as the Mann-Whitney statistic defines it)."""
    if not len(pos) or not len(neg):
        return float("nan")
    _, inverse, counts = np.unique(np.concatenate([pos, neg]), return_inverse=True, return_counts=True)
    r = (np.cumsum(counts) - (counts - 1) / 2.0)[inverse]  # 1-based ranks, tied values share their mean
    return float((r[: len(pos)].sum() - len(pos) * (len(pos) + 1) / 2) / (len(pos) * len(neg)))


def _encode_latency(encoder: Encoder, texts: Sequence[str], n: int = 32) -> float:
    inner = getattr(encoder, "encoder", encoder)  # bypass the cache
    sample = list(texts[:n])
    if not sample:
        return float("nan")
    inner.encode_queries(sample[:1])
    start = time.perf_counter()
    for t in sample:
        inner.encode_queries([t])
    return 1000.0 * (time.perf_counter() - start) / len(sample)


def run_offline(
    dataset: Dataset | str | Path,
    methods: Sequence[str] = DEFAULT_METHODS,
    *,
    split: str = "test",
    encoder: Encoder | None = None,
    finetuned: Encoder | None = None,
    irrelevance: Sequence[str] | None = None,
    progress: bool = False,
    n_boot: int = 1000,
) -> OfflineResult:
    """Evaluate ``methods`` on the ``split`` queries of ``dataset`` (a ``Dataset`` or a dataset folder).

    ``irrelevance`` are queries with no correct tool (BFCL): for methods with absolute scores the result
    reports how well the top-1 score separates them from answerable queries (AUROC).
    """
    if not isinstance(dataset, Dataset):
        root = Path(dataset)
        dataset = load_dataset(root)
        if irrelevance is None and (root / "irrelevance.jsonl").is_file():
            irrelevance = _irrelevance_texts(root / "irrelevance.jsonl", split)
    if not methods:
        raise ConfigError(f"no method given; expected some of {', '.join(METHODS)}")
    unknown = [m for m in methods if m not in METHODS]
    if unknown:
        raise ConfigError(f"unknown method(s) {unknown}; expected some of {', '.join(METHODS)}")
    queries = _split_queries(dataset, split)
    ctx = OfflineContext(dataset, encoder, finetuned, progress=progress)
    texts = [q.text for q in queries]
    results: dict[str, dict[str, float]] = {}
    ci: dict[str, dict[str, list[float]]] = {}
    timing: dict[str, float] = {}
    abstention: dict[str, dict[str, float]] = {}
    per_query: dict[str, list[float]] = {}
    for enc in (encoder, finetuned):
        if enc is not None:  # encode outside the timed ranking; per-query encoding is timed apart below
            ctx.query_vectors(enc, texts)
            if irrelevance:
                ctx.query_vectors(enc, list(irrelevance))
    for name in methods:
        next(METHODS[name](ctx, texts))  # warm: build indexes, encode tools, fit the prior
        top1: list[float] = []
        rows, seconds = evaluate(ctx.tool_ids, queries, METHODS[name](ctx, texts), top1)
        results[name] = _mean_metrics(rows)
        rr = [r.mrr for r in rows]
        per_query[name] = rr
        ci[name] = {"mrr": [round(x, 4) for x in bootstrap_ci(rr, n_boot=n_boot)]}
        timing[name] = round(1000.0 * seconds / len(queries), 3)
        if irrelevance and name in ABSOLUTE:
            top_pos = np.array(top1)
            top_neg = np.array([float(np.max(s)) for s in METHODS[name](ctx, list(irrelevance))])
            abstention[name] = {"auroc": round(_auroc(top_pos, top_neg), 4), "n_irrelevant": len(irrelevance)}
    for label, enc in (("encode_query", encoder), ("encode_query_finetuned", finetuned)):
        if enc is not None and any(m in ABSOLUTE or m == "hybrid" for m in methods):
            timing[label] = round(_encode_latency(enc, texts), 3)
    return OfflineResult(
        dataset=dataset.name,
        split=split,
        n_queries=len(queries),
        n_tools=len(dataset.tools),
        encoder=None if encoder is None else encoder.name,
        methods=results,
        ci95=ci,
        timing_ms=timing,
        abstention=abstention,
        per_query_rr=per_query,
        paired_mrr=paired_differences(per_query, n_boot=n_boot),
    )


def paired_differences(
    per_query: Mapping[str, Sequence[float]], n_boot: int = 1000
) -> dict[str, dict[str, Any]]:
    """MRR of the default ``semantic`` stage minus each other method, query by query, with a paired
    bootstrap interval (the same resampled queries for both): per-method intervals overlap even when one
    method is ahead on almost every query, so only the interval of the difference says whether a lead is
    more than noise."""
    if PAIRED_WITH not in per_query:
        return {}
    base = np.asarray(per_query[PAIRED_WITH], dtype=np.float64)
    out = {}
    for name, rr in per_query.items():
        if name == PAIRED_WITH:
            continue
        diff = base - np.asarray(rr, dtype=np.float64)
        lo, hi = bootstrap_ci(diff, n_boot=n_boot)
        out[f"{PAIRED_WITH} - {name}"] = {
            "mean": round(float(diff.mean()), 4),
            "ci95": [round(lo, 4), round(hi, 4)],
        }
    return out


def _irrelevance_texts(path: Path, split: str) -> list[str]:
    out = []
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                row = json.loads(line)
                if row.get("split", "test") == split:
                    out.append(str(row["text"]))
    return out


def run_ablation(
    dataset: Dataset,
    variants: dict[str, tuple[SemanticConfig, TextConfig]],
    encoder: Encoder,
    *,
    split: str = "val",
    progress: bool = False,
) -> dict[str, dict[str, float]]:
    """Mean metrics of each semantic-stage variant (fusion, lexical index, text) on one split."""
    queries = _split_queries(dataset, split)
    ctx = OfflineContext(dataset, encoder, progress=progress)
    texts = [q.text for q in queries]
    out = {}
    for name, (config, text) in variants.items():
        index = ctx.semantic_index(encoder, config, text)
        rows, _ = evaluate(ctx.tool_ids, queries, semantic_scores(ctx, index, encoder, texts))
        out[name] = _mean_metrics(rows)
    return out


def markdown_table(result: OfflineResult) -> str:
    head = ["method", *METRIC_KEYS, "MRR 95% CI", "ms/query"]
    lines = [
        f"{result.dataset} ({result.split}: {result.n_queries} queries, {result.n_tools} tools)",
        "",
        "| " + " | ".join(head) + " |",
        "|" + "---|" * len(head),
    ]
    for name, m in result.methods.items():
        lo, hi = result.ci95[name]["mrr"]
        cells = [
            name,
            *(f"{m[k]:.3f}" for k in METRIC_KEYS),
            f"{lo:.3f}-{hi:.3f}",
            f"{result.timing_ms[name]:.2f}",
        ]
        lines.append("| " + " | ".join(cells) + " |")
    if result.paired_mrr:
        lines.append("")
        lines.append(
            "MRR differences, paired over queries (bootstrap 95% interval): "
            + "; ".join(
                f"{k} {v['mean']:+.3f} [{v['ci95'][0]:+.3f}, {v['ci95'][1]:+.3f}]"
                for k, v in result.paired_mrr.items()
            )
        )
    return "\n".join(lines)


def write_result(result: OfflineResult, out: str | Path) -> tuple[Path, Path]:
    """Write the JSON and a bar chart (same name, ``.png``) next to it. The JSON appears last and whole:
    a failed or interrupted write leaves no file that looks like a result."""
    from rated.bench.plots import grouped_bars
    from rated.paths import atomic_path

    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(out) as tmp:
        tmp.write_text(json.dumps(result.to_json(), indent=2) + "\n", encoding="utf-8")
        errors: dict[str, dict[str, tuple[float, float]]] = {}
        for m, v in result.ci95.items():
            lo, hi = v["mrr"]
            errors[m] = {"mrr": (lo, hi)}
        png = grouped_bars(
            result.methods,
            ["mrr", "hit@1", "hit@5", "ndcg@5"],
            out.with_suffix(".png"),
            title=f"{result.dataset} ({result.split}, {result.n_queries} queries, {result.n_tools} tools)",
            errors=errors,
        )
    return out, png
