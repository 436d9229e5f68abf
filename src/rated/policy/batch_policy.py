"""A learned re-ranker refreshed only every ``batch`` clock units (the paper's ToolRL-like batch baseline).

Same model as ``GlobalMABPolicy``, but an outcome observed at time ``t`` only reaches the ranking at the
next batch boundary ``(floor(t / batch) + 1) * batch``: the policy is retrained periodically from the
outcomes logged since the last refresh instead of after every call, as a GRPO-style trainer would be.
Outcomes are kept per tool until their boundary passes, so the state stays keyed by tool.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import ClassVar

import numpy as np

from rated.errors import ConfigError
from rated.policy.base import Feedback, State
from rated.policy.global_mab import GlobalMABPolicy, apply_outcome, success_value

__all__ = ["BatchPolicy"]


class BatchPolicy(GlobalMABPolicy):
    """``GlobalMABPolicy`` whose estimates are refreshed at multiples of ``batch``.

    >>> import numpy as np
    >>> from rated.outcome import Outcome
    >>> from rated.policy.base import Candidates
    >>> p = BatchPolicy(batch=100, w_mab=0.5)
    >>> p.learn(Feedback("a", Outcome.of("tool_error"), now=10.0))
    >>> c = lambda now: Candidates(("a", "b"), np.array([0.6, 0.5]), np.full(2, 0.8), ("a", "b"), now=now)
    >>> p.rank(c(50.0)).order.tolist(), p.rank(c(100.0)).order.tolist()
    ([0, 1], [1, 0])
    """

    name: ClassVar[str] = "batch_policy"

    def __init__(
        self,
        batch: float = 200.0,
        w_sem: float = 0.75,
        w_mab: float = 0.15,
        w_prior: float = 0.10,
        gamma: float = 0.95,
        prior_strength: float = 1.0,
        alpha: float = 0.1,
        half_life: float = math.inf,
        prior_weight: float = 0.0,
    ):
        if batch <= 0:
            raise ConfigError(f"batch must be > 0, got {batch}")
        super().__init__(w_sem, w_mab, w_prior, gamma, prior_strength, alpha, half_life, prior_weight)
        self.batch = float(batch)
        self._pending: dict[str, list[tuple[float, float]]] = {}  # tool -> [(time, y)] not yet visible

    def _visible_from(self, t: float) -> float:
        return (math.floor(t / self.batch) + 1.0) * self.batch

    def _current(self, tool_id: str, now: float) -> tuple[float, float, float] | None:
        counts = self._counts.get(tool_id)
        for t, y in self._pending.get(tool_id, ()):
            if self._visible_from(t) > now:
                break
            counts = apply_outcome(counts, t, y, self.gamma, self.half_life)
        return counts

    def _learn(self, feedback: Feedback) -> None:
        tool, now = feedback.tool_id, feedback.now
        pending = self._pending.setdefault(tool, [])
        while pending and self._visible_from(pending[0][0]) <= now:  # fold what a refresh already applied
            self._record(tool, *pending.pop(0))
        pending.append((now, success_value(feedback)))

    def get_state(self, key: str) -> State | None:
        state = super().get_state(key) or {}
        pending = self._pending.get(key)
        if pending:
            state["pending"] = np.array(pending, dtype=np.float64).reshape(-1, 2)
        return state or None

    def set_state(self, key: str, state: State | None) -> None:
        self._pending.pop(key, None)
        if state is not None and "counts" not in state:
            self._counts.pop(key, None)
        else:
            super().set_state(key, state)
        if state is not None and "pending" in state:
            rows = np.asarray(state["pending"], dtype=np.float64).reshape(-1, 2)
            self._pending[key] = [(float(t), float(y)) for t, y in rows]

    def all_state_keys(self) -> Sequence[str]:
        return sorted(set(self._counts) | {k for k, v in self._pending.items() if v})
