"""Benchmark-honesty checks from the audit: baselines on tiny hand-checked streams, and their grids."""

from __future__ import annotations

import numpy as np

from rated.bench.dynamic.candidates import CandidateTable
from rated.bench.dynamic.scenarios import ScenarioRun
from rated.bench.dynamic.schedule import Schedule
from rated.bench.dynamic.simulator import Draws, Pool, build_steps, run_policy
from rated.bench.dynamic.tuning import grid_points
from rated.policy import make_policy

# q0 ranks t0 (0.9) > t1 (0.1), t0 relevant; q1 ranks t1 (0.62) > t0 (0.60), t1 relevant. Nothing fails.
POOL = Pool(["t0", "t1"], ["p0", "p1"], np.full(2, 0.5), [frozenset({0}), frozenset({1})])
TABLE = CandidateTable(
    "hand", np.array([[0, 1], [1, 0]]), np.array([[0.9, 0.1], [0.62, 0.60]], dtype=np.float32), None
)
STEPS = build_steps(POOL, TABLE, 2)
STREAM = np.array([0, 1, 1])
QUIET = ScenarioRun(Schedule.empty(2, 3))
DRAWS = Draws.make(3, seed=0, probe_budget=1)


def successes(name: str, **params) -> list[bool]:
    return run_policy(make_policy(name, **params), POOL, STREAM, QUIET, DRAWS, STEPS).success.tolist()


def test_mab_baselines_match_static_when_nothing_fails() -> None:
    assert successes("static") == [True, True, True]
    # t0 worked at step 0; with the old prior mean (r_static) that success put t0 above t1 for q1
    assert successes("global_mab", w_mab=0.15) == [True, True, True]
    assert successes("batch_policy", w_mab=0.3, batch=1.0) == [True, True, True]
    assert successes("global_mab", w_mab=0.15, prior_weight=1.0) == [True, False, False]


def test_mab_grids_try_both_prior_means() -> None:
    for name in ("global_mab", "batch_policy"):
        points = grid_points(name, "outages")
        assert {p["prior_weight"] for p in points} == {0.0, 1.0}
        rest = {tuple(sorted((k, v) for k, v in p.items() if k != "prior_weight")) for p in points}
        assert len(points) == 2 * len(rest)  # every other setting is tried with both
