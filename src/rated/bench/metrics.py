"""Ranking metrics for tool retrieval, one query at a time, plus a bootstrap confidence interval.

A query may have several relevant tools, so two recall flavours are reported: ``recall@k`` is the
fraction of the relevant tools found in the top ``k``; ``hit@k`` is 1 if any of them is. ``mrr`` uses
the first relevant tool; ``ndcg@k`` uses binary gains, ideal DCG over ``min(k, n_relevant)`` tools.
``expected_query_metrics`` scores a query's raw scores instead, averaging over every order of tied scores.

>>> ranked = ["a", "b", "c", "d"]
>>> rr(ranked, {"b", "d"}), recall_at(ranked, {"b", "d"}, 2), hit_at(ranked, {"b", "d"}, 1)
(0.5, 0.5, 0.0)
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

__all__ = [
    "METRIC_KEYS",
    "QueryMetrics",
    "bootstrap_ci",
    "expected_query_metrics",
    "hit_at",
    "ndcg_at",
    "query_metrics",
    "recall_at",
    "rr",
    "summarise",
]

METRIC_KEYS = ("mrr", "recall@1", "recall@5", "hit@1", "hit@5", "ndcg@5")


def rr(ranked: Sequence[str], relevant: set[str]) -> float:
    """Reciprocal rank of the first relevant tool; 0 when none is ranked."""
    for i, tool_id in enumerate(ranked):
        if tool_id in relevant:
            return 1.0 / (i + 1)
    return 0.0


def recall_at(ranked: Sequence[str], relevant: set[str], k: int) -> float:
    """Fraction of the relevant tools found in the top ``k``."""
    if not relevant:
        return 0.0
    return len(relevant.intersection(ranked[:k])) / len(relevant)


def hit_at(ranked: Sequence[str], relevant: set[str], k: int) -> float:
    """1.0 when at least one relevant tool is in the top ``k``."""
    return 1.0 if relevant.intersection(ranked[:k]) else 0.0


def ndcg_at(ranked: Sequence[str], relevant: set[str], k: int) -> float:
    """Binary-gain NDCG@k: DCG of the ranking over DCG of a perfect one."""
    dcg = sum(1.0 / math.log2(i + 2) for i, t in enumerate(ranked[:k]) if t in relevant)
    ideal = sum(1.0 / math.log2(i + 2) for i in range(min(k, len(relevant))))
    return dcg / ideal if ideal > 0 else 0.0


@dataclass(frozen=True)
class QueryMetrics:
    """Every metric for one query (a flat row, ready for a table)."""

    mrr: float
    recall_1: float
    recall_5: float
    hit_1: float
    hit_5: float
    ndcg_5: float

    def as_dict(self) -> dict[str, float]:
        values = (self.mrr, self.recall_1, self.recall_5, self.hit_1, self.hit_5, self.ndcg_5)
        return dict(zip(METRIC_KEYS, values, strict=True))


def query_metrics(ranked: Sequence[str], relevant: Iterable[str]) -> QueryMetrics:
    rel = set(relevant)
    return QueryMetrics(
        mrr=rr(ranked, rel),
        recall_1=recall_at(ranked, rel, 1),
        recall_5=recall_at(ranked, rel, 5),
        hit_1=hit_at(ranked, rel, 1),
        hit_5=hit_at(ranked, rel, 5),
        ndcg_5=ndcg_at(ranked, rel, 5),
    )


def _expected_rr(above: int, tied: int, tied_relevant: int) -> float:
    """E[1/rank] of the first relevant tool when ``tied`` tools (``tied_relevant`` of them relevant)
    share one score below ``above`` better tools and come in a uniformly random order."""
    j = np.arange(tied - tied_relevant + 1, dtype=np.float64)  # relevant tools the first one follows
    # P(first relevant after exactly j others) = C(tied-j-1, r-1) / C(tied, r), by its ratio recurrence
    ratios = (tied - j[:-1] - tied_relevant) / (tied - j[:-1] - 1)
    p = (tied_relevant / tied) * np.concatenate(([1.0], np.cumprod(ratios)))
    return float(np.sum(p / (above + j + 1)))


def _expected_top_k(s: np.ndarray, rel: np.ndarray, k: int) -> tuple[float, float, float]:
    """Expected (relevant found, hit, DCG) in the top ``k`` under a random order of tied scores."""
    k = min(k, len(s))
    if k == 0:
        return 0.0, 0.0, 0.0
    cut = np.partition(s, len(s) - k)[len(s) - k]  # the k-th best score: every group above it fits
    top = s >= cut
    values, counts = np.unique(s[top], return_counts=True)
    rel_counts = np.bincount(np.searchsorted(values, s[top & rel]), minlength=len(values))
    found = dcg = 0.0
    miss = 1.0  # probability that no relevant tool is in the top k
    start = 0
    for value_i in range(len(values) - 1, -1, -1):  # best group first
        g, r = int(counts[value_i]), int(rel_counts[value_i])
        slots = min(g, k - start)
        if r:
            found += r * slots / g
            dcg += (r / g) * float(np.sum(1.0 / np.log2(np.arange(start, start + slots) + 2.0)))
            miss *= math.comb(g - r, slots) / math.comb(g, slots)
        start += g
    return found, 1.0 - miss, dcg


def expected_query_metrics(scores: np.ndarray, relevant: np.ndarray, n_relevant: int) -> QueryMetrics:
    """Every metric of one query's scores, averaged over every order of tied scores (McSherry and Najork,
    ECIR 2008): ties are no method's merit, and no pool order (which may follow the labels) decides them.

    ``relevant`` is a boolean mask over the pool; ``n_relevant`` counts the relevant tools, including any
    missing from the pool (never found, but in the recall and ideal-DCG denominators). NaN ranks last.
    Without ties this equals ``query_metrics`` of the ranking by descending score.
    """
    s = np.nan_to_num(np.asarray(scores, dtype=np.float64), nan=-np.inf)
    rel = np.asarray(relevant, dtype=bool)
    if n_relevant < 1 or not rel.any():
        return QueryMetrics(0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
    best = s[rel].max()
    tied = s == best
    mrr = _expected_rr(int((s > best).sum()), int(tied.sum()), int((tied & rel).sum()))
    found_1, hit_1, _ = _expected_top_k(s, rel, 1)
    found_5, hit_5, dcg_5 = _expected_top_k(s, rel, 5)
    ideal = sum(1.0 / math.log2(i + 2) for i in range(min(5, n_relevant)))
    return QueryMetrics(mrr, found_1 / n_relevant, found_5 / n_relevant, hit_1, hit_5, dcg_5 / ideal)


def summarise(rows: Sequence[QueryMetrics]) -> dict[str, float]:
    """Mean of every metric over queries (zeros for no query)."""
    if not rows:
        return dict.fromkeys(METRIC_KEYS, 0.0)
    table = np.array([list(r.as_dict().values()) for r in rows], dtype=np.float64)
    return dict(zip(METRIC_KEYS, (float(x) for x in table.mean(axis=0)), strict=True))


def bootstrap_ci(
    values: Sequence[float] | np.ndarray, n_boot: int = 1000, level: float = 0.95, seed: int = 0
) -> tuple[float, float]:
    """Percentile bootstrap interval for the mean of per-query ``values`` (resampling queries)."""
    v = np.asarray(values, dtype=np.float64)
    if v.size == 0:
        return (0.0, 0.0)
    rng = np.random.default_rng(seed)
    means = v[rng.integers(0, v.size, size=(n_boot, v.size))].mean(axis=1)
    alpha = (1.0 - level) / 2.0
    lo, hi = np.quantile(means, [alpha, 1.0 - alpha])
    return float(lo), float(hi)
