"""What RATED must do (issue 2 item 6, paper-notes section 2): hand-sized situations with known answers."""

from __future__ import annotations

import numpy as np
import pytest

from rated.errors import ConfigError
from rated.outcome import Outcome
from rated.policy import Candidates, Feedback, RatedPolicy
from rated.policy.rated import PROVIDER_PREFIX

DIM = 32


def unit(seed: int) -> np.ndarray:
    v = np.random.default_rng(seed).normal(size=DIM).astype(np.float32)
    return v / np.linalg.norm(v)


def cands(
    now: float, semantic=(0.62, 0.60), ids=("a", "b"), providers=None, ctx=None, prior=0.7
) -> Candidates:
    providers = providers or ids
    return Candidates(ids, np.array(semantic), np.full(len(ids), prior), providers, ctx, now)


def fail(
    p: RatedPolicy, tool: str, now: float, kind: str = "tool_error", ctx=None, provider=None, **kw
) -> None:
    p.learn(Feedback(tool, Outcome.of(kind, **kw), now, ctx, provider))


def top(p: RatedPolicy, c: Candidates) -> str:
    return c.tool_ids[int(p.rank(c).order[0])]


@pytest.mark.parametrize("kind", ["tool_error", "auth_error"])
def test_demoted_after_first_failure_when_alternative_is_close(kind: str) -> None:
    p = RatedPolicy()
    assert top(p, cands(0.0)) == "a"
    fail(p, "a", 1.0, kind)
    assert top(p, cands(2.0)) == "b"


@pytest.mark.parametrize("kind", ["tool_error", "timeout", "auth_error"])
@pytest.mark.parametrize("gap", [0.05, 0.3, 0.9])
def test_demoted_within_two_failures_whatever_the_gap(kind: str, gap: float) -> None:
    p = RatedPolicy()
    c = lambda now: cands(now, semantic=(min(1.0, 0.05 + gap), 0.05))  # noqa: E731
    assert top(p, c(0.0)) == "a"
    fail(p, "a", 1.0, kind)
    fail(p, "a", 2.0, kind)
    assert top(p, c(3.0)) == "b"
    assert not p.rank(c(3.0)).healthy[0]


def test_a_timeout_demotes_softly_first() -> None:
    """One timeout is often transient: below a close alternative, still healthy."""
    p = RatedPolicy()
    fail(p, "a", 1.0, "timeout")
    r = p.rank(cands(2.0))
    assert r.order[0] == 1 and bool(r.healthy[0])
    far = p.rank(cands(2.0, semantic=(0.9, 0.3)))
    assert far.order[0] == 0  # far ahead semantically: re-tried


def test_recovers_after_time_passes() -> None:
    p = RatedPolicy()
    fail(p, "a", 1.0)
    assert top(p, cands(2.0)) == "b"
    ranks = {now: top(p, cands(now)) for now in (50.0, 5000.0)}
    assert ranks == {50.0: "b", 5000.0: "a"}
    scores = p.rank(cands(50_000.0)).scores
    fresh = RatedPolicy().rank(cands(50_000.0)).scores
    np.testing.assert_allclose(scores, fresh, atol=2e-3)  # the failure has faded away


def test_backoff_grows_with_repeated_failures() -> None:
    def back_on_top(failures: int) -> float:
        p = RatedPolicy()
        for i in range(failures):
            fail(p, "a", float(i))
        t0 = float(failures - 1)
        for dt in range(1, 100_000, 10):
            if top(p, cands(t0 + dt)) == "a":
                return dt
        return float("inf")

    one, three = back_on_top(1), back_on_top(3)
    assert one < three
    assert three >= 3 * one


def test_error_kinds_set_how_long_a_demotion_lasts() -> None:
    def healthy_again(kind: str) -> float:
        p = RatedPolicy()
        fail(p, "a", 0.0, kind)
        fail(p, "a", 1.0, kind)
        return next(t for t in range(2, 200_000, 5) if p.rank(cands(float(t))).healthy[0])

    assert healthy_again("timeout") < healthy_again("tool_error") < healthy_again("auth_error")


def test_evidence_carries_over_to_a_different_query() -> None:
    p = RatedPolicy()
    q1, q2 = unit(1), unit(2)
    assert abs(float(q1 @ q2)) < 0.5
    fail(p, "a", 1.0, ctx=q1)
    assert top(p, cands(2.0, ctx=q2)) == "b"


