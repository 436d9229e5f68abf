"""What ``Retriever`` returns: one ``Hit`` per retrieved tool, one ``ToolHealth`` per catalog tool."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from rated.catalog.schema import Tool
from rated.store.base import OutcomeStats

if TYPE_CHECKING:
    from rated.retired import RetiredStatus

__all__ = ["Hit", "ToolHealth"]


@dataclass(frozen=True)
class Hit:
    """One retrieved tool. ``score`` is the policy's final score; the components explain it.

    ``healthy`` is the policy's view of the tool; ``degraded`` is True for every hit of a ranking in which no
    candidate looked healthy (fail open: the list is returned anyway, best first).
    """

    tool: Tool
    score: float
    semantic: float
    prior: float
    bandit: float | None
    healthy: bool
    degraded: bool
    rank: int
    components: Mapping[str, float] = field(default_factory=dict)

    @property
    def id(self) -> str:
        return self.tool.id

    def to_dict(self) -> dict[str, Any]:
        return {
            "rank": self.rank,
            "id": self.tool.id,
            "name": self.tool.name,
            "description": self.tool.description,
            "score": self.score,
            "semantic": self.semantic,
            "bandit": self.bandit,
            "prior": self.prior,
            "healthy": self.healthy,
            "degraded": self.degraded,
            "components": dict(self.components),
        }


@dataclass(frozen=True)
class ToolHealth:
    """A tool with the policy's current view of it and its outcome counts (``Retriever.tools``), and its run
    of 404/410s when it has one (``retired``: ``rated.retired.with_status`` fills it in)."""

    tool: Tool
    prior: float
    healthy: bool
    stats: OutcomeStats | None
    components: Mapping[str, float] = field(default_factory=dict)
    retired: RetiredStatus | None = None

    def to_dict(self) -> dict[str, Any]:
        """Its fields as ``GET /tools`` lists them: ``retired`` only for a tool with a run (no null)."""
        s = self.stats
        row: dict[str, Any] = {
            "id": self.tool.id,
            "name": self.tool.name,
            "source": self.tool.source,
            "prior": self.prior,
            "healthy": self.healthy,
            "successes": s.successes if s else 0,
            "failures": s.failures if s else 0,
            "caller_errors": s.caller_errors if s else 0,
            "last_outcome": s.last_outcome if s else None,
            "last_time": s.last_time if s else None,
            "components": dict(self.components),
        }
        if self.retired is not None:
            row["retired"] = self.retired.to_dict()
        return row
