"""Sliding-window breaker: opens when the failure rate over a tool's last calls crosses a threshold."""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from typing import ClassVar

import numpy as np

from rated.errors import ConfigError
from rated.policy.breaker import CircuitBreakerBase

__all__ = ["WindowBreakerPolicy"]


class WindowBreakerPolicy(CircuitBreakerBase):
    """resilience4j's count-based breaker: over the last ``window`` calls of a tool, once at least
    ``min_calls`` were made, open when the failure rate is at least ``threshold``.

    Open, half-open, back-off, retry-after and probes work as in ``CircuitBreakerPolicy``.

    >>> import numpy as np
    >>> from rated.outcome import Outcome
    >>> from rated.policy.base import Candidates, Feedback
    >>> p = WindowBreakerPolicy(window=4, min_calls=3, threshold=0.5, cooldown=10)
    >>> for t, kind in enumerate(["success", "tool_error", "tool_error"]):
    ...     p.learn(Feedback("a", Outcome.of(kind), now=float(t)))
    >>> c = Candidates(("a", "b"), np.array([0.9, 0.5]), np.zeros(2), ("a", "b"), now=3.0)
    >>> p.rank(c).order.tolist()
    [1, 0]
    """

    name: ClassVar[str] = "window_breaker"

    def __init__(
        self,
        window: int = 10,
        min_calls: int = 2,
        threshold: float = 0.5,
        cooldown: float = 800.0,
        backoff: float = 1.0,
        max_cooldown: float = 1e9,
        respect_retry_after: bool = False,
        w_prior: float = 0.0,
    ):
        if int(window) < 1 or not 1 <= int(min_calls) <= int(window) or not 0 < threshold <= 1:
            raise ConfigError(
                f"need window >= 1, 1 <= min_calls <= window, 0 < threshold <= 1; got {window}, {min_calls}, "
                f"{threshold}"
            )
        super().__init__(cooldown, backoff, max_cooldown, respect_retry_after, w_prior)
        self.window = int(window)
        self.min_calls = int(min_calls)
        self.threshold = float(threshold)
        self._calls: dict[str, deque[bool]] = {}  # tool -> last calls, True for a failure

    def _count(self, tool_id: str, failed: bool) -> bool:
        calls = self._calls.get(tool_id)
        if calls is None:
            calls = self._calls[tool_id] = deque(maxlen=self.window)
        calls.append(failed)
        return len(calls) >= self.min_calls and sum(calls) >= self.threshold * len(calls)

    def _reset_counts(self, tool_id: str) -> None:
        self._calls.pop(tool_id, None)

    def _counts_state(self, tool_id: str) -> np.ndarray | None:
        calls = self._calls.get(tool_id)
        return None if calls is None else np.array(calls, dtype=np.float64)

    def _set_counts_state(self, tool_id: str, counts: np.ndarray | None) -> None:
        self._calls.pop(tool_id, None)
        if counts is not None:
            values = np.asarray(counts, dtype=np.float64).ravel()[-self.window :]
            self._calls[tool_id] = deque((bool(v) for v in values), maxlen=self.window)

    def _count_keys(self) -> Sequence[str]:
        return list(self._calls)
