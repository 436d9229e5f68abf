"""Ranking metrics for tool retrieval, one query at a time, plus a bootstrap confidence interval.

A query may have several relevant tools, so two recall flavours are reported: ``recall@k`` is the
fraction of the relevant tools found in the top ``k``; ``hit@k`` is 1 if any of them is. ``mrr`` uses
the first relevant tool; ``ndcg@k`` uses binary gains, ideal DCG over ``min(k, n_relevant)`` tools.

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


def summarise(rows: Sequence[QueryMetrics]) -> dict[str, float]:
    """Mean of every metric over queries (zeros for no query)."""
    if not rows:
        return dict.fromkeys(METRIC_KEYS, 0.0)
    table = np.array([list(r.as_dict().values()) for r in rows], dtype=np.float64)
    return dict(zip(METRIC_KEYS, (float(x) for x in table.mean(axis=0)), strict=True))


def bootstrap_ci(
    values: Sequence[float], n_boot: int = 1000, level: float = 0.95, seed: int = 0
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
