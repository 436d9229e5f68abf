"""Retired endpoints: evidence across calls that a tool's API is gone.

A tool whose API was retired or moved answers 404 Not Found (or 410 Gone) to every call, whatever the
arguments. One such answer is the caller's error (``rated.classify``: an argument naming no resource is far
more common, and never the tool's fault). Many in a row, for many different requests, are not: the
retriever then has the policy learn them as ``tool_error``, so agents are steered away, and the usual
recovery (the belief relaxing with time, health probes) brings the tool back to be tried again.

The rule (``RetiredRule``), weighed for each ``caller_error`` whose status is 404 or 410
(``Outcome.status``: a status classified by ``outcome_from_status`` or ``call.report_status``, an
exception carrying a response, ``status`` over HTTP, MCP and the CLI): it counts as a ``tool_error`` when
the tool's 404/410s since its last logged success came from at least ``need`` different queries, all
within ``window`` (seconds of the retriever's clock). A query counts once however often it was retried:
one agent repeating one wrong id is one piece of evidence. A report without a query adds no evidence.
Once the rule holds, each further 404/410 of the tool counts too, until the tool succeeds again (or the
window holds too few queries).

``need`` is ``after`` (default 3), raised for tools whose callers often err: ``k`` independent caller
errors in a row have probability ``p**k`` at the tool's own caller-error rate ``p``, estimated from its
outcome counts when the run began (``(caller_errors + 1) / (successes + caller_errors + 2)``), and ``need``
is the least ``k >= after`` with ``p**k <= false_alarm`` (default 0.001). A live tool whose callers get
404s for their own mistakes (hallucinated ids) then has at most about that share of its calls counted
against it, which no policy notices; a retired tool with a clean history is caught after ``after``
different queries, one with no history yet after 10. Random bad arguments without a 404/410 status (a
400, a 422, a schema error, or a caller error reported by name) never count.

The outcome log keeps what the agent reported (``caller_error``), so ``outcomes`` and ``rated tools``
count calls as they went; the run records how many of them the policy learned as failures (``counted``)
and the ``rated.retired`` logger warns when a run first counts. The evidence lives in the store
(``EvidenceStore``), so the processes sharing it (replicas, the CLI, a service's workers) add to and read
the same runs, atomically; a success is seen in the store's per-tool counts, so reporting one costs
nothing more (a 404/410 costs one more store transaction). A store without ``EvidenceStore``'s methods
keeps no evidence: the rule stays off there. Health probes do not end a run: they check the server, not
the endpoint; a call that succeeds does.

Configured with the index (``Retriever.from_catalog(..., retired=...)``: a ``RetiredRule``, a mapping of
its fields, or False to switch it off), or for one process (``Retriever.open(..., retired=...)``).

What the rule makes of a tool now (``RetiredStatus``: whether it holds, from how many different queries,
how many it needs) is read from the same evidence, without writing: ``status_of`` for the tools of a
retriever (what ``rated tools``, ``GET /tools`` and the dashboard show), ``current`` for a store, a rule
and a time; ``counted_as`` says whether a report just recorded was counted as ``tool_error`` (what the
feedback answers say).
"""

from __future__ import annotations

import datetime
import json
import logging
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from numbers import Integral, Real
from typing import TYPE_CHECKING, Any

from rated.errors import ConfigError
from rated.outcome import Outcome, OutcomeKind
from rated.shown import shown
from rated.store.base import EvidenceStore, OutcomeStats, Store

if TYPE_CHECKING:
    from rated.hits import ToolHealth
    from rated.retriever import Retriever

__all__ = [
    "STATUSES",
    "RetiredRule",
    "RetiredRun",
    "RetiredStatus",
    "Verdict",
    "counted_as",
    "current",
    "is_evidence",
    "load_run",
    "status_of",
    "weigh",
    "with_status",
]

log = logging.getLogger("rated.retired")

STATUSES = frozenset({404, 410})  # the answers of an endpoint that is gone (RFC 9110 §15.5.5, §15.5.11)
MAX_QUERIES = 100  # different queries a run remembers; a tool that would need more is never counted
_KEY = "retired:"  # evidence key prefix: retired:TOOL_ID
_FORMAT = 1


