"""Run methods over seeds of a scenario and collect per-seed metrics, paired differences and curves.

``Env`` holds what does not change between runs (the pool, the queries, the prior, each retriever's
top-K per query, computed once). ``run_benchmark`` draws, for each seed, one stream, one scenario and
one set of random draws, and runs every method on exactly those (paired comparisons).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from rated.bench.dataset import Dataset
from rated.bench.dynamic.candidates import RETRIEVERS, CandidateTable, build_table
from rated.bench.dynamic.metrics import adaptation_steps, aggregate, summarise_run, trailing
from rated.bench.dynamic.scenarios import ScenarioConfig, ScenarioRun, World, make_scenario
from rated.bench.dynamic.simulator import (
    Draws,
    Pool,
    RunTrace,
    Step,
    build_steps,
    make_stream,
    oracle_trace,
    repetition_rate,
    run_policy,
)
from rated.encode.base import Encoder
from rated.errors import ConfigError, DataError
from rated.policy.registry import POLICIES, make_policy

__all__ = [
    "VALIDATION_SEED_OFFSET",
    "BenchConfig",
    "BenchResult",
    "Env",
    "MethodSpec",
    "Prepared",
    "SeedRun",
    "method_rows",
    "prepare",
    "run_benchmark",
    "run_method",
    "seeds_for",
]

VALIDATION_SEED_OFFSET = 1000  # validation seeds are 1000, 1001, ...; test seeds 0, 1, ...
COLDSTART_DEPTH = 50  # candidates kept per query so that a smaller pool still has K of them


def seeds_for(n: int, validation: bool = False) -> tuple[int, ...]:
    """Test seeds ``0..n-1`` or validation seeds ``1000..1000+n-1`` (never the same streams)."""
    if int(n) < 1:
        raise ConfigError(f"the number of seeds must be >= 1, got {n}")
    base = VALIDATION_SEED_OFFSET if validation else 0
    return tuple(range(base, base + int(n)))


@dataclass(frozen=True)
class MethodSpec:
    """A method of the benchmark: a registry policy with parameters, on one retriever's candidates."""

    label: str
    policy: str
    retriever: str
    params: Mapping[str, Any] = field(default_factory=dict)
    attempts: int | None = None  # tools the agent may try per step; None: the policy's own

    @classmethod
    def parse(cls, text: str, default_retriever: str, params: Mapping[str, Any] | None = None) -> MethodSpec:
        """``[label=]name[+retryN][@retriever]``: ``static@bm25``; ``rated_fixed=rated`` (a second,
        differently configured copy of a method under its own label); ``rated+retry3`` (the agent tries
        up to 3 tools of RATED's order per step)."""
        label, eq, rest = text.partition("=")
        if not eq:
            label, rest = text, text
        name, _, retriever = rest.partition("@")
        attempts = None
        name, plus, retry = name.partition("+retry")
        if plus:
            if not retry.isdigit() or not 1 <= int(retry) <= 3:
                raise ConfigError(f"'+retryN' needs N in 1..3, got {text!r}")
            attempts = int(retry)
        retriever = retriever or default_retriever
        if name not in POLICIES:
            raise ConfigError(f"unknown method {name!r}; expected one of: {', '.join(POLICIES)}, oracle")
        if retriever not in RETRIEVERS:
            raise ConfigError(
                f"unknown retriever {retriever!r} in {text!r}; expected one of {', '.join(RETRIEVERS)}"
            )
        if not label.strip():
            raise ConfigError(f"empty label in method {text!r}")
        return cls(label.strip(), name, retriever, dict(params or {}), attempts)


@dataclass(frozen=True)
class BenchConfig:
    scenario: ScenarioConfig
    seeds: tuple[int, ...] = (0, 1, 2, 3, 4)
    stream: str = "iid"
    k: int = 10
    probe_interval: int | None = None
    probe_budget: int = 5
    window: int = 200
    curve_stride: int = 25

    def __post_init__(self) -> None:
        if not self.seeds:
            raise ConfigError("need at least one seed")
        if self.probe_interval is not None and self.probe_interval < 1:
            raise ConfigError(f"the probe interval must be >= 1 step, got {self.probe_interval}")
        if self.probe_budget < 1:
            raise ConfigError(f"the probe budget must be >= 1 tool per interval, got {self.probe_budget}")