def test_contextual_part_learns_query_specific_failures() -> None:
    """A tool that keeps failing for one kind of query but works for another scores lower on the first."""
    p = RatedPolicy(recover_tool_error=1.0, noise_tool_error=0.5)  # availability forgets fast: isolate p_rel
    bad, good = unit(3), unit(4)
    for t in range(0, 400, 2):
        fail(p, "a", float(t), ctx=bad)
        p.learn(Feedback("a", Outcome.of("success"), float(t + 1), good, None))
    rel_bad = p.rank(cands(401.0, ctx=bad)).components["reliability"][0]
    rel_good = p.rank(cands(401.0, ctx=good)).components["reliability"][0]
    assert rel_bad < rel_good - 0.2


def test_provider_evidence_is_shared() -> None:
    ids, providers = ("a2", "b", "a3"), ("P", "Q", "P")
    p = RatedPolicy()
    before = p.rank(cands(0.0, (0.62, 0.60, 0.3), ids, providers)).scores[0]
    fail(p, "a1", 1.0, provider="P")
    after = p.rank(cands(2.0, (0.62, 0.60, 0.3), ids, providers)).scores[0]
    assert after < before  # a2 never failed, but its provider's tool did
    fail(p, "a4", 3.0, provider="P")
    assert top(p, cands(4.0, (0.62, 0.60, 0.3), ids, providers)) == "b"
    p.learn(Feedback("a3", Outcome.of("success"), 5.0, None, "P"))  # the provider answers again
    assert top(p, cands(6.0, (0.62, 0.60, 0.3), ids, providers)) == "a2"
    assert PROVIDER_PREFIX + "P" in p.all_state_keys()


def test_rate_limit_with_retry_after_is_respected_not_punished() -> None:
    p = RatedPolicy()
    fresh = p.rank(cands(0.0)).scores
    fail(p, "a", 10.0, "rate_limited", retry_after=30.0)
    during = p.rank(cands(20.0))
    assert during.order[0] == 1 and not during.healthy[0]
    after = p.rank(cands(40.5))
    assert after.order[0] == 0 and bool(after.healthy[0])
    np.testing.assert_allclose(after.scores, fresh)  # no lasting penalty


@pytest.mark.parametrize("kind", ["timeout", "tool_error", "auth_error"])
def test_retry_after_with_another_failure_keeps_the_tool_out_that_long(kind: str) -> None:
    """The server's own "not before" counts whatever the failure: the tool stays unavailable until then,
    on top of the failure counting against it (which alone would have let it back sooner)."""
    plain, hinted = RatedPolicy(), RatedPolicy()
    fail(plain, "a", 10.0, kind)
    fail(hinted, "a", 10.0, kind, retry_after=100_000.0)
    assert bool(plain.rank(cands(50_010.0)).healthy[0])  # recovered by now without the hint
    during = hinted.rank(cands(50_010.0))
    assert during.order[0] == 1 and not during.healthy[0]
    assert bool(hinted.rank(cands(100_011.0)).healthy[0])


def test_retry_after_with_a_success_or_caller_error_changes_nothing() -> None:
    p = RatedPolicy()
    fresh = p.rank(cands(0.0)).scores
    p.learn(Feedback("a", Outcome.of("caller_error", retry_after=500.0), 1.0, None, None))
    np.testing.assert_allclose(p.rank(cands(2.0)).scores, fresh)
    p.learn(Feedback("a", Outcome.of("success", retry_after=500.0), 3.0, None, None))
    assert bool(p.rank(cands(4.0)).healthy[0])


def test_caller_errors_do_not_demote() -> None:
    p = RatedPolicy()
    for t in range(10):
        p.learn(Feedback("a", Outcome.of("caller_error"), float(t), unit(t), "P"))
    assert top(p, cands(11.0)) == "a"


def test_fail_open_when_every_candidate_looks_down() -> None:
    p = RatedPolicy()
    for tool in ("a", "b"):
        fail(p, tool, 1.0, "auth_error")
    r = p.rank(cands(2.0))
    assert r.degraded and not r.healthy.any()
    assert r.order.tolist() == [0, 1]  # still ranked by score


def test_bandit_score_is_bounded_and_neutral_without_evidence() -> None:
    p = RatedPolicy()
    fresh = p.rank(cands(0.0, ctx=unit(0))).components["bandit"]
    np.testing.assert_allclose(fresh, [1.0, 1.0])
    for t in range(50):
        p.learn(Feedback("a", Outcome.of("success"), float(t), unit(t), None))
    b = p.rank(cands(51.0, ctx=unit(0))).components["bandit"]
    assert np.all((b >= 0) & (b <= 1))
    assert b[0] == pytest.approx(b[1], abs=1e-6)  # being picked often earns nothing: no popularity lock-in
    for t in range(51, 100):
        fail(p, "a", float(t))
    assert 0.0 <= p.rank(cands(101.0, ctx=unit(0))).components["bandit"][0] < 0.2


