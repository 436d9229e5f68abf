"""The paired MRR difference of the default semantic stage to every other method (offline benchmark)."""

from __future__ import annotations

import numpy as np

from rated.bench.offline import paired_differences


def test_paired_difference_is_the_mean_per_query_gap_with_an_interval_around_it():
    per_query = {
        "semantic": [1.0, 0.5, 1.0, 0.25],
        "bm25": [0.5, 0.5, 1.0, 0.25],
        "dense": [1.0, 0.5, 1.0, 0.25],
    }
    out = paired_differences(per_query, n_boot=500)
    assert set(out) == {"semantic - bm25", "semantic - dense"}
    lead = out["semantic - bm25"]
    assert lead["mean"] == 0.125 and 0.0 <= lead["ci95"][0] <= 0.125 <= lead["ci95"][1] <= 0.5
    assert out["semantic - dense"] == {"mean": 0.0, "ci95": [0.0, 0.0]}  # identical rankings: no gap at all


def test_a_method_ahead_on_every_query_has_an_interval_above_zero_though_its_own_intervals_overlap():
    rng = np.random.default_rng(0)
    other = rng.uniform(0.2, 0.8, size=400)
    per_query = {"semantic": list(other + 0.01), "tfidf": list(other)}
    (lo, hi) = paired_differences(per_query)["semantic - tfidf"]["ci95"]
    assert lo > 0.0 and abs(hi - 0.01) < 1e-9


def test_without_the_semantic_stage_there_is_nothing_to_pair():
    assert paired_differences({"bm25": [1.0], "dense": [0.5]}) == {}