@dataclass
class Env:
    """The fixed part of a benchmark: pool, queries, prior, and every retriever's top-K (cached)."""

    name: str
    pool: Pool
    tools: list[Any]
    queries: list[str]
    provider_codes: np.ndarray
    encoder: Encoder | None = None
    context_encoder: Encoder | None = None
    _tables: dict[tuple[str, int], CandidateTable] = field(default_factory=dict)

    @classmethod
    def from_dataset(
        cls,
        dataset: Dataset,
        split: str = "test",
        *,
        encoder: Encoder | None = None,
        prior: np.ndarray | None = None,
        prior_encoder: Encoder | None = None,
    ) -> Env:
        """Queries of ``split`` (``all``: every query); r_static from ``rated.catalog.prior`` unless given."""
        queries = dataset.queries if split == "all" else dataset.split(split)
        if not queries:
            raise DataError(f"dataset {dataset.name!r} has no {split!r} queries")
        tools = list(dataset.tools)
        pos = {t.id: i for i, t in enumerate(tools)}
        if prior is None:
            from rated.catalog.prior import compute_prior

            enc = prior_encoder or encoder
            if enc is None:
                from rated.encode.testing import HashEncoder

                enc = HashEncoder(dim=256)
            prior = compute_prior(tools, enc).r_static
        providers = [t.provider_key for t in tools]
        codes = {p: i for i, p in enumerate(dict.fromkeys(providers))}
        pool = Pool(
            tool_ids=[t.id for t in tools],
            providers=providers,
            prior=np.asarray(prior, dtype=np.float32),
            relevant=[frozenset(pos[r] for r in q.relevant) for q in queries],
        )
        return cls(
            name=dataset.name,
            pool=pool,
            tools=tools,
            queries=[q.text for q in queries],
            provider_codes=np.array([codes[p] for p in providers], dtype=np.int64),
            encoder=encoder,
        )

    def table(self, retriever: str, depth: int) -> CandidateTable:
        key = (retriever, depth)
        if key not in self._tables:
            self._tables[key] = build_table(
                retriever,
                self.tools,
                self.queries,
                depth,
                encoder=self.encoder,
                context_encoder=self.context_encoder,
            )
        return self._tables[key]


@dataclass
class BenchResult:
    """Everything a report needs: config, per-seed metrics per method, curves, scenario facts."""

    dataset: str
    config: BenchConfig
    methods: dict[str, MethodSpec]
    per_seed: dict[str, list[dict[str, Any]]]
    curves: dict[str, np.ndarray]  # label -> (n_points,) mean trailing SR over seeds
    curve_steps: np.ndarray
    repetition: list[float]
    scenario_info: list[dict[str, Any]]
    seconds: dict[str, float]
    notes: list[str] = field(default_factory=list)

    def summary(self) -> dict[str, dict[str, Any]]:
        return {label: aggregate(rows) for label, rows in self.per_seed.items()}


def _effective_scenario(cfg: BenchConfig, n_queries: int, notes: list[str]) -> ScenarioConfig:
    sc = cfg.scenario
    if cfg.stream == "norepeat" and sc.steps > n_queries:
        factor = n_queries / sc.steps
        notes.append(
            f"norepeat: the pool has {n_queries} queries, so the stream has {n_queries} steps and every time "
            f"parameter of the scenario is scaled by {factor:.3f} (onset {max(1, round(sc.onset * factor))})"
        )
        return sc.scaled(factor)
    return sc


@dataclass
class SeedRun:
    """Everything one seed fixes for every method: stream, scenario, draws, candidates, oracles."""

    seed: int
    stream: np.ndarray
    scenario: ScenarioRun
    draws: Draws
    steps: dict[str, tuple[list[Step], list[Step] | None]]  # retriever -> (before, after the pool change)
    oracles: dict[str, RunTrace]


@dataclass
class Prepared:
    """A benchmark configuration made concrete: the effective scenario and every seed's fixed part."""

    env: Env
    cfg: BenchConfig
    scenario: ScenarioConfig
    runs: list[SeedRun]
    notes: list[str]
    window: int  # trailing window of the adaptation metrics and curves (scaled with a scaled stream)


def prepare(env: Env, cfg: BenchConfig, retrievers: Sequence[str]) -> Prepared:
    """Draw each seed's stream, scenario and random draws, and compute the oracle of each retriever."""
    notes: list[str] = []
    scen_cfg = _effective_scenario(cfg, len(env.queries), notes)
    T = scen_cfg.steps
    coldstart = scen_cfg.name == "coldstart"
    tables = {r: env.table(r, COLDSTART_DEPTH if coldstart else cfg.k) for r in retrievers}
    fixed = {} if coldstart else {r: build_steps(env.pool, tables[r], cfg.k) for r in retrievers}
    runs = []
    for seed in cfg.seeds:
        stream = make_stream(len(env.queries), T, cfg.stream, seed)
        gt_counts = np.zeros(len(env.pool.tool_ids))
        for q in stream:
            for j in env.pool.relevant[int(q)]:
                gt_counts[j] += 1
        world = World(
            env.provider_codes, env.pool.prior, gt_counts, tables[retrievers[0]].contexts, env.pool.relevant
        )
        scenario = make_scenario(scen_cfg, world, seed)
        draws = Draws.make(T, seed, cfg.probe_budget)
        steps: dict[str, tuple[list[Step], list[Step] | None]] = {}
        for r in retrievers:
            if r in fixed:
                steps[r] = (fixed[r], None)
            else:
                before = build_steps(env.pool, tables[r], cfg.k, present=scenario.pool_before)
                steps[r] = (before, build_steps(env.pool, tables[r], cfg.k))
        oracles = {r: oracle_trace(env.pool, stream, scenario, draws, *steps[r]) for r in retrievers}
        runs.append(SeedRun(seed, stream, scenario, draws, steps, oracles))
    window = max(2, min(cfg.window, round(cfg.window * scen_cfg.steps / cfg.scenario.steps)))
    return Prepared(env, cfg, scen_cfg, runs, notes, window)


