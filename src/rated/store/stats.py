"""Per-tool summaries of the outcome log, shared by the stores that cannot aggregate in place."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from rated.outcome import OutcomeKind
from rated.store.base import OutcomeRecord, OutcomeStats

__all__ = ["outcome_class", "outcome_slot", "recent_outcomes", "summarise_outcomes"]

_SLOTS = {"success": 0, "failure": 1, "caller_error": 2}


def outcome_class(outcome: str) -> str:
    """'success', 'failure' (counts against the tool) or 'caller_error' for a logged outcome name."""
    try:
        kind = OutcomeKind(outcome)
    except ValueError:
        return "failure"
    if kind.is_success:
        return "success"
    return "failure" if kind.counts_against_tool else "caller_error"


def outcome_slot(outcome: str) -> int:
    """Where a logged outcome counts in a (successes, failures, caller_errors) row: 0, 1 or 2."""
    return _SLOTS[outcome_class(outcome)]


def recent_outcomes(
    records: Sequence[OutcomeRecord], tool_id: str | None, limit: int | None
) -> list[OutcomeRecord]:
    """The last ``limit`` records of the log (all when None), for one tool or all, oldest first."""
    rows = [r for r in records if tool_id is None or r.tool_id == tool_id]
    return rows if limit is None else rows[-limit:] if limit > 0 else []


def summarise_outcomes(
    records: Iterable[OutcomeRecord], tool_ids: Iterable[str] | None = None
) -> dict[str, OutcomeStats]:
    """Fold the log (oldest first) into per-tool counts and the last outcome of ``tool_ids`` (all: None)."""
    wanted = None if tool_ids is None else set(tool_ids)
    acc: dict[str, list] = {}
    for r in records:
        if wanted is not None and r.tool_id not in wanted:
            continue
        row = acc.setdefault(r.tool_id, [0, 0, 0, None, None])
        row[outcome_slot(r.outcome)] += 1
        if row[4] is None or r.time >= row[4]:
            row[3], row[4] = r.outcome, r.time
    return {t: OutcomeStats(t, s, f, c, last, when) for t, (s, f, c, last, when) in acc.items()}
