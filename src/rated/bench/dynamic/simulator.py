"""The dynamic reliability simulator: a query stream, failing tools, and methods that learn from outcomes.

At each step the stream's query arrives; a method takes the top-K of its own retriever (precomputed in a
``CandidateTable``), ranks it with its policy, and calls the top tool (``retry`` methods go on to the
next after a tool-side failure, up to their ``attempts``). The scenario's ``Schedule`` decides the call's
outcome, which carries the error kind and any retry-after hint; the method learns from that outcome
only. Success: the called tool is relevant to the query and the call succeeded. Every method sees the same
stream, the same failures and the same random draws (common random numbers), so per-seed differences
between methods are paired. The oracle takes the retriever's own order with the failing tools removed.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from rated.bench.dynamic.candidates import CandidateTable
from rated.bench.dynamic.scenarios import ScenarioRun
from rated.errors import ConfigError
from rated.policy.base import BasePolicy, Candidates, Feedback

__all__ = [
    "MAX_ATTEMPTS",
    "STREAMS",
    "Draws",
    "Pool",
    "RunTrace",
    "Step",
    "build_steps",
    "make_stream",
    "oracle_trace",
    "repetition_rate",
    "run_policy",
]

MAX_ATTEMPTS = 3
STREAMS = ("iid", "norepeat")


def make_stream(n_queries: int, steps: int, kind: str, seed: int) -> np.ndarray:
    """Query indices for each step: ``iid`` draws with replacement; ``norepeat`` never repeats a query."""
    rng = np.random.default_rng([seed, 0x57EA])
    if kind == "iid":
        return rng.integers(0, n_queries, steps)
    if kind == "norepeat":
        if steps > n_queries:
            raise ConfigError(
                f"a norepeat stream of {steps} steps needs {steps} queries, the pool has {n_queries}"
            )
        return rng.permutation(n_queries)[:steps]
    raise ConfigError(f"unknown stream {kind!r}; expected one of: {', '.join(STREAMS)}")


def repetition_rate(stream: np.ndarray) -> float:
    """Share of steps whose query already appeared earlier in the stream."""
    return float(1.0 - len(np.unique(stream)) / len(stream)) if len(stream) else 0.0


@dataclass(frozen=True)
class Draws:
    """Uniform draws shared by every method of one seed: call failures, caller errors, probes."""

    fail: np.ndarray  # (T, MAX_ATTEMPTS)
    caller: np.ndarray  # (T, MAX_ATTEMPTS)
    probe: np.ndarray  # (T, budget)

    @classmethod
    def make(cls, steps: int, seed: int, probe_budget: int) -> Draws:
        rng = np.random.default_rng([seed, 0xD4A5])
        return cls(
            rng.random((steps, MAX_ATTEMPTS)),
            rng.random((steps, MAX_ATTEMPTS)),
            rng.random((steps, max(1, probe_budget))),
        )


@dataclass
class Pool:
    """The tool pool as the simulator needs it (ids, providers, prior) and the queries' relevance."""

    tool_ids: list[str]
    providers: list[str]
    prior: np.ndarray  # (n,) float32
    relevant: list[frozenset[int]]  # per query: positions of its relevant tools

    def __post_init__(self) -> None:
        self.prior = np.asarray(self.prior, dtype=np.float32)
        if not (len(self.tool_ids) == len(self.providers) == len(self.prior)):
            raise ConfigError("tool_ids, providers and prior must have one entry per tool")


@dataclass
class Step:
    """One query's candidates, validated once; ``at(now)`` stamps the time without re-validating."""

    positions: np.ndarray
    tool_ids: tuple[str, ...]
    semantic: np.ndarray
    prior: np.ndarray
    providers: tuple[str, ...]
    context: np.ndarray | None
    _fields: dict[str, object] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        checked = Candidates(self.tool_ids, self.semantic, self.prior, self.providers, self.context, 0.0)
        self._fields = dict(checked.__dict__)

    def at(self, now: float) -> Candidates:
        """The candidates at time ``now`` (a copy of the checked object: the hot loop skips validation)."""
        c = object.__new__(Candidates)
        c.__dict__.update(self._fields)
        c.__dict__["now"] = now
        return c


def build_steps(pool: Pool, table: CandidateTable, k: int, present: np.ndarray | None = None) -> list[Step]:
    """Per query, its first ``k`` candidates (only tools in ``present``, when given)."""
    steps = []
    for q in range(table.positions.shape[0]):
        pos, sem = table.positions[q], table.scores[q]
        if present is not None:
            keep = present[pos]
            pos, sem = pos[keep], sem[keep]
        pos, sem = pos[:k], np.ascontiguousarray(sem[:k], dtype=np.float32)
        if len(pos) == 0:
            raise ConfigError(f"query {q} has no candidate left in the pool")
        ctx = None if table.contexts is None else np.ascontiguousarray(table.contexts[q], dtype=np.float32)
        steps.append(
            Step(
                pos,
                tuple(pool.tool_ids[i] for i in pos),
                sem,
                pool.prior[pos],
                tuple(pool.providers[i] for i in pos),
                ctx,
            )
        )
    return steps


