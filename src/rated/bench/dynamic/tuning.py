"""Tune each method's settings on validation seeds (never on test), over documented grids.

Starting values come from libraries practitioners use:

- ``breaker``: Envoy outlier detection ejects a host after ``consecutive_5xx = 5`` failures for
  ``base_ejection_time = 30 s``, multiplied by the number of ejections; resilience4j's count-based
  breaker waits ``waitDurationInOpenState = 60 s`` (exponential back-off optional); LiteLLM cools a
  deployment down after ``allowed_fails`` (3) failures for ``cooldown_time`` (5-60 s) and honours 429s.
  Grid: threshold {1, 2, 3, 5} x cool-down {100, 200, 400, 800, 1600, 3200} steps x back-off {1, 2}
  (x retry-after respected {no, yes} in scenarios with rate limits).
- ``window_breaker``: resilience4j's ``slidingWindowSize = 100``, ``minimumNumberOfCalls = 100``,
  ``failureRateThreshold = 50%``; a tool sees only tens of calls here, so the grid scales the window
  down: window {5, 10, 20} x minimum calls {2, 3} x threshold {0.5} x cool-down {200, 800, 3200}.
- ``global_mab``: weight {0.15, 0.3, 0.5, 1.0} x gamma {0.95, 1.0} x half-life {500, 2000, inf}
  (the paper's gamma 0.95, alpha 0.1) x prior weight {0, 1} (0: an unobserved tool scores 1, as in RATED;
  1: the prior mean is r_static, which rewards a tool for having been picked once).
- ``batch_policy``: batch {50, 200, 500} steps x weight {0.3, 1.0} x half-life {500, inf} x prior weight
  {0, 1}.
- ``rated``: ``RATED_GRID``, the settings that decide how long a failure is remembered (base recovery
  half-life of a server error {200, 800, 3200} x back-off {1, 2}, the same two knobs as the breaker's)
  and the prior's weight w3 {0.05, 0.10}, x the ranking: the paper's fusion with the health gate
  (``utility`` 0) or expected utility with weight {0.05, 0.10}, x the evidence half-life {2000, 500} (a
  failure during an outage also lowers the reliability estimate, and a demoted tool is not called again to
  correct it: only fading does) (x provider noise {0.1, 0.3} where providers fail together); everything
  else stays at its default.

Selection: the highest mean Post-Fail SR over the validation seeds; ties (within 1e-4) go to the lower
FSR, then to the earlier grid point. With a price per failed call (``fault_cost`` c > 0, the CLI's
``--fault-cost``): the highest mean ``Post-Fail SR - c x FSR`` instead, for every method alike: both are
counted per post-onset step (successes; calls into failing tools, every attempt of a multi-call method),
so c = 1 counts a call into a failing tool (latency, an error the agent handles, a retry) as costly as a
step without success. The default (0) tunes for success alone.
"""

from __future__ import annotations

import itertools
import math
import os
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np

from rated.bench.dynamic.runner import MethodSpec, Prepared, method_rows
from rated.errors import ConfigError
from rated.shown import shown

__all__ = ["GRIDS", "RATED_GRID", "TuneResult", "check_fault_cost", "grid_points", "tune", "tune_all"]

RATED_GRID: dict[str, list[Any]] = {
    "recover_tool_error": [200.0, 800.0, 3200.0],
    "backoff": [1.0, 2.0],
    "w3": [0.05, 0.10],
    "utility": [0.0, 0.05, 0.10],
    "half_life": [2000.0, 500.0],
}

GRIDS: dict[str, dict[str, list[Any]]] = {
    "breaker": {
        "failure_threshold": [1, 2, 3, 5],
        "cooldown": [100.0, 200.0, 400.0, 800.0, 1600.0, 3200.0],
        "backoff": [1.0, 2.0],
    },
    "window_breaker": {
        "window": [5, 10, 20],
        "min_calls": [2, 3],
        "threshold": [0.5],
        "cooldown": [200.0, 800.0, 3200.0],
    },
    "global_mab": {
        "w_mab": [0.15, 0.3, 0.5, 1.0],
        "gamma": [0.95, 1.0],
        "half_life": [500.0, 2000.0, math.inf],
        "prior_weight": [0.0, 1.0],
    },
    "batch_policy": {
        "batch": [50.0, 200.0, 500.0],
        "w_mab": [0.3, 1.0],
        "half_life": [500.0, math.inf],
        "prior_weight": [0.0, 1.0],
    },
    "rated": RATED_GRID,
}
RATE_LIMIT_SCENARIOS = ("outages", "caller_errors")
PROVIDER_SCENARIOS = ("outages", "provider")


