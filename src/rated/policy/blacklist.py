"""Health-check blacklist: a tool is excluded for good after its first tool-side failure."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

import numpy as np

from rated.policy.base import BasePolicy, Candidates, Feedback, State

__all__ = ["BlacklistPolicy"]


class BlacklistPolicy(BasePolicy):
    """The semantic order with every tool that ever failed moved to the back (fail open when all did).

    It never re-admits a tool: close to the oracle while an outage lasts, below the static ranking once
    the tools come back.

    >>> import numpy as np
    >>> from rated.outcome import Outcome
    >>> p = BlacklistPolicy()
    >>> p.learn(Feedback("a", Outcome.of("timeout"), now=1.0))
    >>> c = Candidates(("a", "b"), np.array([0.9, 0.1]), np.zeros(2), ("a", "b"))
    >>> p.rank(c).order.tolist()
    [1, 0]
    """

    name: ClassVar[str] = "blacklist"

    def __init__(self) -> None:
        self._banned: dict[str, float] = {}  # tool id -> time of the failure that banned it

    def _score(self, candidates: Candidates) -> tuple[np.ndarray, dict[str, np.ndarray], np.ndarray | None]:
        banned = self._banned
        healthy = np.fromiter((t not in banned for t in candidates.tool_ids), bool, len(candidates))
        return candidates.semantic, {"semantic": candidates.semantic}, healthy

    def _learn(self, feedback: Feedback) -> None:
        if not feedback.outcome.is_success:
            self._banned.setdefault(feedback.tool_id, feedback.now)

    def get_state(self, key: str) -> State | None:
        if key not in self._banned:
            return None
        return {"banned_at": np.array([self._banned[key]], dtype=np.float64)}

    def set_state(self, key: str, state: State | None) -> None:
        if state is None:
            self._banned.pop(key, None)
        else:
            self._banned[key] = float(np.asarray(state["banned_at"]).ravel()[0])

    def all_state_keys(self) -> Sequence[str]:
        return list(self._banned)
