"""RATED's scores against a NumPy transcription of the module docstring's formula, on random learned states.

``RatedPolicy._score`` computes in plain Python floats, candidate by candidate, for speed; this reference
computes every candidate at once from the persisted state (``get_state``) and must agree to 1e-12 with
the same order, over histories with providers (shared, absent, and named like a tool), every error kind,
rate limits with a retry-after (blocked at ranking time), and settings that take each branch.
"""

from __future__ import annotations

import numpy as np
import pytest

from rated.outcome import Outcome
from rated.policy import Candidates, Feedback, RatedPolicy
from rated.policy.base import Ranking
from rated.policy.rated import FIELDS, PROVIDER_PREFIX

DIM = 12
F = {name: i for i, name in enumerate(FIELDS)}
TOOLS = [f"t{i}" for i in range(14)]
#: t0-t5 share providers, t6-t9 have none (their own id), t10's provider is named like the tool t6
PROVIDERS = {**{f"t{i}": f"P{i % 2}" for i in range(6)}, **{f"t{i}": f"t{i}" for i in range(6, 10)}}
PROVIDERS |= {"t10": "t6", "t11": "P0", "t12": "P2", "t13": "t13"}


def unit(rng: np.random.Generator) -> np.ndarray:
    v = rng.normal(size=DIM).astype(np.float32)
    return v / np.linalg.norm(v)


def ranked_as_reference(p: RatedPolicy, c: Candidates) -> tuple[Ranking, dict[str, np.ndarray]]:
    """``p.rank(c)`` and the reference's figures, after checking that its components, scores and health
    flags are the reference's."""
    ranking, want = p.rank(c), reference(p, c)
    for name in ("bandit", "reliability", "availability"):
        np.testing.assert_allclose(ranking.components[name], want[name], rtol=1e-12, atol=0, err_msg=name)
    np.testing.assert_allclose(ranking.scores, want["scores"], rtol=1e-12, atol=0)
    assert ranking.healthy.tolist() == (want["availability"] >= p.gate).tolist()
    return ranking, want


def learned(params: dict, seed: int) -> tuple[RatedPolicy, float]:
    """A policy after a random history; returns it and the time of its last outcome."""
    rng = np.random.default_rng(seed)
    p = RatedPolicy(**params)
    kinds = ["success", "success", "tool_error", "timeout", "auth_error", "caller_error"]
    t = 0.0
    for _ in range(60):
        t += float(rng.integers(1, 40))
        tool = TOOLS[int(rng.integers(len(TOOLS) - 2))]  # t12, t13 never get feedback
        outcome = (
            Outcome.of("rate_limited", retry_after=float(rng.integers(10, 200)))
            if rng.random() < 0.1
            else Outcome.of(kinds[int(rng.integers(len(kinds)))])
        )
        ctx = unit(rng) if rng.random() < 0.8 else None
        p.learn(Feedback(tool, outcome, t, ctx, PROVIDERS[tool]))
    return p, t


def reference(p: RatedPolicy, c: Candidates) -> dict[str, np.ndarray]:
    """Scores, components and health of ``c`` from the formula, all candidates at once."""
    k, now = len(c), c.now
    n0, up0, pw = p.prior_strength, 1.0 - p.down_prior, p.provider_weight
    inv_hl = 1.0 / (p.half_life * p.time_scale)
    m0 = (1.0 - p.prior_weight * (1.0 - c.prior)).astype(np.float64)  # float32, as the policy's
    pristine = np.array([0, 0, 0, 0, 0, 0, 0, -np.inf, -np.inf, 0, -1], dtype=np.float64)
    states = [p.get_state(t) for t in c.tool_ids]
    pstates = [
        p.get_state(PROVIDER_PREFIX + pr) if pr != t else None
        for t, pr in zip(c.tool_ids, c.providers, strict=True)
    ]
    known = np.array([s is not None or ps is not None for s, ps in zip(states, pstates, strict=True)])
    sc = np.stack([pristine if s is None else s["scalars"] for s in states])
    psc = np.stack([pristine if s is None else s["scalars"] for s in pstates])
    has_p = np.array([s is not None for s in pstates])

    def decay(t_col: np.ndarray, rate: np.ndarray | float) -> np.ndarray:
        return np.exp2(np.minimum(t_col - now, 0.0) * rate)

    fade = decay(sc[:, F["t_fade"]], inv_hl)
    up = up0 - sc[:, F["beta"]] * decay(sc[:, F["t_obs"]], sc[:, F["rate"]])
    pfade = decay(psc[:, F["t_fade"]], inv_hl)
    s = sc[:, F["s"]] * fade + np.where(has_p, pw * psc[:, F["s"]] * pfade, 0.0)
    f = sc[:, F["f"]] * fade + np.where(has_p, pw * psc[:, F["f"]] * pfade, 0.0)
    p_up = np.where(has_p, up0 - psc[:, F["beta"]] * decay(psc[:, F["t_obs"]], psc[:, F["rate"]]), up0)
    avail = np.where(sc[:, F["blocked_until"]] > now, 0.0, up * p_up)
    rel = (s + n0 * m0) / (s + f + n0)
    x = c.context
    if p.contextual and x is not None and p._dim == x.shape[0]:
        fresh = float(x.dot(x)) / p.ridge
        live = [i for i, st in enumerate(states) if st is not None]
        corr, quad = np.zeros(k), np.full(k, fresh)
        if live:  # float32 products of the stored vectors, as the policy makes them
            theta = np.stack([states[i]["theta"] for i in live])
            inv_a = np.stack([states[i]["inv_a"] for i in live])
            corr[live], quad[live] = theta @ x, inv_a @ (x * x)
        rel = np.clip(rel + corr * fade, 0.0, 1.0)
        bonus = p.alpha * np.sqrt(np.maximum((quad - fresh) * fade + fresh, 0.0))
        fresh_bonus = p.alpha * np.sqrt(fresh)
    else:
        bonus = p.alpha / np.sqrt(n0 + s + f)
        fresh_bonus = p.alpha / np.sqrt(n0)
    bandit = np.minimum(rel * avail / up0**2 + bonus, 1.0)
    # a candidate without tool nor provider state keeps the fresh estimate
    rel, avail = np.where(known, rel, m0), np.where(known, avail, up0 * up0)
    bandit = np.where(known, bandit, np.minimum(m0 + fresh_bonus, 1.0))
    sem_part, prior_part = (p.w1 * c.semantic).astype(np.float64), (p.w3 * c.prior).astype(np.float64)
    if p.utility:
        base = (p.w1 * c.semantic + p.w3 * c.prior).astype(np.float64)
        scores = base + p.utility * np.log(np.maximum(bandit, 1e-4))
    else:
        scores = sem_part + p.w2 * bandit + prior_part
    return {"scores": scores, "bandit": bandit, "reliability": rel, "availability": avail}


