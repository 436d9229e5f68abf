"""Scenarios: the paper's failing-set rule by hand, and each scenario's defining property."""

from __future__ import annotations

import numpy as np
import pytest

from rated.bench.dynamic.scenarios import ScenarioConfig, World, make_scenario, paper_failing_set
from rated.bench.dynamic.schedule import KINDS
from rated.errors import ConfigError
from rated.outcome import OutcomeKind

N = 60


def world(seed: int = 0, n: int = N) -> World:
    rng = np.random.default_rng(seed)
    return World(
        providers=np.arange(n) // 3,
        prior=rng.uniform(0.2, 0.9, n),
        gt_counts=np.where(np.arange(n) % 4 == 3, 0, rng.integers(1, 50, n)).astype(float),
    )


def test_paper_failing_set_by_hand() -> None:
    counts = np.array([5, 9, 0, 3, 7, 1, 2, 8, 4, 6], dtype=float)  # nine tools are relevant
    failing = paper_failing_set(counts, rate=0.3, skip_top=0.1, rng=np.random.default_rng(0))
    # by frequency: 1 (9), 7 (8), 4 (7), 9 (6), ...; skip round(0.9) = 1, take round(2.7) = 3
    assert failing.tolist() == [7, 4, 9]


def test_persistent_recovery_degraded() -> None:
    w = world()
    p = make_scenario(ScenarioConfig("persistent", failure_rate=0.3), w, 1).schedule
    assert (
        set(p.start.tolist()) == {2000} and set(p.end.tolist()) == {5000} and set(p.p_fail.tolist()) == {1.0}
    )
    assert np.all(w.gt_counts[p.tool] > 0)
    n_rel = int((w.gt_counts > 0).sum())
    assert len(p) == round(0.3 * n_rel)
    r = make_scenario(ScenarioConfig("recovery", failure_rate=0.3), w, 1).schedule
    assert set(r.end.tolist()) == {3500} and np.array_equal(np.sort(r.tool), np.sort(p.tool))
    d = make_scenario(ScenarioConfig("degraded", failure_rate=0.3), w, 1).schedule
    assert set(d.p_fail.tolist()) == {0.5}
    assert set(d.kind.tolist()) == {KINDS.index(OutcomeKind.TOOL_ERROR)}


def test_provider_takes_whole_providers() -> None:
    w = world()
    s = make_scenario(ScenarioConfig("provider", failure_rate=0.3), w, 2).schedule
    down = set(w.providers[s.tool].tolist())
    assert np.array_equal(np.sort(s.tool), np.flatnonzero(np.isin(w.providers, list(down))))


def test_coldstart_adds_tools_and_breaks_some_of_them() -> None:
    w = world(n=400)
    run = make_scenario(ScenarioConfig("coldstart", failure_rate=0.3, new_fraction=0.25), w, 3)
    new = ~run.pool_before
    assert run.add_at == 2000 and 60 < new.sum() < 140
    assert new[run.schedule.tool].all() and set(run.schedule.start.tolist()) == {2000}


def test_caller_errors_and_rate_limit_bursts() -> None:
    w = world()
    run = make_scenario(ScenarioConfig("caller_errors", failure_rate=0.2), w, 4)
    ce = run.schedule.caller_error
    assert ce is not None and set(np.unique(ce).tolist()) == {0.0, 0.3}
    assert set(run.schedule.kind.tolist()) == {KINDS.index(OutcomeKind.RATE_LIMITED)}
    assert run.schedule.hint.all() and run.schedule.start.min() >= 2000
    assert not set(np.flatnonzero(ce > 0).tolist()) & set(run.schedule.tool.tolist())


def test_outages_are_seeded_and_mix_kinds() -> None:
    w = world(n=300)
    cfg = ScenarioConfig("outages", failure_rate=0.3)
    a, b = make_scenario(cfg, w, 5), make_scenario(cfg, w, 5)
    assert np.array_equal(a.schedule.tool, b.schedule.tool) and np.array_equal(a.schedule.end, b.schedule.end)
    assert not np.array_equal(a.schedule.start, make_scenario(cfg, w, 6).schedule.start)
    assert len(set(a.schedule.kind.tolist())) == 4
    assert ((a.schedule.p_fail > 0) & (a.schedule.p_fail < 1)).any()  # some degraded episodes
    assert 0.1 < a.info["down_fraction_relevant"] < 0.6


def _broken_prior(link: bool) -> float:
    priors = []
    for seed in range(20):
        w = world(seed, n=300)
        s = make_scenario(ScenarioConfig("outages", failure_rate=0.3, metadata_link=link), w, seed).schedule
        auth_from_start = (s.start == 0) & (s.kind == KINDS.index(OutcomeKind.AUTH_ERROR))
        priors.append(w.prior[s.tool[auth_from_start]].mean() - w.prior.mean())
    return float(np.mean(priors))


def test_metadata_link_switch() -> None:
    assert _broken_prior(True) < -0.05  # broken tools have worse metadata
    assert abs(_broken_prior(False)) < 0.03  # no link: as good as any tool


def test_kind_link_switch() -> None:
    def rate_limit_share_of_long(link: bool) -> float:
        w = world(0, n=600)
        s = make_scenario(ScenarioConfig("outages", failure_rate=0.3, kind_link=link), w, 0).schedule
        long = (s.end - s.start >= 300) & (s.p_fail == 1.0) & (s.start > 0)
        return float(np.mean(s.kind[long] == KINDS.index(OutcomeKind.RATE_LIMITED)))

    assert rate_limit_share_of_long(True) == 0.0  # rate limits are short when the kind says so
    assert rate_limit_share_of_long(False) > 0.1


def test_scaled_and_invalid_configs() -> None:
    s = ScenarioConfig("recovery").scaled(0.1)
    assert (s.steps, s.onset, s.recovery_at) == (500, 200, 350)
    with pytest.raises(ConfigError, match="onset"):
        ScenarioConfig("persistent", onset=6000)
    with pytest.raises(ConfigError, match="unknown scenario"):
        ScenarioConfig("meteor")


def test_partial_failures_hit_only_similar_queries() -> None:
    rng = np.random.default_rng(0)
    n_q = 50
    vecs = rng.normal(size=(n_q, 8))
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    relevant = [frozenset({q % N}) for q in range(n_q)]
    w = World(np.arange(N) // 3, rng.uniform(0.2, 0.9, N), np.ones(N), vecs, relevant)
    cfg = ScenarioConfig("outages", failure_rate=0.3, shares=(0, 0, 0, 0), partial_share=1.0)
    s = make_scenario(cfg, w, 0).schedule
    assert len(s) > 0 and (s.qset >= 0).all()
    e = 0
    tool, t = int(s.tool[e]), int(s.start[e])
    mask = s.query_masks[int(s.qset[e])]
    assert 0.2 < mask.mean() < 0.4
    hit, miss = int(np.flatnonzero(mask)[0]), int(np.flatnonzero(~mask)[0])
    assert s.call(tool, t, 0.0, 1.0, hit)[1] and not s.call(tool, t, 0.0, 1.0, miss)[1]
    assert not s.call(tool, t, 0.0, 1.0)[1]  # a probe (no query) passes
    fm = s.failing_mask(np.full((s.steps, 1), tool), np.full(s.steps, hit))
    assert fm[t, 0]
