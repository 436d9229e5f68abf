"""The global MAB and batch baselines are not rewarded for having picked a tool (no popularity lock-in).

Found by the benchmark audit: with the prior mean at r_static, one success lifted a tool above a better
match that nobody had reported on, so the tuned global MAB fell below the static ranking.
"""

from __future__ import annotations

import numpy as np
import pytest

from rated.errors import ConfigError
from rated.outcome import Outcome
from rated.policy import BatchPolicy, Candidates, Feedback, GlobalMABPolicy

# b matches the query a little better; both have metadata prior 0.5
CANDS = Candidates(("a", "b"), np.array([0.60, 0.62]), np.array([0.5, 0.5]), ("a", "b"), None, 1.0)


def called(policy, tool: str, kind: str, now: float = 0.0):
    policy.learn(Feedback(tool, Outcome.of(kind), now, None, None))
    return policy


@pytest.mark.parametrize("cls", [GlobalMABPolicy, BatchPolicy])
def test_a_success_earns_no_rank(cls) -> None:
    # a worked once for another query; b was never called. Estimates: a (1 + 1) / 2 = 1, b 1 (fresh): the
    # semantic order stands. batch=1: the success is visible at now=1.
    p = called(cls(w_mab=0.15, **({"batch": 1.0} if cls is BatchPolicy else {})), "a", "success")
    assert p.rank(CANDS).order.tolist() == [1, 0]
    np.testing.assert_allclose(p.rank(CANDS).components["mab"], [1.0, 1.0])


def test_prior_weight_one_is_the_old_lock_in() -> None:
    # m0 = r_static: a = (1 + 0.5) / 2 + 0.1 / sqrt(2) = 0.8207, b = 0.5 + 0.1 = 0.6;
    # scores a 0.75*0.60 + 0.15*0.8207 + 0.05 = 0.6231 > b 0.465 + 0.09 + 0.05 = 0.605
    p = called(GlobalMABPolicy(w_mab=0.15, prior_weight=1.0), "a", "success")
    r = p.rank(CANDS)
    np.testing.assert_allclose(r.components["mab"], [0.75 + 0.1 / np.sqrt(2), 0.6], rtol=1e-6)
    assert r.order.tolist() == [0, 1]


def test_a_failure_still_demotes() -> None:
    # b failed once: (0 + 1) / 2 + 0.1 / sqrt(2) = 0.5707; b 0.465 + 0.0856 + 0.05 < a 0.45 + 0.15 + 0.05
    p = called(GlobalMABPolicy(w_mab=0.15), "b", "tool_error")
    assert p.rank(CANDS).order.tolist() == [0, 1]
    assert p.clone().prior_weight == 0.0 and GlobalMABPolicy(prior_weight=0.5).clone().prior_weight == 0.5
    with pytest.raises(ConfigError):
        GlobalMABPolicy(prior_weight=1.5)
