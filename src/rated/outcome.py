"""Execution outcomes an agent reports back, and which of them count against a tool."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from enum import StrEnum
from numbers import Integral, Real

from rated.errors import ConfigError
from rated.shown import shown

__all__ = ["Outcome", "OutcomeKind", "finite_seconds"]


class OutcomeKind(StrEnum):
    """What happened when the agent called the tool."""

    SUCCESS = "success"
    TOOL_ERROR = "tool_error"  # the tool (server) failed: 5xx, exception inside the tool
    TIMEOUT = "timeout"  # no answer in time: often transient
    RATE_LIMITED = "rate_limited"  # 429 and friends; usually comes with a retry-after hint
    AUTH_ERROR = "auth_error"  # the tool's credentials are rejected: lasts until someone fixes them
    CALLER_ERROR = "caller_error"  # bad arguments from the agent: never the tool's fault

    @property
    def is_success(self) -> bool:
        return self is OutcomeKind.SUCCESS

    @property
    def counts_against_tool(self) -> bool:
        """True for failures that say something about the tool's health."""
        return self not in (OutcomeKind.SUCCESS, OutcomeKind.CALLER_ERROR)

    @classmethod
    def parse(cls, value: OutcomeKind | str) -> OutcomeKind:
        """Parse a user-given name (case-insensitive) with an error that lists the allowed names."""
        if isinstance(value, OutcomeKind):
            return value
        try:
            return cls(str(value).strip().lower())
        except Exception:  # ValueError: no such name; anything else: a value whose str() fails
            allowed = ", ".join(k.value for k in cls)
            raise ConfigError(f"unknown outcome {shown(value)}; expected one of: {allowed}") from None


def finite_seconds(value: object) -> float | None:
    """``value`` as a plain float when it is a real number, finite and >= 0 (numpy scalars too); else None.
    An int too large for a float is not finite here: converting it would raise ``OverflowError``."""
    if isinstance(value, bool) or not isinstance(value, Real):
        return None
    try:
        seconds = float(value)
    except (OverflowError, ValueError):
        return None
    return seconds if math.isfinite(seconds) and seconds >= 0 else None


@dataclass(frozen=True)
class Outcome:
    """One execution result. ``retry_after`` (seconds or steps, in the policy's clock) is a hint.

    ``status``: the HTTP status the outcome was classified from, when one was (``outcome_from_status``,
    an exception carrying a response). It says where the outcome came from, not what it is: two outcomes
    of one kind are equal whatever their statuses. A 404 or 410 ``caller_error`` is the evidence of a
    retired endpoint (``rated.retired``)."""

    kind: OutcomeKind
    retry_after: float | None = None
    status: int | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        if not isinstance(self.kind, OutcomeKind):
            object.__setattr__(self, "kind", OutcomeKind.parse(self.kind))
        value = self.retry_after
        if value is not None:
            seconds = finite_seconds(value)
            if seconds is None:
                raise ConfigError(f"retry_after must be a finite number >= 0, got {shown(value)}")
            object.__setattr__(self, "retry_after", seconds)  # plain float: stores and JSON take it
        status = self.status
        if status is not None:
            if isinstance(status, bool) or not isinstance(status, Integral) or not 100 <= status <= 599:
                raise ConfigError(f"status must be an HTTP status (an integer 100-599), got {shown(status)}")
            object.__setattr__(self, "status", int(status))

    @classmethod
    def of(cls, value: Outcome | OutcomeKind | str | bool, retry_after: float | None = None) -> Outcome:
        """Coerce the forms users pass (``"tool_error"``, ``True``/``False``, an ``OutcomeKind``)."""
        if isinstance(value, Outcome):
            return value
        if isinstance(value, bool):
            return cls(OutcomeKind.SUCCESS if value else OutcomeKind.TOOL_ERROR, retry_after)
        return cls(OutcomeKind.parse(value), retry_after)

    @property
    def is_success(self) -> bool:
        return self.kind.is_success

    @property
    def counts_against_tool(self) -> bool:
        return self.kind.counts_against_tool
