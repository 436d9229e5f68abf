"""Failure scenarios: which tools fail, when, how, and for how long. Every parameter is explicit and seeded.

The paper's protocol (paper-notes section 3) and what real outages add to it:

- ``persistent``: the failing set goes down at ``onset`` and stays down. Failing set as in the paper:
  rank the N distinct ground-truth tools of the stream by frequency (ties at random), skip the top
  ``skip_top`` (10%), take the next ``failure_rate * N``.
- ``recovery``: the same, back up at ``recovery_at``.
- ``degraded``: the same tools fail each call with probability ``degraded_p`` from the onset.
- ``provider``: whole providers go down together at the onset: providers ranked by how often their
  tools are relevant in the stream, skip the top ``skip_top``, take the next ``failure_rate`` share.
- ``coldstart``: a random ``new_fraction`` of the pool joins at the onset; each new tool is broken from
  its arrival (authentication error) with probability ``failure_rate`` on average, more likely when its
  metadata is poor if ``metadata_link``.
- ``caller_errors``: from the onset, a paper-style failing set gets caller errors (bad arguments, the
  agent's fault: the tool is up) with probability ``caller_error_p``, and another ``rate_limit_share``
  as many tools are rate-limited in bursts (``burst_len`` steps every ``burst_gap`` steps) with a
  retry-after hint.
- ``outages`` (the main one): failures through the whole run. ``failure_rate`` is the expected share of
  tool-time spent failing, split by ``shares`` into (1) tools broken from the start (authentication
  error; fixed at a random time with probability ``1 - never_fixed``), more likely the worse their
  metadata when ``metadata_link``; (2) tool outages, a Poisson process per tool whose kind follows
  ``kind_mix`` and whose duration is log-uniform in ``durations[kind]`` (rate limits short and usually
  announced, timeouts short, server errors from tens to thousands of steps, authentication failures
  long); with ``kind_link`` off the kind is drawn independently of the duration, so the error kind says
  nothing; (3) provider outages (every tool of a provider at once, server errors or timeouts, duration
  log-uniform in ``provider_durations``); (4) degraded episodes (timeouts with probability drawn in
  ``degraded_p_range`` per call, duration in ``degraded_durations``); optionally (5) partial failures,
  ``partial_share`` more: a tool fails only for the ``partial_fraction`` of queries most similar (in the
  retriever's context space) to one of its queries, for ``partial_durations`` (a geocoder that times out
  for one region, a search API that breaks on long requests). Health probes do not see them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, fields, replace
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from rated.bench.dynamic.schedule import KINDS, Schedule
from rated.errors import ConfigError
from rated.outcome import OutcomeKind

__all__ = ["SCENARIOS", "ScenarioConfig", "ScenarioRun", "World", "make_scenario", "paper_failing_set"]

SCENARIOS = ("persistent", "recovery", "degraded", "provider", "coldstart", "caller_errors", "outages")
_CODE = {k: i for i, k in enumerate(KINDS)}


@dataclass(frozen=True)
class ScenarioConfig:
    """Every knob of every scenario (unused ones are ignored). Times are in steps."""

    name: str = "persistent"
    steps: int = 5000
    onset: int = 2000
    failure_rate: float = 0.2
    skip_top: float = 0.1
    error_kind: str = "tool_error"  # kind of the paper scenarios' failures
    recovery_at: int = 3500
    degraded_p: float = 0.5
    new_fraction: float = 0.2
    caller_error_p: float = 0.3
    rate_limit_share: float = 0.5
    burst_len: tuple[int, int] = (10, 60)
    burst_gap: tuple[int, int] = (100, 400)
    metadata_link: bool = True
    kind_link: bool = True
    shares: tuple[float, float, float, float] = (
        1 / 3,
        1 / 3,
        1 / 6,
        1 / 6,
    )  # broken, tool, provider, degraded
    never_fixed: float = 0.7
    kind_mix: tuple[float, float, float, float] = (0.4, 0.25, 0.2, 0.15)  # tool_error, timeout, rate, auth
    durations: tuple[tuple[float, float], ...] = ((20, 3000), (20, 300), (10, 100), (500, 5000))
    hint_p: float = 0.8
    provider_durations: tuple[float, float] = (50, 2000)
    degraded_durations: tuple[float, float] = (100, 3000)
    degraded_p_range: tuple[float, float] = (0.3, 0.7)
    partial_share: float = 0.0
    partial_fraction: float = 0.3
    partial_durations: tuple[float, float] = (200, 5000)

    def __post_init__(self) -> None:
        if self.name not in SCENARIOS:
            raise ConfigError(f"unknown scenario {self.name!r}; expected one of: {', '.join(SCENARIOS)}")
        if not 0 < self.onset < self.steps:
            raise ConfigError(f"need 0 < onset < steps, got onset {self.onset}, steps {self.steps}")
        if not 0 < self.failure_rate < 1:
            raise ConfigError(f"failure_rate must lie in (0, 1), got {self.failure_rate}")
        if self.name == "recovery" and not self.onset < self.recovery_at < self.steps:
            raise ConfigError(
                f"recovery needs onset < recovery_at < steps, got onset {self.onset}, "
                f"recovery_at {self.recovery_at}, steps {self.steps}"
            )
        if not 0 <= self.partial_share < math.inf:
            raise ConfigError(f"partial_share must be a number >= 0, got {self.partial_share}")
        OutcomeKind.parse(self.error_kind)

    def scaled(self, factor: float) -> ScenarioConfig:
        """The same scenario on a stream ``factor`` times as long (steps, onset and durations scaled)."""

        def s(v: float) -> int:
            return max(1, int(round(v * factor)))

        return replace(
            self,
            steps=s(self.steps),
            onset=s(self.onset),
            recovery_at=s(self.recovery_at),
            burst_len=(s(self.burst_len[0]), s(self.burst_len[1])),
            burst_gap=(s(self.burst_gap[0]), s(self.burst_gap[1])),
            durations=tuple((lo * factor, hi * factor) for lo, hi in self.durations),
            provider_durations=(self.provider_durations[0] * factor, self.provider_durations[1] * factor),
            degraded_durations=(self.degraded_durations[0] * factor, self.degraded_durations[1] * factor),
            partial_durations=(self.partial_durations[0] * factor, self.partial_durations[1] * factor),
        )

    def to_dict(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}


@dataclass(frozen=True)
class World:
    """What scenarios are drawn from: the pool and how often each tool is relevant in this stream."""

    providers: np.ndarray  # (n_tools,) int provider code per tool
    prior: np.ndarray  # (n_tools,) r_static
    gt_counts: np.ndarray  # (n_tools,) times each tool is relevant over the stream
    query_vectors: np.ndarray | None = None  # (n_queries, d) unit rows: what "similar queries" means
    relevant: list[frozenset[int]] | None = None  # per query: its relevant tools

    @property
    def n_tools(self) -> int:
        return len(self.providers)


@dataclass
class ScenarioRun:
    """A drawn scenario: the schedule, an optional pool change (coldstart) and facts for the report."""

    schedule: Schedule
    add_at: int | None = None  # step at which the tools outside ``pool_before`` join
    pool_before: np.ndarray | None = None  # (n_tools,) bool: in the pool before ``add_at``
    info: dict[str, Any] = field(default_factory=dict)


def paper_failing_set(
    counts: np.ndarray, rate: float, skip_top: float, rng: np.random.Generator
) -> np.ndarray:
    """Items with counts > 0 ranked by count (ties at random); skip the top ``skip_top``, take ``rate``."""
    items = np.flatnonzero(counts > 0)
    n = len(items)
    order = items[np.lexsort((rng.random(n), -counts[items]))]
    skip = int(round(skip_top * n))
    return order[skip : skip + int(round(rate * n))]


def _episodes(
    tools: np.ndarray | list[int],
    start: ArrayLike,
    end: ArrayLike,
    p_fail: ArrayLike,
    kind: ArrayLike,
    hint: ArrayLike,
    n_tools: int,
    steps: int,
) -> Schedule:
    """One failure episode per tool of ``tools``; every other argument one value for all, or one each."""
    size = len(tools)
    as_arr = lambda v, dt: np.broadcast_to(np.asarray(v, dtype=dt), (size,)).copy()  # noqa: E731
    return Schedule(
        n_tools,
        steps,
        as_arr(tools, np.int64),
        as_arr(start, np.int64),
        np.minimum(as_arr(end, np.int64), steps),
        as_arr(p_fail, np.float64),
        as_arr(kind, np.int8),
        as_arr(hint, bool),
    )


def _log_uniform(rng: np.random.Generator, lo: float, hi: float, size: int) -> np.ndarray:
    return np.exp(rng.uniform(math.log(lo), math.log(hi), size))


def _log_uniform_mean(lo: float, hi: float) -> float:
    return (hi - lo) / math.log(hi / lo) if hi > lo else lo


def _metadata_weights(prior: np.ndarray, mean: float, link: bool) -> np.ndarray:
    """Per-tool probability with the given mean: uniform, or higher the worse the metadata (low r_static)."""
    if not link:
        return np.full(len(prior), mean)
    spread = max(float(np.std(prior)), 1e-6)
    w = 1.0 / (1.0 + np.exp(-(float(np.median(prior)) - prior) / (0.5 * spread)))
    return np.clip(w * mean / max(float(w.mean()), 1e-12), 0.0, 0.95)


def _paper(cfg: ScenarioConfig, world: World, rng: np.random.Generator) -> ScenarioRun:
    failing = paper_failing_set(world.gt_counts, cfg.failure_rate, cfg.skip_top, rng)
    end = cfg.recovery_at if cfg.name == "recovery" else cfg.steps
    p = cfg.degraded_p if cfg.name == "degraded" else 1.0
    kind = _CODE[OutcomeKind.parse(cfg.error_kind)]
    sched = _episodes(failing, cfg.onset, end, p, kind, True, world.n_tools, cfg.steps)
    return ScenarioRun(sched, info={"failing_tools": int(len(failing))})


def _provider(cfg: ScenarioConfig, world: World, rng: np.random.Generator) -> ScenarioRun:
    n_prov = int(world.providers.max()) + 1
    counts = np.bincount(world.providers, weights=world.gt_counts, minlength=n_prov)
    down = paper_failing_set(counts, cfg.failure_rate, cfg.skip_top, rng)
    tools = np.flatnonzero(np.isin(world.providers, down))
    kind = _CODE[OutcomeKind.parse(cfg.error_kind)]
    sched = _episodes(tools, cfg.onset, cfg.steps, 1.0, kind, True, world.n_tools, cfg.steps)
    return ScenarioRun(sched, info={"failing_providers": int(len(down)), "failing_tools": int(len(tools))})


def _coldstart(cfg: ScenarioConfig, world: World, rng: np.random.Generator) -> ScenarioRun:
    n = world.n_tools
    new = rng.random(n) < cfg.new_fraction
    p_broken = _metadata_weights(world.prior[new], cfg.failure_rate, cfg.metadata_link)
    broken = np.flatnonzero(new)[rng.random(int(new.sum())) < p_broken]
    sched = _episodes(broken, cfg.onset, cfg.steps, 1.0, _CODE[OutcomeKind.AUTH_ERROR], False, n, cfg.steps)
    return ScenarioRun(
        sched,
        add_at=cfg.onset,
        pool_before=~new,
        info={"new_tools": int(new.sum()), "failing_tools": int(len(broken))},
    )


def _caller_errors(cfg: ScenarioConfig, world: World, rng: np.random.Generator) -> ScenarioRun:
    n = world.n_tools
    hard = paper_failing_set(world.gt_counts, cfg.failure_rate, cfg.skip_top, rng)
    caller = np.zeros(n)
    caller[hard] = cfg.caller_error_p
    rest = np.setdiff1d(np.flatnonzero(world.gt_counts > 0), hard)
    n_rl = min(len(rest), int(round(cfg.rate_limit_share * len(hard))))
    limited = rng.choice(rest, size=n_rl, replace=False) if n_rl else np.zeros(0, dtype=np.int64)
    tools, starts, ends = [], [], []
    for tool in limited.tolist():
        t = cfg.onset + int(rng.integers(0, cfg.burst_gap[1]))
        while t < cfg.steps:
            length = int(rng.integers(cfg.burst_len[0], cfg.burst_len[1] + 1))
            tools.append(tool)
            starts.append(t)
            ends.append(t + length)
            t += length + int(rng.integers(cfg.burst_gap[0], cfg.burst_gap[1] + 1))
    sched = _episodes(tools, starts, ends, 1.0, _CODE[OutcomeKind.RATE_LIMITED], True, n, cfg.steps)
    sched.caller_error = caller
    return ScenarioRun(sched, info={"caller_error_tools": int(len(hard)), "rate_limited_tools": int(n_rl)})


def _outages(cfg: ScenarioConfig, world: World, rng: np.random.Generator) -> ScenarioRun:
    n, T = world.n_tools, cfg.steps
    share_broken, share_tool, share_prov, share_deg = (s * cfg.failure_rate for s in cfg.shares)
    parts: list[Schedule] = []
    # (1) broken from the start, linked to metadata quality when metadata_link
    broken = np.flatnonzero(rng.random(n) < _metadata_weights(world.prior, share_broken, cfg.metadata_link))
    fixed_at = np.where(rng.random(len(broken)) < cfg.never_fixed, T, rng.integers(1, T, len(broken)))
    parts.append(_episodes(broken, 0, fixed_at, 1.0, _CODE[OutcomeKind.AUTH_ERROR], False, n, T))
    # (2) tool outages: Poisson per tool; kind decides the duration unless kind_link is off
    mix = np.asarray(cfg.kind_mix, dtype=np.float64) / sum(cfg.kind_mix)
    mean_dur = sum(m * _log_uniform_mean(*d) for m, d in zip(mix, cfg.durations, strict=True))
    count = rng.poisson(share_tool * T / mean_dur, n)
    tools = np.repeat(np.arange(n), count)
    dur_kind = rng.choice(len(KINDS), size=len(tools), p=mix)
    durations = np.empty(len(tools))
    for k, (lo, hi) in enumerate(cfg.durations):
        sel = dur_kind == k
        durations[sel] = _log_uniform(rng, lo, hi, int(sel.sum()))
    kind = dur_kind if cfg.kind_link else rng.choice(len(KINDS), size=len(tools), p=mix)
    start = rng.integers(0, T, len(tools))
    hint = (kind == _CODE[OutcomeKind.RATE_LIMITED]) & (rng.random(len(tools)) < cfg.hint_p)
    parts.append(_episodes(tools, start, start + np.ceil(durations), 1.0, kind, hint, n, T))
    # (3) provider outages: every tool of the provider at once
    n_prov = int(world.providers.max()) + 1
    pcount = rng.poisson(share_prov * T / _log_uniform_mean(*cfg.provider_durations), n_prov)
    provs = np.repeat(np.arange(n_prov), pcount)
    pstart = rng.integers(0, T, len(provs))
    pend = pstart + np.ceil(_log_uniform(rng, *cfg.provider_durations, len(provs)))
    pkind = rng.choice([_CODE[OutcomeKind.TOOL_ERROR], _CODE[OutcomeKind.TIMEOUT]], size=len(provs))
    members = [np.flatnonzero(world.providers == p) for p in range(n_prov)]
    ptools = [members[p] for p in provs]
    sizes = [len(m) for m in ptools]
    parts.append(
        _episodes(
            np.concatenate(ptools) if ptools else np.zeros(0, dtype=np.int64),
            np.repeat(pstart, sizes),
            np.repeat(pend, sizes),
            1.0,
            np.repeat(pkind, sizes),
            False,
            n,
            T,
        )
    )
    # (4) degraded episodes
    dcount = rng.poisson(share_deg * T / _log_uniform_mean(*cfg.degraded_durations), n)
    dtools = np.repeat(np.arange(n), dcount)
    dstart = rng.integers(0, T, len(dtools))
    dend = dstart + np.ceil(_log_uniform(rng, *cfg.degraded_durations, len(dtools)))
    dp = rng.uniform(*cfg.degraded_p_range, len(dtools))
    parts.append(_episodes(dtools, dstart, dend, dp, _CODE[OutcomeKind.TIMEOUT], False, n, T))
    if cfg.partial_share > 0:
        parts.append(_partial(cfg, world, rng))
    sched = Schedule.concat(parts)
    info = {
        "broken_from_start": int(len(broken)),
        "tool_outages": int(len(tools)),
        "provider_outages": int(len(provs)),
        "degraded_episodes": int(len(dtools)),
    }
    return ScenarioRun(sched, info=info)


def _partial(cfg: ScenarioConfig, world: World, rng: np.random.Generator) -> Schedule:
    """Failures that hit only the queries near an anchor query of the tool (a tool failing for one kind
    of request)."""
    if world.query_vectors is None or world.relevant is None:
        raise ConfigError("partial failures need the queries' vectors and labels in the World")
    n, T = world.n_tools, cfg.steps
    vecs = np.asarray(world.query_vectors, dtype=np.float64)
    by_tool: dict[int, list[int]] = {}
    for q, rel in enumerate(world.relevant):
        for j in rel:
            by_tool.setdefault(j, []).append(q)
    count = rng.poisson(
        cfg.partial_share * cfg.failure_rate * T / _log_uniform_mean(*cfg.partial_durations), n
    )
    tools = np.repeat(np.arange(n), count)
    starts = rng.integers(0, T, len(tools))
    ends = starts + np.ceil(_log_uniform(rng, *cfg.partial_durations, len(tools)))
    masks = []
    for j in tools.tolist():
        own = by_tool.get(j)
        anchor = int(rng.choice(own)) if own else int(rng.integers(len(vecs)))
        sims = vecs @ vecs[anchor]
        masks.append(sims >= np.quantile(sims, 1.0 - cfg.partial_fraction))
    size = len(tools)
    return Schedule(
        n,
        T,
        tools.astype(np.int64),
        starts.astype(np.int64),
        np.minimum(ends, T).astype(np.int64),
        np.ones(size),
        np.full(size, _CODE[OutcomeKind.TOOL_ERROR], dtype=np.int8),
        np.zeros(size, dtype=bool),
        qset=np.arange(size, dtype=np.int64),
        query_masks=masks,
    )


_MAKERS = {
    "persistent": _paper,
    "recovery": _paper,
    "degraded": _paper,
    "provider": _provider,
    "coldstart": _coldstart,
    "caller_errors": _caller_errors,
    "outages": _outages,
}


def make_scenario(cfg: ScenarioConfig, world: World, seed: int) -> ScenarioRun:
    """Draw scenario ``cfg.name`` for one seed (the same seed always gives the same episodes)."""
    rng = np.random.default_rng([seed, 0x5CE7A])
    run = _MAKERS[cfg.name](cfg, world, rng)
    gt = np.flatnonzero(world.gt_counts > 0)
    run.info["down_fraction_relevant"] = run.schedule.down_fraction(gt, cfg.onset)
    run.info["episodes"] = len(run.schedule)
    return run
