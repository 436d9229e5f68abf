"""Per-tool summaries of the outcome log, shared by the stores that cannot aggregate in place."""

from __future__ import annotations

from collections.abc import Iterable

from rated.outcome import OutcomeKind
from rated.store.base import OutcomeRecord, OutcomeStats

__all__ = ["outcome_class", "summarise_outcomes"]


def outcome_class(outcome: str) -> str:
    """'success', 'failure' (counts against the tool) or 'caller_error' for a logged outcome name."""
    try:
        kind = OutcomeKind(outcome)
    except ValueError:
        return "failure"
    if kind.is_success:
        return "success"
    return "failure" if kind.counts_against_tool else "caller_error"


def summarise_outcomes(records: Iterable[OutcomeRecord]) -> dict[str, OutcomeStats]:
    """Fold the log (oldest first) into per-tool counts and the last outcome."""
    acc: dict[str, list] = {}
    for r in records:
        row = acc.setdefault(r.tool_id, [0, 0, 0, None, None])
        row[{"success": 0, "failure": 1, "caller_error": 2}[outcome_class(r.outcome)]] += 1
        if row[4] is None or r.time >= row[4]:
            row[3], row[4] = r.outcome, r.time
    return {t: OutcomeStats(t, s, f, c, last, when) for t, (s, f, c, last, when) in acc.items()}