@dataclass(frozen=True)
class RetiredRule:
    """When a run of 404/410 caller errors counts against a tool (see the module doc).

    ``after``: the fewest different queries (1 to ``MAX_QUERIES``); ``window``: seconds (of the
    retriever's clock) that a 404/410 stays evidence; ``false_alarm``: the highest chance, at the tool's
    own caller-error rate, that its callers' mistakes alone make a run that long (1: ``after`` alone
    decides); ``enabled``: False switches the rule off."""

    after: int = 3
    window: float = 86_400.0
    false_alarm: float = 1e-3
    enabled: bool = True

    def __post_init__(self) -> None:
        after, window, alarm = self.after, self.window, self.false_alarm
        if isinstance(after, bool) or not isinstance(after, Integral) or not 1 <= after <= MAX_QUERIES:
            raise ConfigError(f"retired.after must be an integer from 1 to {MAX_QUERIES}, got {shown(after)}")
        if isinstance(window, bool) or not isinstance(window, Real) or not 0 < window < math.inf:
            raise ConfigError(f"retired.window must be a finite number of seconds > 0, got {shown(window)}")
        if isinstance(alarm, bool) or not isinstance(alarm, Real) or not 0 < alarm <= 1:
            raise ConfigError(f"retired.false_alarm must be a number in (0, 1], got {shown(alarm)}")
        if not isinstance(self.enabled, bool):
            raise ConfigError(f"retired.enabled must be True or False, got {shown(self.enabled)}")
        object.__setattr__(self, "after", int(after))
        object.__setattr__(self, "window", float(window))
        object.__setattr__(self, "false_alarm", float(alarm))

    @classmethod
    def parse(cls, value: RetiredRule | Mapping[str, Any] | bool | None) -> RetiredRule:
        """A rule from what users pass: None or True (the defaults), False (off), a ``RetiredRule``, or a
        mapping of its fields (``{"after": 5}``; missing ones take their defaults)."""
        if value is None or value is True:
            return cls()
        if value is False:
            return cls(enabled=False)
        if isinstance(value, RetiredRule):
            return value
        if not isinstance(value, Mapping):
            raise ConfigError(
                f"retired must be True, False, a RetiredRule or a mapping of its fields, got {shown(value)}"
            )
        unknown = sorted(str(k) for k in value if k not in cls.__dataclass_fields__)
        if unknown:
            raise ConfigError(
                f"unknown retired option(s): {', '.join(unknown)}; known: after, window, false_alarm, enabled"
            )
        return cls(**value)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def applies(self, outcome: Outcome) -> bool:
        """Whether ``outcome`` is evidence to weigh: a 404 or 410 caller error, with the rule on."""
        return self.enabled and outcome.kind is OutcomeKind.CALLER_ERROR and outcome.status in STATUSES

    def need(self, successes: int, caller_errors: int) -> int | None:
        """How many different queries a run of a tool with these counts (before the run) needs; None when
        more than ``MAX_QUERIES`` (its callers err so often that no run could tell)."""
        p = (caller_errors + 1) / (successes + caller_errors + 2)
        k = self.after
        if self.false_alarm < 1:
            # the least k with p**k <= false_alarm (the small margin keeps an exact power from rounding up)
            k = max(k, math.ceil(math.log(self.false_alarm) / math.log(p) - 1e-9))
        return k if k <= MAX_QUERIES else None


@dataclass(frozen=True)
class RetiredRun:
    """A tool's unbroken run of 404/410 caller errors, as the store holds it.

    ``successes`` / ``caller_errors``: the tool's logged counts when the run began (another success ends
    it); ``since``: when its oldest evidence still in the window came; ``queries``: query hash -> the time
    of its latest 404/410; ``counted``: how many of the run's 404/410s the policy learned as tool errors."""

    successes: int
    caller_errors: int
    since: float
    queries: dict[str, float] = field(default_factory=dict)
    counted: int = 0

    def to_bytes(self) -> bytes:
        data = {"v": _FORMAT, "s": self.successes, "c": self.caller_errors, "since": self.since}
        return json.dumps({**data, "q": self.queries, "n": self.counted}, separators=(",", ":")).encode()

    @classmethod
    def from_bytes(cls, blob: bytes) -> RetiredRun | None:
        """The run, or None for a blob that is not one (damaged, or of another format): evidence is
        expendable, a new run starts."""
        try:
            data = json.loads(blob)  # non-UTF-8 bytes: UnicodeDecodeError, a ValueError
            if not isinstance(data, dict) or data.get("v") != _FORMAT:
                return None
            counts = [data["s"], data["c"], data["n"]]
            times = [data["since"], *data["q"].values()]
        except (ValueError, TypeError, KeyError, AttributeError):
            return None
        # JSON reads Infinity, NaN and 1e400: numbers no writer of ours made, refused like any damage
        if not all(type(n) is int and n >= 0 for n in counts):
            return None
        if not all(type(t) in (int, float) and math.isfinite(t) for t in times):
            return None
        queries = {str(h): float(t) for h, t in data["q"].items()}
        return cls(counts[0], counts[1], float(data["since"]), queries, counts[2])


@dataclass(frozen=True)
class Verdict:
    """What weighing one 404/410 found: whether it counts against the tool, the run after it (None: no
    evidence kept) and whether it is the run's first that counts (``weigh`` has logged that)."""

    counts: bool
    run: RetiredRun | None = None
    first: bool = False