def run_method(prep: Prepared, spec: MethodSpec, run: SeedRun) -> RunTrace:
    """One method on one prepared seed."""
    policy = make_policy(spec.policy, **dict(spec.params))
    return run_policy(
        policy,
        prep.env.pool,
        run.stream,
        run.scenario,
        run.draws,
        *run.steps[spec.retriever],
        probe_interval=prep.cfg.probe_interval,
        probe_budget=prep.cfg.probe_budget,
        attempts=spec.attempts,
    )


def method_rows(prep: Prepared, spec: MethodSpec) -> list[dict[str, Any]]:
    """Per-seed metrics of one method over every prepared seed (what tuning compares)."""
    rows = []
    for run in prep.runs:
        trace = run_method(prep, spec, run)
        rows.append(_row(trace, run.oracles[spec.retriever], prep))
    return rows


def run_benchmark(
    env: Env,
    cfg: BenchConfig,
    methods: Sequence[MethodSpec],
    *,
    on_progress: Callable[[str], None] | None = None,
) -> BenchResult:
    """Run every method on every seed of ``cfg``; the oracle (``oracle``, and ``oracle@R`` for other
    retrievers R in use) is added automatically."""
    retrievers = list(dict.fromkeys(m.retriever for m in methods))
    prep = prepare(env, cfg, retrievers)
    oracle_labels = {r: "oracle" if i == 0 else f"oracle@{r}" for i, r in enumerate(retrievers)}
    per_seed: dict[str, list[dict[str, Any]]] = {m.label: [] for m in methods}
    per_seed.update({lab: [] for lab in oracle_labels.values()})
    curve_acc: dict[str, list[np.ndarray]] = {k: [] for k in per_seed}
    seconds: dict[str, float] = dict.fromkeys(per_seed, 0.0)
    for run in prep.runs:
        for r, lab in oracle_labels.items():
            _collect(per_seed, curve_acc, lab, run.oracles[r], run.oracles[r], prep)
        for m in methods:
            if on_progress is not None:
                on_progress(f"seed {run.seed}: {m.label}")
            t0 = time.perf_counter()
            trace = run_method(prep, m, run)
            seconds[m.label] += time.perf_counter() - t0
            _collect(per_seed, curve_acc, m.label, trace, run.oracles[m.retriever], prep)
    all_methods = {m.label: m for m in methods}
    for r, lab in oracle_labels.items():
        all_methods[lab] = MethodSpec(lab, "oracle", r, {})
    return BenchResult(
        dataset=env.name,
        config=replace(cfg, scenario=prep.scenario, window=prep.window),
        methods=all_methods,
        per_seed=per_seed,
        curves={k: np.mean(v, axis=0) for k, v in curve_acc.items()},
        curve_steps=np.arange(prep.window - 1, prep.scenario.steps, _stride(prep)),
        repetition=[repetition_rate(r.stream) for r in prep.runs],
        scenario_info=[r.scenario.info for r in prep.runs],
        seconds=seconds,
        notes=prep.notes,
    )


def _row(trace: RunTrace, oracle: RunTrace, prep: Prepared) -> dict[str, Any]:
    onset = prep.scenario.onset
    row: dict[str, Any] = dict(
        summarise_run(
            trace.success, trace.faults, oracle.success, onset, prep.scenario.failure_rate, prep.window
        )
    )
    sc = prep.scenario
    if sc.name == "recovery" and sc.recovery_at + prep.window <= sc.steps:
        # steps after the tools come back until the trailing SR is within 5% of the oracle's again
        target = np.full(len(trace.success), np.inf)
        target[sc.recovery_at + prep.window - 1 :] = 0.95 * trailing(
            oracle.success[sc.recovery_at :], prep.window
        )
        row["recovery_steps_oracle"] = adaptation_steps(trace.success, sc.recovery_at, target, prep.window)
    row["top_failing_rate"] = float(np.mean(trace.top_failing[onset:]))
    row["probes"] = trace.probes
    row["probe_faults"] = trace.probe_faults
    row["fail_open_steps"] = trace.degraded_steps
    return row


def _collect(
    per_seed: dict[str, list[dict[str, Any]]],
    curves: dict[str, list[np.ndarray]],
    label: str,
    trace: RunTrace,
    oracle: RunTrace,
    prep: Prepared,
) -> None:
    per_seed[label].append(_row(trace, oracle, prep))
    w = prep.window
    tr = trailing(trace.success, w) if len(trace.success) >= w else np.zeros(0)
    curves[label].append(tr[:: _stride(prep)])


def _stride(prep: Prepared) -> int:
    return max(1, min(prep.cfg.curve_stride, prep.scenario.steps // 100))