@dataclass
class RunTrace:
    """Per-step record of one method on one seed."""

    success: np.ndarray  # (T,) bool
    faults: np.ndarray  # (T,) int: calls that hit a failing tool (every attempt counts)
    top_failing: np.ndarray  # (T,) bool: the first-ranked tool was failing at that step
    probes: int = 0
    probe_faults: int = 0
    degraded_steps: int = 0  # rankings returned fail-open
    extra: dict[str, float] = field(default_factory=dict)


def _steps_at(t: int, before: list[Step], after: list[Step] | None, add_at: int | None) -> list[Step]:
    return after if (after is not None and add_at is not None and t >= add_at) else before


def run_policy(
    policy: BasePolicy,
    pool: Pool,
    stream: np.ndarray,
    scenario: ScenarioRun,
    draws: Draws,
    steps_before: list[Step],
    steps_after: list[Step] | None = None,
    *,
    probe_interval: int | None = None,
    probe_budget: int = 5,
    attempts: int | None = None,
) -> RunTrace:
    """Run one method through one seed's stream; the policy learns only from the outcomes of its calls.

    ``attempts`` (default: the policy's own) is how many ranked tools the agent may try in one step."""
    sched = scenario.schedule
    T = len(stream)
    success = np.zeros(T, dtype=bool)
    faults = np.zeros(T, dtype=np.int16)
    top_failing = np.zeros(T, dtype=bool)
    attempts = min(MAX_ATTEMPTS, int(attempts or policy.attempts))
    probing = probe_interval is not None and probe_interval > 0 and policy.uses_probes
    index = {tid: i for i, tid in enumerate(pool.tool_ids)}
    n_probes = probe_faults = degraded = 0
    for t in range(T):
        q = int(stream[t])
        st = _steps_at(t, steps_before, steps_after, scenario.add_at)[q]
        ranking = policy.rank(st.at(float(t)))
        degraded += ranking.degraded
        order = ranking.order
        relevant = pool.relevant[q]
        for a in range(min(attempts, len(order))):
            c = int(order[a])
            j = int(st.positions[c])
            outcome, fault = sched.call(j, t, draws.fail[t, a], draws.caller[t, a], q)
            if a == 0:
                top_failing[t] = sched.episode_at(j, t, q) >= 0
            policy.learn(Feedback(st.tool_ids[c], outcome, float(t), st.context, st.providers[c]))
            if fault:
                faults[t] += 1
                continue
            success[t] = outcome.is_success and j in relevant
            break
        if probing and t % probe_interval == 0:  # type: ignore[operator]
            for slot, tool_id in enumerate(policy.probe_targets(float(t), probe_budget)[:probe_budget]):
                j = index[tool_id]
                outcome, fault = sched.call(j, t, draws.probe[t, slot], 1.0)
                policy.learn(Feedback(tool_id, outcome, float(t), None, pool.providers[j], probe=True))
                n_probes += 1
                probe_faults += fault
    return RunTrace(success, faults, top_failing, n_probes, probe_faults, degraded)


def oracle_trace(
    pool: Pool,
    stream: np.ndarray,
    scenario: ScenarioRun,
    draws: Draws,
    steps_before: list[Step],
    steps_after: list[Step] | None = None,
) -> RunTrace:
    """The ceiling: the retriever's own order with the tools failing at that step removed.

    It knows the failing set and nothing else (not relevance, not the coin flips of degraded tools, which
    it avoids altogether). When every candidate is failing it calls the first one and fails.
    """
    sched = scenario.schedule
    T = len(stream)
    k = max(len(s.positions) for s in steps_before)
    positions = np.full((T, k), -1, dtype=np.int64)
    for t in range(T):
        p = _steps_at(t, steps_before, steps_after, scenario.add_at)[int(stream[t])].positions
        positions[t, : len(p)] = p
    failing = sched.failing_mask(positions, stream) | (positions < 0)
    first = np.argmax(~failing, axis=1)
    # numpy's stubs type all(axis=...) as a scalar or an array whatever the array's rank: here it is (T,)
    all_failing: np.ndarray = failing.all(axis=1)  # type: ignore[assignment]
    chosen = positions[np.arange(T), first]
    success = np.zeros(T, dtype=bool)
    caller = sched.caller_error
    for t in range(T):
        if all_failing[t]:
            continue
        j = int(chosen[t])
        ok = caller is None or draws.caller[t, 0] >= caller[j]
        success[t] = ok and j in pool.relevant[int(stream[t])]
    return RunTrace(success, all_failing.astype(np.int16), all_failing, 0, 0, int(all_failing.sum()))
