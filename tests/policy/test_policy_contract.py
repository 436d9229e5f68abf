"""Checks every registered re-ranker must pass (river's contract-test pattern)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from rated.errors import ConfigError
from rated.outcome import Outcome
from rated.policy import POLICIES, BasePolicy, Candidates, Feedback, Policy, make_policy
from rated.store.codec import decode_state, encode_state

NAMES = sorted(POLICIES)
IDS = ("a", "b", "c", "d")
PROVIDERS = ("p1", "p1", "p2", "p3")
DIM = 16


def _ctx(seed: int) -> np.ndarray:
    v = np.random.default_rng(seed).normal(size=DIM).astype(np.float32)
    return v / np.linalg.norm(v)


def _cands(now: float, seed: int = 0, semantic=(0.70, 0.66, 0.62, 0.40)) -> Candidates:
    return Candidates(IDS, np.array(semantic), np.array([0.8, 0.6, 0.7, 0.9]), PROVIDERS, _ctx(seed), now)


def _history(policy: BasePolicy) -> None:
    """A mixed history: successes, every tool-side error kind, a rate limit with a hint."""
    kinds = ["success", "tool_error", "timeout", "success", "auth_error", "tool_error", "success"]
    for t, kind in enumerate(kinds):
        tool = IDS[t % 3]
        policy.learn(Feedback(tool, Outcome.of(kind), float(t), _ctx(t), PROVIDERS[IDS.index(tool)]))
    policy.learn(Feedback("c", Outcome.of("rate_limited", retry_after=5.0), 8.0, _ctx(8), "p2"))


@pytest.fixture(params=NAMES)
def name(request: pytest.FixtureRequest) -> str:
    return request.param


def test_implements_protocol(name: str) -> None:
    policy = make_policy(name)
    assert isinstance(policy, Policy)
    assert isinstance(policy, BasePolicy)


def test_clone_is_untrained_with_same_params(name: str) -> None:
    fresh = make_policy(name)
    trained = make_policy(name)
    _history(trained)
    clone = trained.clone()
    assert clone.get_params() == trained.get_params()
    assert list(clone.all_state_keys()) == []
    c = _cands(20.0)
    np.testing.assert_array_equal(clone.rank(c).order, fresh.rank(c).order)
    np.testing.assert_allclose(clone.rank(c).scores, fresh.rank(c).scores)


def test_same_settings_same_history_same_ranking(name: str) -> None:
    p1, p2 = make_policy(name), make_policy(name)
    _history(p1)
    _history(p2)
    for now in (9.0, 50.0, 5000.0):
        r1, r2 = p1.rank(_cands(now, seed=3)), p2.rank(_cands(now, seed=3))
        np.testing.assert_array_equal(r1.order, r2.order)
        np.testing.assert_array_equal(r1.scores, r2.scores)


def test_learn_touches_only_its_keys(name: str) -> None:
    policy = make_policy(name)
    _history(policy)
    before = {k: policy.get_state(k) for k in policy.all_state_keys()}
    fb = Feedback("d", Outcome.of("tool_error"), 30.0, _ctx(30), "p3")
    policy.learn(fb)
    allowed = set(policy.state_keys(fb))
    for key in set(before) | set(policy.all_state_keys()):
        if key in allowed:
            continue
        old, new = before.get(key), policy.get_state(key)
        assert (old is None) == (new is None), key
        if old is not None:
            assert old.keys() == new.keys()
            for arr in old:
                np.testing.assert_array_equal(old[arr], new[arr], err_msg=f"{name}: {key}.{arr} changed")


def test_caller_errors_never_count(name: str) -> None:
    policy = make_policy(name)
    before = policy.rank(_cands(1.0))
    for t in range(20):
        policy.learn(Feedback("a", Outcome.of("caller_error"), float(t), _ctx(t), "p1"))
    after = policy.rank(_cands(21.0))
    assert list(policy.all_state_keys()) == []
    np.testing.assert_array_equal(before.order, after.order)
    assert bool(after.healthy[0])


def test_ranking_never_empty_and_fails_open(name: str) -> None:
    policy = make_policy(name)
    for t in range(30):
        for i, tool in enumerate(IDS):
            policy.learn(Feedback(tool, Outcome.of("auth_error"), float(t), _ctx(i), PROVIDERS[i]))
    ranking = policy.rank(_cands(31.0))
    assert sorted(ranking.order.tolist()) == [0, 1, 2, 3]
    assert ranking.scores.shape == (4,) and np.isfinite(ranking.scores).all()
    if not ranking.healthy.any():
        assert ranking.degraded


def test_nan_inputs_rejected(name: str) -> None:
    with pytest.raises(ConfigError):
        Candidates(IDS, np.array([0.5, math.nan, 0.1, 0.2]), np.full(4, 0.5), PROVIDERS, None, 0.0)
    with pytest.raises(ConfigError):
        Candidates(IDS, np.full(4, 0.5), np.array([0.5, 0.1, np.inf, 0.2]), PROVIDERS, None, 0.0)
    bad_ctx = _ctx(0).copy()
    bad_ctx[3] = np.nan
    with pytest.raises(ConfigError):
        Candidates(IDS, np.full(4, 0.5), np.full(4, 0.5), PROVIDERS, bad_ctx, 0.0)
    with pytest.raises(ConfigError):
        Outcome.of("rate_limited", retry_after=math.nan)


def test_a_nan_in_unchecked_candidates_still_fails_the_ranking(name: str) -> None:
    """``Candidates._trusted`` (the retriever's own arrays) skips the checks; a NaN score stops ``rank``."""
    sem = np.array([0.5, math.nan, 0.1, 0.2], dtype=np.float32)
    trusted = Candidates._trusted(IDS, sem, np.full(4, 0.5, np.float32), PROVIDERS, _ctx(0), 0.0)
    policy = make_policy(name)
    _history(policy)
    with pytest.raises(ConfigError, match="invalid scores"):
        policy.rank(trusted)


def test_state_round_trip_gives_same_ranking(name: str) -> None:
    trained = make_policy(name)
    _history(trained)
    restored = make_policy(name)
    for key in trained.all_state_keys():
        state = trained.get_state(key)
        assert state is not None
        assert all(isinstance(v, np.ndarray) and v.dtype.kind in "fiub" for v in state.values())
        restored.set_state(key, decode_state(encode_state(state)))  # through the store's codec
    assert sorted(restored.all_state_keys()) == sorted(trained.all_state_keys())
    for now in (9.0, 12.0, 400.0, 10_000.0):
        r1, r2 = trained.rank(_cands(now, seed=1)), restored.rank(_cands(now, seed=1))
        np.testing.assert_array_equal(r1.order, r2.order)
        np.testing.assert_allclose(r1.scores, r2.scores, rtol=1e-6, atol=1e-7)
    # and learning continues identically from the restored state
    fb = Feedback("b", Outcome.of("timeout"), 13.0, _ctx(13), "p1")
    trained.learn(fb)
    restored.learn(fb)
    np.testing.assert_allclose(
        trained.rank(_cands(14.0)).scores, restored.rank(_cands(14.0)).scores, rtol=1e-6
    )


def test_set_state_none_forgets(name: str) -> None:
    policy = make_policy(name)
    _history(policy)
    for key in list(policy.all_state_keys()):
        policy.set_state(key, None)
    assert list(policy.all_state_keys()) == []
    fresh = make_policy(name)
    np.testing.assert_allclose(policy.rank(_cands(20.0)).scores, fresh.rank(_cands(20.0)).scores)


def test_probe_targets_are_known_tools(name: str) -> None:
    policy = make_policy(name)
    _history(policy)
    targets = policy.probe_targets(10.0, 2)
    assert len(targets) <= 2
    assert set(targets) <= set(IDS)
    if not policy.uses_probes:
        assert targets == []


def test_unknown_policy_and_bad_params() -> None:
    with pytest.raises(ConfigError, match="unknown policy"):
        make_policy("nope")
    with pytest.raises(ConfigError, match="bad parameters"):
        make_policy("breaker", not_a_param=1)


@pytest.mark.parametrize(
    ("healthy", "components", "what"),
    [
        (np.ones(5, dtype=bool), {}, "healthy mask of shape (5,)"),
        (np.ones(3, dtype=bool), {}, "healthy mask of shape (3,)"),
        (True, {}, "healthy mask of shape ()"),
        (None, {"bandit": np.ones(3)}, "component 'bandit' of shape (3,)"),
        (None, {"ok": np.ones(4), "prior": 0.5}, "component 'prior' of shape ()"),
        (np.ones(4, dtype=bool), {"bandit": np.ones((4, 1))}, "component 'bandit' of shape (4, 1)"),
    ],
)
def test_bad_healthy_or_components_from_a_custom_policy_name_it(healthy, components, what) -> None:
    class Sloppy(BasePolicy):
        name = "sloppy"

        def _score(self, candidates):
            return np.asarray(candidates.semantic, dtype=np.float64), components, healthy

    with pytest.raises(ConfigError, match=r"Sloppy\._score returned") as err:
        Sloppy().rank(_cands(0.0))
    assert what in str(err.value) and "for 4 candidates" in str(err.value)


def test_well_shaped_custom_policy_ranks_healthy_first() -> None:
    class Fine(BasePolicy):
        name = "fine"

        def _score(self, candidates):
            s = np.asarray(candidates.semantic, dtype=np.float64)
            return s, {"semantic": s}, [False, True, True, True]

    ranking = Fine().rank(_cands(0.0))
    assert ranking.order.tolist() == [1, 2, 3, 0] and not ranking.degraded


def test_plain_ranking_is_the_ranking(name: str) -> None:
    """``_ranked`` (what the retriever turns into hits) holds the same values as ``rank``'s arrays."""
    policy = make_policy(name)
    _history(policy)
    for now in (9.0, 12.0, 5000.0):
        c = _cands(now, seed=2)
        ranking = policy.rank(c)
        order, scores, components, healthy, degraded = policy._ranked(c)
        assert order == ranking.order.tolist() and scores == ranking.scores.tolist()
        assert healthy == ranking.healthy.tolist() and degraded == ranking.degraded
        assert list(components) == list(ranking.components)
        for key, values in components.items():
            assert np.asarray(values, dtype=np.float64).tolist() == ranking.components[key].tolist(), key
        assert all(type(v) is float for v in scores) and all(type(h) is bool for h in healthy)


class _Lists(BasePolicy):
    """A policy whose ``_score`` returns plain lists, as RATED's does."""

    name = "lists"

    def __init__(self, scores=(0.2, 0.5, 0.5, 0.1), healthy=None, bandit=(1.0, 0.5, 0.5, 0.0)) -> None:
        self.scores, self.healthy, self.bandit = scores, healthy, bandit

    def _score(self, candidates):
        return list(self.scores), {"bandit": list(self.bandit)}, self.healthy


def test_plain_lists_from_score_rank_like_arrays() -> None:
    lists = _Lists().rank(_cands(0.0))
    assert lists.order.tolist() == [1, 2, 0, 3]  # a tie keeps the candidates' order
    assert lists.scores.dtype == np.float64 and lists.components["bandit"].dtype == np.float64
    arrays = _Lists(np.array(_Lists().scores), None, np.array(_Lists().bandit)).rank(_cands(0.0))
    np.testing.assert_array_equal(lists.order, arrays.order)
    np.testing.assert_array_equal(lists.scores, arrays.scores)
    grouped = _Lists(healthy=[True, False, True, True]).rank(_cands(0.0))
    assert grouped.order.tolist() == [2, 0, 3, 1] and not grouped.degraded  # healthy first, then by score
    assert _Lists(healthy=[False] * 4).rank(_cands(0.0)).degraded


@pytest.mark.parametrize(
    ("policy", "what"),
    [
        (_Lists(scores=(0.1, 0.2, 0.3)), "invalid scores"),
        (_Lists(scores=(0.1, math.nan, 0.3, 0.4)), "invalid scores"),
        (_Lists(scores=(0.1, math.inf, 0.3, 0.4)), "invalid scores"),
        (_Lists(scores=(0.1, "x", 0.3, 0.4)), "invalid scores"),
        (_Lists(healthy=[True, False]), "healthy mask of shape (2,)"),
        (_Lists(bandit=(1.0, 0.5)), "component 'bandit' of shape (2,)"),
    ],
)
def test_bad_plain_lists_from_score_are_named(policy: _Lists, what: str) -> None:
    with pytest.raises(ConfigError, match=r"_Lists\._score returned") as err:
        policy.rank(_cands(0.0))
    assert what in str(err.value)
