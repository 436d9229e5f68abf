"""Each baseline does what its real-world counterpart does, on hand-sized histories."""

from __future__ import annotations

import math

import numpy as np
import pytest

from rated.errors import ConfigError
from rated.outcome import Outcome
from rated.policy import (
    BatchPolicy,
    BlacklistPolicy,
    Candidates,
    CircuitBreakerPolicy,
    Feedback,
    GlobalMABPolicy,
    RetryPolicy,
    StaticPolicy,
    WindowBreakerPolicy,
    make_policy,
)


def cands(now: float, semantic=(0.62, 0.60), prior=(0.5, 0.5)) -> Candidates:
    return Candidates(("a", "b"), np.array(semantic), np.array(prior), ("a", "b"), None, now)


def top(policy, now: float, **kw) -> str:
    return ("a", "b")[int(policy.rank(cands(now, **kw)).order[0])]


def learn(policy, tool: str, now: float, kind: str = "tool_error", **kw) -> None:
    policy.learn(Feedback(tool, Outcome.of(kind, **kw), now, None, None))


def test_static_and_no_feedback_fusion() -> None:
    assert top(StaticPolicy(), 0.0, prior=(0.1, 0.9)) == "a"
    assert top(make_policy("rated_no_feedback"), 0.0, prior=(0.1, 0.9)) == "b"  # 0.75*S_sem + 0.10*prior
    s = StaticPolicy()
    learn(s, "a", 1.0)
    assert top(s, 2.0) == "a" and list(s.all_state_keys()) == []
    with pytest.raises(ConfigError):
        StaticPolicy(w_sem=0, w_prior=0)


def test_blacklist_never_readmits() -> None:
    p = BlacklistPolicy()
    learn(p, "a", 1.0, "timeout")
    assert top(p, 2.0) == "b" and top(p, 1e9) == "b"
    learn(p, "a", 3.0, "success")  # even a success (from elsewhere) does not lift the ban
    assert top(p, 4.0) == "b"


def test_retry_attempts() -> None:
    assert make_policy("retry3").attempts == 3
    assert RetryPolicy(attempts=2).attempts == 2 and StaticPolicy().attempts == 1
    with pytest.raises(ConfigError):
        RetryPolicy(attempts=0)


def test_breaker_opens_after_n_consecutive_failures() -> None:
    p = CircuitBreakerPolicy(failure_threshold=3, cooldown=100)
    learn(p, "a", 1.0)
    learn(p, "a", 2.0)
    learn(p, "a", 3.0, "success")  # a success resets the count
    learn(p, "a", 4.0)
    learn(p, "a", 5.0)
    assert top(p, 6.0) == "a"
    learn(p, "a", 6.0)
    assert top(p, 7.0) == "b"
    assert top(p, 106.0) == "a"  # half-open after the cool-down


def test_breaker_half_open_trial_and_backoff() -> None:
    p = CircuitBreakerPolicy(failure_threshold=1, cooldown=100, backoff=2)
    learn(p, "a", 0.0)
    assert top(p, 99.0) == "b" and top(p, 100.0) == "a"
    learn(p, "a", 100.0)  # the half-open trial fails: re-open for twice as long
    assert top(p, 299.0) == "b" and top(p, 300.0) == "a"
    learn(p, "a", 300.0, "success")  # the trial passes: closed, back-off reset
    learn(p, "a", 301.0)
    assert top(p, 400.0) == "b" and top(p, 401.0) == "a"


def test_breaker_retry_after_and_probes() -> None:
    p = CircuitBreakerPolicy(failure_threshold=5, cooldown=1000, respect_retry_after=True)
    learn(p, "a", 0.0, "rate_limited", retry_after=20.0)
    assert top(p, 10.0) == "b" and top(p, 20.0) == "a"
    q = CircuitBreakerPolicy(failure_threshold=1, cooldown=1000)
    learn(q, "a", 0.0)
    learn(q, "b", 1.0)
    assert q.probe_targets(2.0, 1) == ["a"] and sorted(q.probe_targets(2.0, 5)) == ["a", "b"]
    q.learn(Feedback("a", Outcome.of("success"), 3.0, None, None, probe=True))
    assert top(q, 4.0) == "a" and q.probe_targets(4.0, 5) == ["b"]


def test_window_breaker_uses_the_failure_rate() -> None:
    p = WindowBreakerPolicy(window=4, min_calls=4, threshold=0.5, cooldown=50)
    for t, kind in enumerate(["tool_error", "success", "success"]):
        learn(p, "a", float(t), kind)
    assert top(p, 3.0) == "a"  # too few calls to judge
    learn(p, "a", 3.0)  # 2 failures in 4 calls: 50%
    assert top(p, 4.0) == "b" and top(p, 53.0) == "a"
    with pytest.raises(ConfigError):
        WindowBreakerPolicy(window=3, min_calls=5)


def test_global_mab_weights_and_discount() -> None:
    p = GlobalMABPolicy(w_mab=0.5, gamma=0.5, alpha=0.0)
    learn(p, "a", 1.0)
    assert top(p, 2.0) == "b"
    for t in range(2, 6):
        learn(p, "a", float(t), "success")  # with gamma 0.5 the failure is quickly outweighed
    assert top(p, 6.0) == "a"
    faded = GlobalMABPolicy(w_mab=0.5, alpha=0.0, half_life=10.0)
    learn(faded, "a", 0.0)
    assert top(faded, 1.0) == "b" and top(faded, 500.0) == "a"
    assert GlobalMABPolicy().half_life == math.inf


def test_batch_policy_sees_outcomes_only_at_batch_boundaries() -> None:
    p = BatchPolicy(batch=100, w_mab=0.5)
    learn(p, "a", 10.0)
    learn(p, "a", 20.0)
    assert top(p, 99.0) == "a" and top(p, 100.0) == "b"
    learn(p, "a", 150.0, "success")  # folds the two failures, buffers the success
    state = p.get_state("a")
    assert state is not None and state["pending"].shape == (1, 2)


def test_breaker_can_rank_by_rateds_static_order() -> None:
    plain, with_prior = CircuitBreakerPolicy(), CircuitBreakerPolicy(w_prior=0.10)
    assert top(plain, 0.0, prior=(0.1, 0.9)) == "a"
    assert top(with_prior, 0.0, prior=(0.1, 0.9)) == "b"  # 0.75*S_sem + 0.10*r_static, as rated_no_feedback
    learn(with_prior, "b", 1.0)
    assert top(with_prior, 2.0, prior=(0.1, 0.9)) == "a"


def test_paper_linucb_never_forgets_a_failure_and_locks_in_successes() -> None:
    p = make_policy("linucb_paper")
    x = np.full(8, 1 / np.sqrt(8), dtype=np.float32)
    c = lambda now: Candidates(("a", "b"), np.array([0.62, 0.60]), np.full(2, 0.8), ("a", "b"), x, now)  # noqa: E731
    for t in range(5):
        p.learn(Feedback("a", Outcome.of("tool_error"), float(t), x, None))
    assert p.rank(c(10.0)).order[0] == 1 and p.rank(c(1e9)).order[0] == 1  # no time fading: never back
    s = p.rank(c(0.0)).components["bandit"]
    for t in range(50):
        p.learn(Feedback("b", Outcome.of("success"), float(t), x, None))
    assert p.rank(c(60.0)).components["bandit"][1] > s[1] + 1.0  # unbounded: grows far past S_sem's scale
