"""The simulator on tiny hand-checked streams: outcomes, faults, the oracle, retries, probes, pool changes."""

from __future__ import annotations

import numpy as np
import pytest

from rated.bench.dynamic.candidates import CandidateTable
from rated.bench.dynamic.scenarios import ScenarioRun
from rated.bench.dynamic.schedule import KINDS, Schedule
from rated.bench.dynamic.simulator import (
    Draws,
    Pool,
    build_steps,
    make_stream,
    oracle_trace,
    repetition_rate,
    run_policy,
)
from rated.errors import ConfigError
from rated.outcome import OutcomeKind
from rated.policy import make_policy

TOOL_ERROR = KINDS.index(OutcomeKind.TOOL_ERROR)
RATE = KINDS.index(OutcomeKind.RATE_LIMITED)

# two queries, three tools: q0 ranks t0 > t1 > t2 (t0, t1 relevant); q1 ranks t2 > t0 > t1 (t2 relevant)
POOL = Pool(["t0", "t1", "t2"], ["p0", "p1", "p2"], np.full(3, 0.7), [frozenset({0, 1}), frozenset({2})])
TABLE = CandidateTable(
    "hand",
    np.array([[0, 1, 2], [2, 0, 1]]),
    np.array([[0.9, 0.8, 0.1], [0.9, 0.5, 0.4]], dtype=np.float32),
    None,
)
STEPS = build_steps(POOL, TABLE, 3)
STREAM = np.array([0, 0, 1, 0, 1, 0])


def episodes(*rows: tuple[int, int, int, float, int, bool], n: int = 3, steps: int = 6) -> Schedule:
    tool, start, end, p, kind, hint = (np.array(c) for c in zip(*rows, strict=True))
    return Schedule(n, steps, tool, start, end, p.astype(float), kind.astype(np.int8), hint.astype(bool))


T0_DOWN = ScenarioRun(episodes((0, 2, 6, 1.0, TOOL_ERROR, False)))
DRAWS = Draws.make(6, seed=0, probe_budget=2)


def run(name: str, scenario: ScenarioRun = T0_DOWN, **kw):
    return run_policy(make_policy(name), POOL, STREAM, scenario, DRAWS, STEPS, **kw)


def test_static_keeps_calling_the_failing_tool() -> None:
    tr = run("static")
    assert tr.success.tolist() == [True, True, True, False, True, False]
    assert tr.faults.tolist() == [0, 0, 0, 1, 0, 1]
    assert tr.top_failing.tolist() == [False, False, False, True, False, True]


def test_blacklist_pays_one_failure() -> None:
    tr = run("blacklist")
    assert tr.success.tolist() == [True, True, True, False, True, True]
    assert tr.faults.sum() == 1


def test_retry_counts_every_attempt_on_a_failing_tool() -> None:
    tr = run("retry3")
    assert tr.success.tolist() == [True] * 6
    assert tr.faults.tolist() == [0, 0, 0, 1, 0, 1]


def test_oracle_removes_failing_tools_only() -> None:
    tr = oracle_trace(POOL, STREAM, T0_DOWN, DRAWS, STEPS)
    assert tr.success.tolist() == [True] * 6 and tr.faults.sum() == 0
    # when every candidate fails, the oracle fails too (it does not know relevance either)
    all_down = ScenarioRun(episodes(*[(j, 0, 6, 1.0, TOOL_ERROR, False) for j in range(3)]))
    assert not oracle_trace(POOL, STREAM, all_down, DRAWS, STEPS).success.any()


def test_rated_demotes_after_the_first_failure() -> None:
    tr = run("rated")
    assert tr.success.tolist() == [True, True, True, False, True, True]


