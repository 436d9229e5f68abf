import math

import pytest

from rated.bench.metrics import (
    METRIC_KEYS,
    bootstrap_ci,
    hit_at,
    ndcg_at,
    query_metrics,
    recall_at,
    rr,
    summarise,
)

RANKED = ["a", "b", "c", "d", "e", "f"]


def test_single_relevant_tool_by_hand():
    m = query_metrics(RANKED, {"c"}).as_dict()
    assert m["mrr"] == pytest.approx(1 / 3)
    assert m["recall@1"] == 0 and m["hit@1"] == 0
    assert m["recall@5"] == 1 and m["hit@5"] == 1
    assert m["ndcg@5"] == pytest.approx(1 / math.log2(4))  # ideal DCG is 1


def test_several_relevant_tools_by_hand():
    rel = {"b", "e", "z"}  # "z" is never ranked
    m = query_metrics(RANKED, rel).as_dict()
    assert m["mrr"] == pytest.approx(0.5)  # first relevant at rank 2
    assert m["recall@1"] == 0 and m["hit@1"] == 0
    assert m["recall@5"] == pytest.approx(2 / 3)  # b and e of three
    assert m["hit@5"] == 1
    dcg = 1 / math.log2(3) + 1 / math.log2(6)
    idcg = 1 + 1 / math.log2(3) + 1 / math.log2(4)
    assert m["ndcg@5"] == pytest.approx(dcg / idcg)


def test_perfect_and_empty_rankings():
    assert query_metrics(["x", "y"], {"x", "y"}).as_dict() == dict.fromkeys(METRIC_KEYS, 1.0) | {
        "recall@1": 0.5
    }
    assert query_metrics([], {"x"}).as_dict() == dict.fromkeys(METRIC_KEYS, 0.0)
    assert rr(RANKED, set()) == 0 and recall_at(RANKED, set(), 5) == 0 and ndcg_at(RANKED, set(), 5) == 0
    assert hit_at(RANKED, {"f"}, 5) == 0 and hit_at(RANKED, {"f"}, 6) == 1


def test_summarise_means_and_bootstrap_ci():
    rows = [query_metrics(RANKED, {"a"}), query_metrics(RANKED, {"b"})]
    s = summarise(rows)
    assert s["mrr"] == pytest.approx(0.75) and s["hit@1"] == pytest.approx(0.5)
    assert summarise([])["mrr"] == 0
    lo, hi = bootstrap_ci([1.0] * 10 + [0.0] * 10, n_boot=2000, seed=1)
    assert 0.25 < lo < 0.5 < hi < 0.75
    assert bootstrap_ci([0.3, 0.3, 0.3]) == pytest.approx((0.3, 0.3))
    assert bootstrap_ci([]) == (0.0, 0.0)
