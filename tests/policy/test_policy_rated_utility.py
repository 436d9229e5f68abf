"""RATED's expected-utility ranking (``utility > 0``): hand-checked numbers on one- and two-tool streams.

``S_final = w1 S_sem + w3 r_static + utility * log(S_bandit)``: a failing tool is dropped only when the
semantic gap is small enough that the alternative is about as likely to be relevant; no gate.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from rated.errors import ConfigError
from rated.outcome import Outcome
from rated.policy import Candidates, Feedback, RatedPolicy


def cands(now: float, semantic=(0.62, 0.60), ids=("a", "b")) -> Candidates:
    return Candidates(ids, np.array(semantic), np.full(len(ids), 0.7), ids, None, now)


def learn(p: RatedPolicy, tool: str, now: float, kind: str = "tool_error") -> None:
    p.learn(Feedback(tool, Outcome.of(kind), now, None, None))


def top(p: RatedPolicy, c: Candidates) -> str:
    return c.tool_ids[int(p.rank(c).order[0])]


def test_one_failure_hand_checked() -> None:
    """One server error at t=1, ranked at t=2 (defaults: down_prior 0.05, noise 0.02, recovery 200,
    2 pseudo-successes, evidence half-life 2000, alpha 0.1, no context)."""
    p = RatedPolicy(utility=0.1)
    learn(p, "a", 1.0)
    down = 0.05 / (0.05 + 0.02 * 0.95)  # Bayes: P(down | one server error)
    up = 0.95 - (down - 0.05) * 2.0 ** (-1 / 200)  # relaxed for one step
    f = (1.0 - down) * 2.0 ** (-1 / 2000)  # the failure weighs 1 - P(down), faded for one step
    rel = 2.0 / (2.0 + f)
    bandit = rel * up * 0.95 / 0.95**2 + 0.1 / math.sqrt(2.0 + f)
    r = p.rank(cands(2.0, semantic=(0.80, 0.60)))
    np.testing.assert_allclose(r.components["bandit"][0], bandit, rtol=1e-9)
    np.testing.assert_allclose(r.scores[0] - r.scores[1], 0.75 * 0.2 + 0.1 * math.log(bandit), rtol=1e-6)
    # health is reported (a looks down) but not ranked apart: one order by expected utility, a first
    assert r.healthy is not None and r.healthy.tolist() == [False, True] and r.order.tolist() == [0, 1]
    assert not r.degraded


@pytest.mark.parametrize(("semantic", "expected"), [((0.80, 0.60), "a"), ((0.70, 0.60), "b")])
def test_kept_when_far_ahead_dropped_when_a_near_duplicate_is_close(semantic, expected) -> None:
    """After one failure the log term is about -0.113: worth a semantic gap of 0.151."""
    p = RatedPolicy(utility=0.1)
    learn(p, "a", 1.0)
    assert top(p, cands(2.0, semantic)) == expected
    paper = RatedPolicy()  # the paper's fusion gates the failed tool whatever the gap
    learn(paper, "a", 1.0)
    assert top(paper, cands(2.0, semantic)) == "b"


def test_half_failing_tool_stays_first_unless_an_alternative_is_close() -> None:
    """A chronically flaky tool (every other call times out) is worth about half a fresh one."""
    p = RatedPolicy(utility=0.1)
    for t in range(40):
        learn(p, "a", 10.0 * t, "timeout" if t % 2 else "success")
    now = 400.0  # right after a timeout
    assert top(p, cands(now, (0.80, 0.60))) == "a"
    assert top(p, cands(now, (0.62, 0.60))) == "b"
    bandit = p.rank(cands(now)).components["bandit"][0]
    assert 0.3 < bandit < 0.7


def test_a_dead_tool_sinks_below_any_close_alternative_and_recovers() -> None:
    p = RatedPolicy(utility=0.1)
    for t in (1.0, 2.0, 3.0):
        learn(p, "a", t)
    assert top(p, cands(4.0, (0.90, 0.60))) == "b"  # three server errors: log term about -0.28
    assert top(p, cands(20_000.0, (0.62, 0.60))) == "a"  # the belief relaxes: back on top


def test_utility_zero_is_the_paper_fusion_and_negative_is_rejected() -> None:
    a, b = RatedPolicy(), RatedPolicy(utility=0.0)
    for p in (a, b):
        learn(p, "a", 1.0)
    np.testing.assert_array_equal(a.rank(cands(2.0)).scores, b.rank(cands(2.0)).scores)
    with pytest.raises(ConfigError, match="utility"):
        RatedPolicy(utility=-0.1)
