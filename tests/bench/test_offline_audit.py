"""Audit of the offline evaluation: tied scores count at their expected value over every order of the tie,
never by pool position; ties in the abstention AUROC count one half."""

import itertools
import math

import numpy as np
import pytest

from rated.bench.dataset import Query
from rated.bench.metrics import METRIC_KEYS, expected_query_metrics, query_metrics, summarise
from rated.bench.offline import _auroc, evaluate

IDS = [f"t{i}" for i in range(10)]
HARMONIC_10 = sum(1.0 / r for r in range(1, 11)) / 10  # E[1/rank] of one relevant tool among 10 tied


def _by_enumeration(scores: list[float], relevant: set[str], n_relevant_extra: int = 0) -> dict[str, float]:
    """Mean of ``query_metrics`` over every order of the tied tools (every permutation, then sorted by
    score: a stable sort keeps the permuted order within each tie)."""
    ids = [f"t{i}" for i in range(len(scores))]
    rel = relevant | {f"missing{i}" for i in range(n_relevant_extra)}
    total = dict.fromkeys(METRIC_KEYS, 0.0)
    perms = list(itertools.permutations(range(len(ids))))
    for perm in perms:
        ranked = sorted(perm, key=lambda i: -scores[i])
        for key, value in query_metrics([ids[i] for i in ranked], rel).as_dict().items():
            total[key] += value / len(perms)
    return total


@pytest.mark.parametrize(
    ("scores", "relevant", "extra"),
    [
        ([0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5], {"t0"}, 0),  # everything tied, relevant first in the pool
        ([0.9, 0.5, 0.5, 0.5, 0.5, 0.5, 0.1], {"t5", "t6"}, 0),  # a tie straddling the top 5
        ([0.5, 0.9, 0.9, 0.2, 0.2, 0.2, 0.2], {"t1", "t3", "t6"}, 1),  # a label missing from the pool
        ([0.3, 0.3, 0.8, 0.8, 0.1, 0.0, 0.3], {"t0", "t2", "t4"}, 0),  # several ties, several relevant
        ([0.1, 0.7, 0.2, 0.6, 0.3, 0.5, 0.4], {"t3", "t4"}, 0),  # no tie: the plain ranking
    ],
)
def test_expected_metrics_equal_the_mean_over_every_tie_order(scores, relevant, extra):
    mask = np.array([f"t{i}" in relevant for i in range(len(scores))])
    got = expected_query_metrics(np.array(scores), mask, len(relevant) + extra).as_dict()
    want = _by_enumeration(scores, relevant, extra)
    assert got == pytest.approx(want, abs=1e-12)


def _mean_mrr(relevant: str, n_queries: int = 50) -> float:
    queries = [Query(f"q{i}", "text", (relevant,)) for i in range(n_queries)]
    constant = (np.ones(len(IDS), dtype=np.float32) for _ in queries)
    rows, _ = evaluate(IDS, queries, constant)
    return summarise(rows)["mrr"]


def test_tied_scores_are_not_ordered_by_pool_position():
    # a method that scores every tool alike knows nothing: wherever the relevant tool sits in the pool
    # (distractors are appended after the benchmark's tools), it gets the MRR of a random order
    assert _mean_mrr("t0") == pytest.approx(HARMONIC_10)
    assert _mean_mrr("t9") == pytest.approx(HARMONIC_10)


def test_evaluate_strict_scores_by_hand_and_nan_last():
    scores = np.array([0.1, 0.9, 0.3, 0.8, np.nan, 0.2, 0.4, 0.5, 0.6, 0.7], dtype=np.float32)
    top1: list[float] = []
    rows, _ = evaluate(IDS, [Query("q", "text", ("t3", "t9", "gone"))], iter([scores]), top1)
    m = rows[0].as_dict()  # ranking t1 t3 t9 t8 t7 ...: relevant at ranks 2 and 3; "gone" is not in the pool
    assert m["mrr"] == 0.5 and m["hit@1"] == 0 and m["hit@5"] == 1
    assert m["recall@5"] == pytest.approx(2 / 3)
    ideal = 1 + 1 / math.log2(3) + 1 / math.log2(4)
    assert m["ndcg@5"] == pytest.approx((1 / math.log2(3) + 1 / math.log2(4)) / ideal)
    assert top1 == [pytest.approx(0.9)]
    rows, _ = evaluate(IDS, [Query("q", "text", ("t4",))], iter([scores]))
    assert rows[0].mrr == pytest.approx(0.1)  # NaN ranks last


def test_auroc_counts_ties_one_half():
    assert _auroc(np.array([1.0, 1.0]), np.array([1.0, 1.0])) == pytest.approx(0.5)
    # pairs (pos, neg): (0.9, 0.5) 1, (0.9, 0.1) 1, (0.5, 0.5) 1/2, (0.5, 0.1) 1
    assert _auroc(np.array([0.9, 0.5]), np.array([0.5, 0.1])) == pytest.approx(0.875)
    assert _auroc(np.array([0.2]), np.array([0.8])) == 0.0
    assert math.isnan(_auroc(np.array([]), np.array([0.1])))