def weigh(store: Store, rule: RetiredRule, tool_id: str, query_hash: str | None, now: float) -> Verdict:
    """Add one 404/410 caller error of ``tool_id`` (for the query hashed ``query_hash``, if any) to its run
    in ``store`` and say whether it counts against the tool. A store that keeps no evidence: never."""
    if not rule.enabled or not isinstance(store, EvidenceStore):
        return Verdict(False)
    stats = store.outcome_stats([tool_id]).get(tool_id)
    successes, caller_errors = (0, 0) if stats is None else (stats.successes, stats.caller_errors)
    found: list[Verdict] = []

    def update(blob: bytes | None) -> bytes | None:
        found.clear()  # may run more than once: the last run is the one saved
        run = None if blob is None else RetiredRun.from_bytes(blob)
        verdict = _advance(run, rule, successes, caller_errors, query_hash, now)
        found.append(verdict)
        return None if verdict.run is None else verdict.run.to_bytes()

    store.update_evidence(_KEY + tool_id, update)
    verdict = found[-1]
    if verdict.first and verdict.run is not None:
        log.warning(
            "tool %r answered 404/410 to %d different queries in a row (the first at %s, no success since): "
            "counted as tool_error until a call succeeds (a retired or moved endpoint?); the outcome log "
            "keeps them as caller_error",
            tool_id,
            len(verdict.run.queries),
            _when(verdict.run.since),
        )
    return verdict


def _load_runs(store: EvidenceStore, tool_ids: Sequence[str]) -> dict[str, RetiredRun]:
    """The runs the store holds of those of ``tool_ids`` that have one: in one read where the store can
    (``load_evidence_many``: a point read per tool cost GET /tools one store round trip per tool)."""
    if not tool_ids:
        return {}
    many = getattr(store, "load_evidence_many", None)
    if many is not None:
        blobs = many([_KEY + t for t in tool_ids])
    else:
        blobs = {_KEY + t: blob for t in tool_ids if (blob := store.load_evidence(_KEY + t)) is not None}
    runs = {t: RetiredRun.from_bytes(blob) for t in tool_ids if (blob := blobs.get(_KEY + t)) is not None}
    return {t: run for t, run in runs.items() if run is not None}


def load_run(store: Store, tool_id: str) -> RetiredRun | None:
    """The run of ``tool_id`` the store holds now (None: none, or a store that keeps no evidence). It may
    be over already: a success since, or evidence older than the window, ends it at the next 404/410."""
    if not isinstance(store, EvidenceStore):
        return None
    blob = store.load_evidence(_KEY + tool_id)
    return None if blob is None else RetiredRun.from_bytes(blob)


@dataclass(frozen=True)
class RetiredStatus:
    """A tool's run of 404/410 caller errors as the rule sees it now (``current``).

    ``holds``: the rule counts the tool's 404/410s as ``tool_error`` now; ``queries``: the different
    queries whose 404/410 is evidence (since the tool's last success, within the window); ``need``: how many
    the rule needs for this tool (None: more than ``MAX_QUERIES``, so never); ``counted``: the run's
    404/410s the policy learned as tool errors so far; ``since``: when its oldest evidence came."""

    holds: bool
    queries: int
    need: int | None
    counted: int
    since: float

    def describe(self) -> str:
        """One line for people: ``404/410 from 3 different queries since the last success: counted as
        tool_error (a retired endpoint?)``."""
        seen = f"404/410 from {self.queries} different {'query' if self.queries == 1 else 'queries'}"
        seen += " since the last success"
        if self.holds:
            return f"{seen}: counted as tool_error (a retired endpoint?)"
        if self.need is None:
            return f"{seen} (its callers err too often for a run to count)"
        return f"{seen} ({self.need} count as a retired endpoint)"

    def to_dict(self) -> dict[str, Any]:
        """Its fields, and ``summary``: ``describe()``."""
        return {**asdict(self), "summary": self.describe()}


def current(
    store: Store,
    rule: RetiredRule,
    tool_ids: Iterable[str],
    now: float,
    stats: Mapping[str, OutcomeStats] | None = None,
) -> dict[str, RetiredStatus]:
    """The tools among ``tool_ids`` that have a run of 404/410s at ``now``, with what ``rule`` makes of it
    (read only: nothing is written). The runs are read at once (the store's ``load_evidence_many``, else
    one ``load_evidence`` per tool). ``stats``: the tools' outcome counts when the caller has read them
    already; a tool without a logged caller error (a run needs a 404/410) is then not read. None: every
    tool's run is read, and the counts of those with one. Empty with the rule off or a store that keeps no
    evidence."""
    if not rule.enabled or not isinstance(store, EvidenceStore):
        return {}
    ids = list(dict.fromkeys(tool_ids))
    if stats is not None:
        # not the last outcome too: a success that ended a run comes out in the counts (_status), and the
        # last outcome is the latest by time, which a clock gone back (or another host's) leaves a success
        ids = [t for t in ids if (s := stats.get(t)) is not None and s.caller_errors]
    runs = _load_runs(store, ids)
    if stats is None:
        stats = store.outcome_stats(list(runs)) if runs else {}
    found = {}
    for tool_id, run in runs.items():
        counts = stats.get(tool_id)
        status = _status(run, rule, 0 if counts is None else counts.successes, now)
        if status is not None:
            found[tool_id] = status
    return found


