"""What the dashboard shows, gathered in one bounded read and never written back.

Health comes from ``Retriever.tools(stats=False)``: the same policy view as ``GET /tools`` and
``rated tools``, without their scan of the whole outcome log. Counts, "failing since" and the recent
outcomes come from the newest ``MAX_OUTCOMES`` records of the log only, so a request costs the same on a
database with a million outcomes as on one with a thousand. The retired-endpoint rule's view of each tool
shown (``rated.retired.status_of``) costs one evidence read for all its rows (at most ``MAX_TOOL_ROWS``)
and one of the counts of those with a run.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from rated.hits import ToolHealth
from rated.retired import RetiredStatus, status_of
from rated.retriever import Retriever
from rated.retriever_setup import describe_db
from rated.store.base import OutcomeRecord, OutcomeStats, Store
from rated.store.memory import MemoryStore
from rated.store.stats import outcome_class, summarise_outcomes

__all__ = [
    "MAX_OUTCOMES",
    "MAX_TOOL_ROWS",
    "Snapshot",
    "ToolRow",
    "bar_components",
    "failing_since",
    "read_outcomes",
    "store_label",
    "take_snapshot",
]

MAX_OUTCOMES = 5_000  # rows of the outcome log one dashboard request reads, at most
MAX_TOOL_ROWS = 200  # tool rows one page shows (unhealthy ones first)
_BARS = ("availability", "reliability")  # RatedPolicy's two health estimates
_FALLBACK_BARS = ("bandit", "mab", "health")  # what other policies call their learned component


@dataclass(frozen=True)
class ToolRow:
    """One tool with state: unhealthy now, or with outcomes among the records read."""

    id: str
    name: str
    healthy: bool
    bars: Mapping[str, float]  # the policy's health components shown as bars (see ``bar_components``)
    stats: OutcomeStats | None  # counts over the records read (None: no outcome among them)
    failing_since: float | None  # first failure of the current streak (None: not failing)
    since_exact: bool  # False when the streak reaches back past the oldest record read
    retired: RetiredStatus | None = None  # its run of 404/410s (rated.retired; None: none)


@dataclass(frozen=True)
class Snapshot:
    now: float
    minutes: int  # the summary's window ("outcomes in the last N minutes")
    tools_indexed: int
    unhealthy: int
    rows: tuple[ToolRow, ...]
    hidden_rows: int  # tools with state beyond ``MAX_TOOL_ROWS``
    bars: tuple[str, ...]
    recent: tuple[OutcomeRecord, ...]  # newest first
    window_outcomes: int  # outcomes in the last ``minutes`` (a lower bound when not ``window_complete``)
    window_failures: int  # of which count against their tool
    window_complete: bool  # False when the read cap cut into the window
    records_read: int
    capped: bool  # the log holds more records than were read
    policy: str
    encoder: str
    db: str
    version: str


def read_outcomes(retriever: Retriever, limit: int = MAX_OUTCOMES) -> tuple[list[OutcomeRecord], bool]:
    """The newest ``limit`` records (oldest first), and whether the log may hold more."""
    records = retriever.outcomes(limit=limit)
    return records, len(records) >= limit


def take_snapshot(
    retriever: Retriever, now: float, *, minutes: int = 60, recent: int = 50, max_outcomes: int = MAX_OUTCOMES
) -> Snapshot:
    """Everything the page shows, at ``now`` (unix seconds)."""
    from rated import __version__

    records, capped = read_outcomes(retriever, max_outcomes)
    health = retriever.tools(stats=False)
    stats = summarise_outcomes(records)
    since = failing_since(records, capped)
    bars = bar_components(health)
    stateful = [h for h in health if not h.healthy or h.tool.id in stats]
    stateful.sort(key=lambda h: _order(h, stats.get(h.tool.id)))
    shown = stateful[:MAX_TOOL_ROWS]
    retired = status_of(retriever, [h.tool.id for h in shown])  # one read for the rows shown
    rows = tuple(
        _row(h, stats.get(h.tool.id), since.get(h.tool.id), bars, retired.get(h.tool.id)) for h in shown
    )
    start = now - minutes * 60.0
    in_window = [r for r in records if r.time >= start]
    classes = _classes(in_window)
    meta = retriever.meta
    return Snapshot(
        now=now,
        minutes=minutes,
        tools_indexed=len(health),
        unhealthy=sum(not h.healthy for h in health),
        rows=rows,
        hidden_rows=len(stateful) - len(rows),
        bars=bars,
        recent=tuple(reversed(records[-recent:])),
        window_outcomes=len(in_window),
        window_failures=sum(classes[r.outcome] == "failure" for r in in_window),
        window_complete=not capped or records[0].time < start,
        records_read=len(records),
        capped=capped,
        policy=meta.policy,
        encoder=str(meta.encoder),
        db=store_label(retriever.store),
        version=__version__,
    )


def failing_since(records: Sequence[OutcomeRecord], capped: bool) -> dict[str, tuple[float, bool]]:
    """Per tool whose latest health-relevant outcome is a failure: when that streak of failures began, and
    whether that is exact (False when the streak starts at the oldest record read of a capped log).

    Caller errors say nothing about the tool and neither start nor end a streak.
    """
    classes = _classes(records)
    streak: dict[str, float] = {}
    succeeded: set[str] = set()  # a success read before the streak: it began after it, so exactly here
    exact: dict[str, bool] = {}
    for r in records:  # oldest first
        kind = classes[r.outcome]
        if kind == "failure" and r.tool_id not in streak:
            streak[r.tool_id] = r.time
            exact[r.tool_id] = r.tool_id in succeeded or not capped
        elif kind == "success":
            streak.pop(r.tool_id, None)
            succeeded.add(r.tool_id)
    return {t: (when, exact[t]) for t, when in streak.items()}


def bar_components(health: Sequence[ToolHealth]) -> tuple[str, ...]:
    """Which health components to draw: availability and reliability where the policy reports them
    (RatedPolicy), else its learned score under the name other policies use; none for static policies."""
    names: set[str] = set()
    for h in health[:1]:  # every tool gets the same components from one ranking
        names.update(h.components)
    found = tuple(n for n in _BARS if n in names)
    return found or next(((n,) for n in _FALLBACK_BARS if n in names), ())


def store_label(store: Store) -> str:
    """The database as the page names it: a path, or a Redis URL whose password the store already masked
    (``RedisStore.url``; the ``--db`` text itself is never shown)."""
    if isinstance(store, MemoryStore):
        return "in memory"
    return describe_db(store)


def _classes(records: Sequence[OutcomeRecord]) -> dict[str, str]:
    """``outcome_class`` of each distinct outcome name, computed once (a few names, thousands of rows)."""
    return {name: outcome_class(name) for name in {r.outcome for r in records}}


def _order(h: ToolHealth, stats: OutcomeStats | None) -> tuple[bool, float, str]:
    """Unhealthy first, then the most recently active, then by id (a stable page between refreshes)."""
    last = stats.last_time if stats and stats.last_time is not None else -math.inf
    return (h.healthy, -last, h.tool.id)


def _row(
    h: ToolHealth,
    stats: OutcomeStats | None,
    since: tuple[float, bool] | None,
    bars: tuple[str, ...],
    retired: RetiredStatus | None = None,
) -> ToolRow:
    return ToolRow(
        id=h.tool.id,
        name=h.tool.name,
        healthy=h.healthy,
        bars={n: h.components[n] for n in bars if n in h.components},
        stats=stats,
        failing_since=None if since is None else since[0],
        since_exact=True if since is None else since[1],
        retired=retired,
    )