PARAMS = [
    {},
    {"utility": 0.1, "half_life": 500.0},
    {"prior_weight": 0.6, "prior_strength": 3.0},
    {"contextual": False, "utility": 0.05, "prior_weight": 0.3},
    {"gate": 0.9, "provider_weight": 1.5, "backoff": 1.0, "time_scale": 0.5},
]


@pytest.mark.parametrize("params", PARAMS, ids=[str(p) or "default" for p in PARAMS])
@pytest.mark.parametrize("seed", range(4))
def test_scores_follow_the_documented_formula(params: dict, seed: int) -> None:
    p, last = learned(params, seed)
    rng = np.random.default_rng(100 + seed)
    checked = 0
    for trial in range(25):
        sel = rng.choice(len(TOOLS), int(rng.integers(1, 11)), replace=False)
        ids = tuple(TOOLS[j] for j in sel)
        now = last + float(rng.choice([-300.0, 0.0, 5.0, 60.0, 3000.0]))  # before the last outcome too
        ctx = None if trial % 5 == 0 else unit(rng)
        c = Candidates(
            ids,
            rng.random(len(ids)).astype(np.float32),
            rng.random(len(ids)).astype(np.float32),
            tuple(PROVIDERS[t] for t in ids),
            ctx,
            now,
        )
        ranking, want = ranked_as_reference(p, c)
        if len(set(ranking.scores.tolist())) == len(ids):  # ties are left to the other tests
            healthy_first = np.lexsort((-want["scores"], ~ranking.healthy)) if p.health_orders else None
            expected = healthy_first if healthy_first is not None else np.argsort(-want["scores"])
            assert ranking.order.tolist() == expected.tolist()
            checked += 1
    assert checked > 10


def test_every_branch_is_reached_by_the_histories() -> None:
    """The reference test is only as good as its states: providers shared and absent, a provider named
    like a tool, rate limits still blocking, contextual state."""
    p, last = learned({}, 0)
    keys = set(p.all_state_keys())
    assert {PROVIDER_PREFIX + "P0", PROVIDER_PREFIX + "P1", PROVIDER_PREFIX + "t6"} <= keys
    assert not any(k == PROVIDER_PREFIX + "t7" for k in keys)  # t7 is its own provider: no shared row
    blocked = [
        t
        for t in TOOLS
        if (s := p.get_state(t)) is not None and s["scalars"][F["blocked_until"]] > last - 300
    ]
    assert blocked
    assert any("theta" in s and np.any(s["theta"]) for t in TOOLS if (s := p.get_state(t)) is not None)


@pytest.mark.parametrize("params", PARAMS, ids=[str(p) or "default" for p in PARAMS])
def test_tools_with_provider_state_only_follow_the_formula(params: dict) -> None:
    """A tool that never had feedback but whose provider did reads the pristine row as its own (worked out
    once per ranking): mixed with tools that have state, before and after their outcomes, with and without
    a context."""
    p, last = learned(params, 7)
    unseen = {"u0": "P0", "u1": "P1", "u2": "P0", "u3": "t6"}  # t6: a provider named like a tool
    providers = {**PROVIDERS, **unseen}
    assert all(p.get_state(t) is None for t in unseen)
    assert all(p.get_state(PROVIDER_PREFIX + pr) is not None for pr in unseen.values())
    rng = np.random.default_rng(7)
    for trial in range(30):
        ids = tuple(rng.permutation([*unseen, *rng.choice(TOOLS, 4, replace=False)]).tolist())
        now = last + float(rng.choice([-300.0, 0.0, 5.0, 60.0, 3000.0]))
        c = Candidates(
            ids,
            rng.random(len(ids)).astype(np.float32),
            rng.random(len(ids)).astype(np.float32),
            tuple(providers[t] for t in ids),
            None if trial % 3 == 0 else unit(rng),
            now,
        )
        ranking, want = ranked_as_reference(p, c)