def grid_points(policy: str, scenario: str) -> list[dict[str, Any]]:
    """Every setting tried for ``policy`` in ``scenario`` (one empty setting for untuned methods)."""
    grid = dict(GRIDS.get(policy, {}))
    if policy in ("breaker", "window_breaker") and scenario in RATE_LIMIT_SCENARIOS:
        grid["respect_retry_after"] = [False, True]
    if policy == "rated" and scenario in PROVIDER_SCENARIOS:
        grid["provider_noise"] = [0.1, 0.3]
    if not grid:
        return [{}]
    keys = list(grid)
    points = [dict(zip(keys, values, strict=True)) for values in itertools.product(*(grid[k] for k in keys))]
    return [p for p in points if p.get("min_calls", 0) <= p.get("window", math.inf)]


@dataclass
class TuneResult:
    """The chosen setting of one method and the validation score of every setting tried."""

    label: str
    params: dict[str, Any]
    post_fail_sr: float
    fsr: float
    tried: list[dict[str, Any]]  # [{"params", "post_fail_sr", "fsr"}]
    fault_cost: float = 0.0  # the price per failed call the choice was made with (module docstring)


_PREP: Prepared | None = None  # shared with forked workers


def _evaluate(job: tuple[MethodSpec, int]) -> tuple[int, float, float]:
    spec, i = job
    assert _PREP is not None
    rows = method_rows(_PREP, spec)
    return i, float(np.mean([r["post_fail_sr"] for r in rows])), float(np.mean([r["fsr"] for r in rows]))


def tune(
    prep: Prepared,
    base: MethodSpec,
    points: Sequence[Mapping[str, Any]] | None = None,
    *,
    jobs: int = 1,
    on_progress: Callable[[str], None] | None = None,
    fault_cost: float = 0.0,
) -> TuneResult:
    """Try every setting of ``base.policy`` (``base.params`` held fixed) on the prepared validation seeds."""
    return tune_all(
        prep,
        [base],
        {base.label: points} if points is not None else None,
        jobs=jobs,
        on_progress=on_progress,
        fault_cost=fault_cost,
    )[base.label]


def tune_all(
    prep: Prepared,
    bases: Sequence[MethodSpec],
    points: Mapping[str, Sequence[Mapping[str, Any]] | None] | None = None,
    *,
    jobs: int = 1,
    on_progress: Callable[[str], None] | None = None,
    fault_cost: float = 0.0,
) -> dict[str, TuneResult]:
    """Tune several methods at once (one pool of workers for all their grid points)."""
    global _PREP
    fault_cost = check_fault_cost(fault_cost)
    grids = {
        b.label: list((points or {}).get(b.label) or grid_points(b.policy, prep.scenario.name)) for b in bases
    }
    jobs_list: list[tuple[MethodSpec, int]] = []
    owner: list[tuple[str, dict[str, Any]]] = []
    for b in bases:
        for p in grids[b.label]:
            params = {**b.params, **p}
            jobs_list.append((MethodSpec(b.label, b.policy, b.retriever, params, b.attempts), len(owner)))
            owner.append((b.label, dict(p)))
    scores: list[tuple[float, float]] = [(0.0, 0.0)] * len(jobs_list)
    _PREP = prep
    try:
        workers = max(1, min(int(jobs), len(jobs_list), os.cpu_count() or 1))
        if workers > 1:
            with ProcessPoolExecutor(workers) as pool:
                for done, (i, sr, fsr) in enumerate(pool.map(_evaluate, jobs_list), 1):
                    scores[i] = (sr, fsr)
                    if on_progress:
                        on_progress(f"tuning {done}/{len(jobs_list)}")
        else:
            for done, job in enumerate(jobs_list, 1):
                i, sr, fsr = _evaluate(job)
                scores[i] = (sr, fsr)
                if on_progress:
                    on_progress(f"tuning {done}/{len(jobs_list)}")
    finally:
        _PREP = None
    out: dict[str, TuneResult] = {}
    for b in bases:
        tried = [
            {"params": p, "post_fail_sr": scores[i][0], "fsr": scores[i][1]}
            for i, (lab, p) in enumerate(owner)
            if lab == b.label
        ]
        best = _best(tried, fault_cost)
        out[b.label] = TuneResult(
            b.label, {**b.params, **best["params"]}, best["post_fail_sr"], best["fsr"], tried, fault_cost
        )
    return out


def check_fault_cost(value: Any) -> float:
    """``fault_cost`` as a float, refused unless a finite number >= 0 (a negative price rewards faults)."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value < 0:
        raise ConfigError(f"the price per failed call must be a finite number >= 0, got {shown(value)}")
    return float(value)


def _best(tried: Sequence[Mapping[str, Any]], fault_cost: float) -> Mapping[str, Any]:
    """The setting with the highest ``post_fail_sr - fault_cost * fsr``; ties (within 1e-4) go to the lower
    FSR, then to the earlier grid point."""

    def objective(t: Mapping[str, Any]) -> float:
        return t["post_fail_sr"] - fault_cost * t["fsr"]  # success alone at price 0, exactly

    best = tried[0]
    for t in tried[1:]:
        gain = objective(t) - objective(best)
        if gain > 1e-4 or (abs(gain) <= 1e-4 and t["fsr"] < best["fsr"]):
            best = t
    return best
