"""Dynamic-benchmark metrics, checked by hand."""

from __future__ import annotations

import numpy as np
import pytest

from rated.bench.dynamic.metrics import (
    adaptation_steps,
    aggregate,
    paired,
    summarise_run,
    theta_for,
    trailing,
)


def test_trailing_mean() -> None:
    np.testing.assert_allclose(trailing(np.array([1, 0, 1, 1, 0]), 2), [0.5, 0.5, 1.0, 0.5])


def test_adaptation_steps_use_windows_after_the_onset_only() -> None:
    s = np.array([1] * 10 + [0, 0, 0, 1, 1, 1, 1, 1], dtype=float)  # onset at 10
    # windows of 4 after the onset: [0,0,0,1]=.25 [0,0,1,1]=.5 [0,1,1,1]=.75 [1,1,1,1]=1 ...
    assert adaptation_steps(s, 10, 0.75, 4) == 6  # the window ending at step 15: 6 post-onset steps
    assert adaptation_steps(s, 10, 0.25, 4) == 4  # already the first full window: the minimum
    assert adaptation_steps(s, 10, 1.01, 4) is None
    moving = np.full(len(s), 0.9)
    assert adaptation_steps(s, 10, moving, 4) == 7


def test_theta_follows_the_paper() -> None:
    assert theta_for(0.2) == 0.9 and theta_for(0.3) == 0.8


def test_summarise_run_by_hand() -> None:
    success = np.array([1, 1, 1, 1, 0, 1, 0, 1], dtype=bool)
    faults = np.array([0, 0, 0, 0, 1, 0, 2, 0])
    oracle = np.array([1, 1, 1, 1, 1, 1, 0, 1], dtype=bool)
    row = summarise_run(success, faults, oracle, onset=4, failure_rate=0.2, window=2, pre_window=4)
    assert row["post_fail_sr"] == 0.5 and row["fsr"] == 0.75
    assert row["regret"] == pytest.approx(0.25) and row["sr_pre"] == 1.0
    assert row["adaptation_steps"] is None  # target 0.9; windows: .5, .5, .5
    # oracle windows 1, .5, .5 -> targets .95, .475, .475: met by the window ending at step 6 (3 steps in)
    assert row["adaptation_steps_oracle"] == 3


def test_aggregate_and_paired() -> None:
    rows = [{"sr": 0.5, "adaptation_steps": 300}, {"sr": 0.7, "adaptation_steps": None}]
    agg = aggregate(rows)
    assert agg["sr"]["mean"] == pytest.approx(0.6) and agg["sr"]["std"] == pytest.approx(0.1414, abs=1e-4)
    assert agg["adaptation_steps"] == {"mean": 300.0, "std": 0.0, "never": 1}
    a = [{"post_fail_sr": 0.6, "fsr": 0.1, "regret": 0.02}, {"post_fail_sr": 0.5, "fsr": 0.2, "regret": 0.05}]
    b = [
        {"post_fail_sr": 0.55, "fsr": 0.1, "regret": 0.07},
        {"post_fail_sr": 0.5, "fsr": 0.1, "regret": 0.05},
    ]
    d = paired(a, b)
    assert d["post_fail_sr"]["a_better"] == 1 and d["post_fail_sr"]["ties"] == 1
    assert d["fsr"]["a_better"] == 0 and d["regret"]["a_better"] == 1
    assert d["post_fail_sr"]["mean"] == pytest.approx(0.025)