def status_of(
    retriever: Retriever, tool_ids: Iterable[str], stats: Mapping[str, OutcomeStats] | None = None
) -> dict[str, RetiredStatus]:
    """``current`` for tools of ``retriever``, with the rule its feedback applies (its own, else the
    index's) and its clock's time now."""
    return current(retriever.store, retriever.retired_rule, tool_ids, retriever.now(), stats)


def with_status(
    retriever: Retriever, health: Sequence[ToolHealth], *, counted: bool = True
) -> list[ToolHealth]:
    """``health`` with each tool's ``retired`` status filled in (``status_of``: the runs read at once).
    ``counted``: ``health`` holds the tools' outcome counts (``Retriever.tools()``, ``health(id)``), so
    that a tool without caller errors is not read; False for ``stats=False`` health."""
    stats = {h.tool.id: h.stats for h in health if h.stats is not None} if counted else None
    found = status_of(retriever, [h.tool.id for h in health], stats)
    return [replace(h, retired=found[h.tool.id]) if h.tool.id in found else h for h in health]


def is_evidence(outcome: Outcome) -> bool:
    """Whether a report is what the rule weighs: a caller error whose status is 404 or 410."""
    return outcome.kind is OutcomeKind.CALLER_ERROR and outcome.status in STATUSES


def counted_as(reported: Outcome, status: RetiredStatus | None) -> OutcomeKind | None:
    """What the policy learned a report as, when not as reported: ``tool_error`` for a 404/410 caller
    error of a tool whose run holds (``status``: the tool's, read right after the report was recorded);
    None otherwise."""
    return OutcomeKind.TOOL_ERROR if is_evidence(reported) and status is not None and status.holds else None


def _status(run: RetiredRun, rule: RetiredRule, successes: int, now: float) -> RetiredStatus | None:
    """What ``rule`` makes of ``run`` at ``now`` (None: over), judged as ``_advance`` would judge the
    tool's next 404/410 for a query already in the run."""
    if successes > run.successes:
        return None  # a success since the run began ended it
    horizon = now - rule.window
    times = [min(t, now) for t in run.queries.values() if horizon <= t <= now + rule.window]
    if not times:
        return None
    need = rule.need(run.successes, run.caller_errors)
    holds = need is not None and len(times) >= need
    return RetiredStatus(holds, len(times), need, run.counted, min(times))


def _advance(
    run: RetiredRun | None,
    rule: RetiredRule,
    successes: int,
    caller_errors: int,
    query_hash: str | None,
    now: float,
) -> Verdict:
    """The run after one more 404/410 (pure: the store's update calls it)."""
    horizon = now - rule.window
    queries: dict[str, float] = {}
    # more successes logged than when the run began: one came in between, start over (fewer: this report
    # read the counts before another writer's success began the run, which it joins)
    if run is not None and successes <= run.successes:
        # a time after now: the clock went back (or another process's runs ahead). Within a window of
        # now it counts as now, so it expires a window after now at the latest; further ahead it is
        # dropped, or the run would outlive the window by however far the clock went back
        queries = {h: min(t, now) for h, t in run.queries.items() if horizon <= t <= now + rule.window}
    if run is None or not queries:
        run = RetiredRun(successes, caller_errors, now)
    if query_hash is not None:
        queries.pop(query_hash, None)
        queries[query_hash] = now  # latest last: the oldest go first when the run is full
        if len(queries) > MAX_QUERIES:
            queries = dict(sorted(queries.items(), key=lambda item: item[1])[-MAX_QUERIES:])
    if not queries:
        return Verdict(False)  # nothing to remember: a report without a query starts no run
    need = rule.need(run.successes, run.caller_errors)
    counts = need is not None and len(queries) >= need
    since = min(queries.values())  # the oldest evidence kept: older expired, or left a full run
    kept = RetiredRun(run.successes, run.caller_errors, since, queries, run.counted + int(counts))
    return Verdict(counts, kept, counts and run.counted == 0)


def _when(seconds: float) -> str:
    """A time for the log: ISO 8601 in UTC when it looks like Unix seconds, else the clock's own number."""
    if 1e9 <= seconds <= 1e10:
        return datetime.datetime.fromtimestamp(seconds, datetime.UTC).isoformat(timespec="seconds")
    return f"{seconds:g}"