def test_probes_target_demoted_tools_and_a_passing_probe_restores() -> None:
    p = RatedPolicy()
    fail(p, "a", 1.0)
    fail(p, "b", 2.0, "timeout")
    fail(p, "b", 3.0, "timeout")
    targets = p.probe_targets(10.0, 5)
    assert set(targets) == {"a", "b"}
    assert p.probe_targets(10.0, 1) in (["a"], ["b"])
    p.learn(Feedback("a", Outcome.of("success"), 11.0, None, None, probe=True))
    assert top(p, cands(12.0)) == "a"
    assert "a" not in p.probe_targets(12.0, 5)


def test_invalid_settings_are_named() -> None:
    with pytest.raises(ConfigError, match="gamma"):
        RatedPolicy(gamma=1.5)
    with pytest.raises(ConfigError, match="down_prior"):
        RatedPolicy(down_prior=0.0)


def test_context_dimension_mismatch_is_an_error() -> None:
    p = RatedPolicy()
    fail(p, "a", 1.0, ctx=unit(1))
    with pytest.raises(ConfigError, match="dimension"):
        p.learn(Feedback("a", Outcome.of("success"), 2.0, np.ones(DIM + 1, dtype=np.float32), None))


@pytest.mark.parametrize("with_context", [True, False])
@pytest.mark.parametrize("params", [{"prior_weight": 0.8}, {"prior_weight": 0.8, "utility": 0.1}, {}])
def test_a_tool_without_state_scores_the_same_whoever_ranks_beside_it(params, with_context) -> None:
    """A fresh tool's estimate must not depend on whether another candidate has state (there used to be
    a separate path for all-fresh sets, with its own bonus and float32 arithmetic)."""
    x = np.full(8, 1 / np.sqrt(8), dtype=np.float32)
    p = RatedPolicy(**params)
    p.learn(Feedback("known", Outcome.of("tool_error"), now=1.0, context=x if with_context else None))
    prior = np.array([0.61, 0.37], dtype=np.float32)
    fresh = Candidates(("a", "b"), np.array([0.7, 0.6]), prior, ("a", "b"), x, now=2.0)
    mixed = Candidates(
        ("a", "b", "known"), np.array([0.7, 0.6, 0.5]), np.append(prior, 0.5), ("a", "b", "known"), x, now=2.0
    )
    alone, beside = p.rank(fresh), p.rank(mixed)
    for name in ("bandit", "reliability", "availability"):
        assert alone.components[name].tolist() == beside.components[name][:2].tolist(), name
    assert alone.scores.tolist() == beside.scores[:2].tolist()


def test_a_forgotten_provider_shares_nothing_with_the_tools_that_reuse_its_row() -> None:
    p = RatedPolicy()
    ids, providers = ("a2", "b"), ("P", "Q")
    fresh = p.rank(cands(10.0, ids=ids, providers=providers)).scores.tolist()
    fail(p, "a1", 1.0, provider="P")
    p.set_state("a1", None)
    p.set_state(PROVIDER_PREFIX + "P", None)  # e.g. another process's reset, read from the store
    for t, tool in enumerate(("z1", "z2", "z3")):  # new rows: the freed ones first
        fail(p, tool, 2.0 + t)
    assert p.rank(cands(10.0, ids=ids, providers=providers)).scores.tolist() == fresh


def test_a_tool_named_like_a_provider_does_not_take_the_providers_state() -> None:
    """Tool "P" has no provider (its own id is its provider key); a provider also called "P" fails."""
    p = RatedPolicy()
    fresh = p.rank(cands(5.0, ids=("P", "b"), providers=("P", "b"))).scores.tolist()
    fail(p, "x", 1.0, provider="P")
    fail(p, "y", 2.0, provider="P")
    assert p.rank(cands(5.0, ids=("P", "b"), providers=("P", "b"))).scores.tolist() == fresh
    assert p.rank(cands(5.0, ids=("z", "b"), providers=("P", "b"))).scores[0] < fresh[0]


def test_numpy_timestamps_are_kept_as_floats() -> None:
    """A NumPy scalar ``now`` (a simulator's clock) is stored as a plain float, as a state read back from
    the store is: scoring reads it in float64, not in the scalar's own precision."""
    p, restored = RatedPolicy(), RatedPolicy()
    fail(p, "a", np.float32(1000.3), provider="P", ctx=unit(1))
    fail(p, "b", np.float32(1001.7), "timeout")
    for key in p.all_state_keys():
        restored.set_state(key, p.get_state(key))
    c = cands(1020.1, ctx=unit(2))
    assert p.rank(c).scores.tolist() == restored.rank(c).scores.tolist()
