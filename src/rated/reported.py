"""The outcome an agent reports through an interface (HTTP, MCP, CLI): a name it chose, or the HTTP status
(and headers) its tool answered with, classified here so that the agent need not sort failures itself.

Classifying by hand is how learned health gets poisoned (a 400 of the agent's own arguments reported as
``tool_error``, a 429 as an outage); passing the status lets ``rated.classify`` decide by RFC 9110.
"""

from __future__ import annotations

from collections.abc import Mapping

from rated.classify import outcome_from_status
from rated.errors import ConfigError
from rated.outcome import Outcome, OutcomeKind, finite_seconds
from rated.shown import shown

__all__ = ["reported_outcome"]

_NAMES = ", ".join(kind.value for kind in OutcomeKind)
_SERVER_WAITS = frozenset({"retry-after", "retry-after-ms"})  # replaced by an explicit retry_after


def reported_outcome(
    outcome: str | None = None,
    *,
    status: int | None = None,
    headers: Mapping[str, str] | None = None,
    retry_after: float | None = None,
) -> Outcome:
    """The ``Outcome`` to record: from ``outcome`` (a name) or from ``status``, exactly one of them.

    With ``status``, ``headers`` (the tool's response headers) supply the rate-limit hint of a 429 or a
    503 (``rated.retry_after``) and show a 403 rate limit. An explicit ``retry_after`` (seconds) stands for
    the tool's ``Retry-After`` and replaces the hints of ``headers``: the status is classified as if the
    tool had named a wait (above 0: a 503 is then ``rate_limited``; 0: an outage), and a ``rate_limited``
    outcome records exactly ``retry_after``. ``headers`` go with ``status`` only. ``ConfigError`` for
    anything else, before anything is recorded.
    """
    if outcome is not None and status is not None:
        raise ConfigError(
            "give either outcome (a name) or status (the tool's HTTP status), not both: "
            "status is classified into an outcome"
        )
    seconds = None if retry_after is None else finite_seconds(retry_after)
    if retry_after is not None and seconds is None:
        raise ConfigError(f"retry_after must be a finite number of seconds >= 0, got {shown(retry_after)}")
    if status is None:
        if headers is not None:
            raise ConfigError(
                "headers are read only with status (the tool's HTTP status); "
                "with an outcome name, give the rate-limit hint as retry_after (seconds)"
            )
        if outcome is None:
            raise ConfigError(
                "give outcome (how the call went: "
                f"{_NAMES}) or status (the HTTP status the tool answered with)"
            )
        return Outcome(OutcomeKind.parse(outcome), seconds)
    if seconds is None:
        return outcome_from_status(status, headers)
    # classified as if the tool's own Retry-After had named a wait of that sign; the wait recorded is the
    # caller's number as given (no header heuristics: it is seconds already)
    probe = {name: value for name, value in (headers or {}).items() if not _names_a_wait(name)}
    probe["retry-after"] = "1" if seconds > 0 else "0"
    classified = outcome_from_status(status, probe)
    if classified.kind is OutcomeKind.RATE_LIMITED:
        return Outcome(classified.kind, seconds, classified.status)
    return classified


def _names_a_wait(name: object) -> bool:
    return isinstance(name, str) and name.strip().lower() in _SERVER_WAITS