def test_rate_limit_outcome_carries_retry_after() -> None:
    sched = episodes((1, 2, 10, 1.0, RATE, True), (2, 0, 10, 1.0, RATE, False), steps=12)
    out, fault = sched.call(1, 4, 0.0, 1.0)
    assert fault and out.kind is OutcomeKind.RATE_LIMITED and out.retry_after == 6.0
    out, _ = sched.call(2, 4, 0.0, 1.0)
    assert out.retry_after is None
    assert sched.call(1, 10, 0.0, 1.0)[0].is_success  # the episode is over


def test_degraded_tool_fails_with_its_probability_and_caller_errors_are_not_faults() -> None:
    sched = episodes((0, 0, 6, 0.5, TOOL_ERROR, False))
    assert sched.call(0, 1, 0.49, 1.0)[1] and not sched.call(0, 1, 0.51, 1.0)[1]
    sched.caller_error = np.array([0.0, 0.3, 0.0])
    out, fault = sched.call(1, 1, 0.0, 0.2)
    assert out.kind is OutcomeKind.CALLER_ERROR and not fault
    assert sched.call(1, 1, 0.0, 0.4)[0].is_success


def test_overlapping_episodes_take_the_worst() -> None:
    sched = episodes((0, 0, 10, 0.3, TOOL_ERROR, False), (0, 5, 8, 1.0, TOOL_ERROR, False), steps=10)
    assert sched.p_fail[sched.episode_at(0, 6)] == 1.0
    assert sched.p_fail[sched.episode_at(0, 2)] == 0.3
    assert sched.episode_at(1, 2) == -1
    mask = sched.failing_mask(np.array([[0, 1]] * 10))
    assert mask[:, 0].all() and not mask[:, 1].any()


def test_probes_are_counted_and_restore_a_recovered_tool() -> None:
    recovered = ScenarioRun(episodes((0, 2, 4, 1.0, TOOL_ERROR, False)))
    with_probes = run("rated", recovered, probe_interval=1, probe_budget=2)
    without = run("rated", recovered)
    assert with_probes.probes > 0 and without.probes == 0
    assert with_probes.probe_faults >= 1  # it probed t0 while still down
    assert with_probes.success[5]  # back on t0 after a passing probe


def test_pool_change_adds_tools_at_the_given_step() -> None:
    present = np.array([False, True, True])  # t0 joins at step 3
    before = build_steps(POOL, TABLE, 2, present=present)
    after = build_steps(POOL, TABLE, 2)
    assert before[0].tool_ids == ("t1", "t2") and after[0].tool_ids == ("t0", "t1")
    scen = ScenarioRun(Schedule.empty(3, 6), add_at=3, pool_before=present)
    tr = run_policy(make_policy("static"), POOL, STREAM, scen, DRAWS, before, after)
    assert tr.success.all()


def test_streams() -> None:
    iid = make_stream(5, 100, "iid", 3)
    assert np.array_equal(iid, make_stream(5, 100, "iid", 3)) and repetition_rate(iid) == pytest.approx(0.95)
    nr = make_stream(50, 40, "norepeat", 1)
    assert len(set(nr.tolist())) == 40 and repetition_rate(nr) == 0.0
    with pytest.raises(ConfigError, match="norepeat"):
        make_stream(5, 6, "norepeat", 0)
    with pytest.raises(ConfigError, match="unknown stream"):
        make_stream(5, 6, "bursty", 0)


def test_any_method_can_retry() -> None:
    from rated.bench.dynamic.runner import MethodSpec

    spec = MethodSpec.parse("rated+retry3", "tfidf")
    assert (spec.label, spec.policy, spec.attempts) == ("rated+retry3", "rated", 3)
    assert MethodSpec.parse("x=static+retry2@bm25", "tfidf").attempts == 2
    with pytest.raises(ConfigError, match="retryN"):
        MethodSpec.parse("rated+retry9", "tfidf")
    tr = run_policy(make_policy("static"), POOL, STREAM, T0_DOWN, DRAWS, STEPS, attempts=3)
    assert tr.success.all() and tr.faults.sum() == 2  # same as retry3
