"""Circuit breakers: a tool is skipped while its circuit is open, then re-tried (half-open) after a cool-down.

``CircuitBreakerPolicy`` opens after ``failure_threshold`` consecutive tool-side failures (Envoy outlier
detection's ``consecutive_5xx``, resilience4j's count-based breaker with a window of N). The open period
is ``cooldown`` clock units, multiplied by ``backoff`` for each re-open without a success in between (Envoy
multiplies its ``base_ejection_time`` by the number of ejections), capped at ``max_cooldown``. After it,
the next call is a half-open trial: a success closes the circuit, a failure re-opens it at once. With
``respect_retry_after`` a rate limit that carries a retry-after hint opens the circuit for exactly that
long (what LiteLLM's cooldowns do with 429s). When health probes are offered, open tools are probed: a
passing probe closes the circuit, a failing one re-opens it (Envoy's active health checking).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import ClassVar

import numpy as np

from rated.errors import ConfigError
from rated.outcome import OutcomeKind
from rated.policy.base import BasePolicy, Candidates, Feedback, State

__all__ = ["CircuitBreakerBase", "CircuitBreakerPolicy"]

_CLOSED = -math.inf


class CircuitBreakerBase(BasePolicy):
    """Open / half-open / closed bookkeeping shared by the breakers; subclasses decide when to trip."""

    uses_probes: ClassVar[bool] = True

    def __init__(
        self,
        cooldown: float = 800.0,
        backoff: float = 1.0,
        max_cooldown: float = 1e9,
        respect_retry_after: bool = False,
        w_prior: float = 0.0,
    ):
        if cooldown <= 0 or backoff < 1 or max_cooldown < cooldown or w_prior < 0:
            raise ConfigError(
                f"need cooldown > 0, backoff >= 1, max_cooldown >= cooldown, w_prior >= 0; got {cooldown}, "
                f"{backoff}, {max_cooldown}, {w_prior}"
            )
        self.cooldown = float(cooldown)
        self.backoff = float(backoff)
        self.max_cooldown = float(max_cooldown)
        self.respect_retry_after = bool(respect_retry_after)
        self.w_prior = float(w_prior)  # > 0: rank by 0.75 S_sem + w_prior r_static (0.10: RATED static order)
        self._open_until: dict[str, float] = {}  # tool -> end of the open period (absent: closed)
        self._opens: dict[str, int] = {}  # tool -> re-opens since the last success
        self._checked: dict[str, float] = {}  # tool -> last time anything was observed

    # ---- what subclasses write ---------------------------------------------------------------------
    def _count(self, tool_id: str, failed: bool) -> bool:  # pragma: no cover - abstract in spirit
        """Record one outcome in the trip statistics; return True when they say: open the circuit."""
        raise NotImplementedError

    def _reset_counts(self, tool_id: str) -> None:  # pragma: no cover
        raise NotImplementedError

    def _counts_state(self, tool_id: str) -> np.ndarray | None:  # pragma: no cover
        raise NotImplementedError

    def _set_counts_state(self, tool_id: str, counts: np.ndarray | None) -> None:  # pragma: no cover
        raise NotImplementedError

    # ---- ranking -----------------------------------------------------------------------------------
    def _score(self, candidates: Candidates) -> tuple[np.ndarray, dict[str, np.ndarray], np.ndarray | None]:
        now, until = candidates.now, self._open_until
        healthy = np.fromiter(
            (until.get(t, _CLOSED) <= now for t in candidates.tool_ids), bool, len(candidates)
        )
        scores = candidates.semantic
        if self.w_prior:
            scores = 0.75 * scores + self.w_prior * candidates.prior
        return scores, {"semantic": candidates.semantic}, healthy

    # ---- learning ----------------------------------------------------------------------------------
    def _learn(self, feedback: Feedback) -> None:
        tool, now, outcome = feedback.tool_id, feedback.now, feedback.outcome
        self._checked[tool] = now
        if outcome.is_success:
            if tool in self._opens or tool in self._open_until:  # a passing trial or probe closes it
                self._reset_counts(tool)
                self._open_until.pop(tool, None)
                self._opens.pop(tool, None)
            else:
                self._count(tool, failed=False)
            return
        if (
            self.respect_retry_after
            and outcome.kind is OutcomeKind.RATE_LIMITED
            and outcome.retry_after is not None
        ):
            self._open_until[tool] = max(self._open_until.get(tool, _CLOSED), now + outcome.retry_after)
            return
        tripped = self._count(tool, failed=True)
        if tripped or tool in self._opens:  # trip, or a failed half-open trial / probe: (re-)open
            n = self._opens.get(tool, 0) + 1
            self._opens[tool] = n
            wait = min(self.max_cooldown, self.cooldown * self.backoff ** (n - 1))
            self._open_until[tool] = max(self._open_until.get(tool, _CLOSED), now + wait)

    def probe_targets(self, now: float, budget: int) -> list[str]:
        open_now = [t for t, u in self._open_until.items() if u > now]
        open_now.sort(key=lambda t: self._checked.get(t, _CLOSED))
        return open_now[: max(0, int(budget))]

    # ---- persistence -------------------------------------------------------------------------------
    def get_state(self, key: str) -> State | None:
        counts = self._counts_state(key)
        if key not in self._open_until and key not in self._opens and counts is None:
            return None
        circuit = [
            self._open_until.get(key, _CLOSED),
            self._opens.get(key, 0),
            self._checked.get(key, _CLOSED),
        ]
        state = {"circuit": np.array(circuit, dtype=np.float64)}
        if counts is not None:
            state["counts"] = np.asarray(counts, dtype=np.float64)
        return state

    def set_state(self, key: str, state: State | None) -> None:
        for d in (self._open_until, self._opens, self._checked):
            d.pop(key, None)
        self._set_counts_state(key, None if state is None else state.get("counts"))
        if state is None:
            return
        until, opens, checked = (float(v) for v in np.asarray(state["circuit"], dtype=np.float64).ravel()[:3])
        if until > _CLOSED:
            self._open_until[key] = until
        if opens > 0:
            self._opens[key] = int(opens)
        if checked > _CLOSED:
            self._checked[key] = checked

    def all_state_keys(self) -> Sequence[str]:
        return sorted(set(self._open_until) | set(self._opens) | set(self._count_keys()))

    def _count_keys(self) -> Sequence[str]:  # pragma: no cover
        raise NotImplementedError


class CircuitBreakerPolicy(CircuitBreakerBase):
    """Opens after ``failure_threshold`` consecutive tool-side failures.

    >>> import numpy as np
    >>> from rated.outcome import Outcome
    >>> p = CircuitBreakerPolicy(failure_threshold=2, cooldown=10)
    >>> c = lambda now: Candidates(("a", "b"), np.array([0.9, 0.5]), np.zeros(2), ("a", "b"), now=now)
    >>> for t in (1.0, 2.0): p.learn(Feedback("a", Outcome.of("tool_error"), now=t))
    >>> p.rank(c(3.0)).order.tolist(), p.rank(c(13.0)).order.tolist()  # open, then half-open
    ([1, 0], [0, 1])
    """

    name: ClassVar[str] = "breaker"

    def __init__(
        self,
        failure_threshold: int = 1,
        cooldown: float = 800.0,
        backoff: float = 1.0,
        max_cooldown: float = 1e9,
        respect_retry_after: bool = False,
        w_prior: float = 0.0,
    ):
        if int(failure_threshold) < 1:
            raise ConfigError(f"failure_threshold must be >= 1, got {failure_threshold}")
        super().__init__(cooldown, backoff, max_cooldown, respect_retry_after, w_prior)
        self.failure_threshold = int(failure_threshold)
        self._fails: dict[str, int] = {}

    def _count(self, tool_id: str, failed: bool) -> bool:
        if not failed:
            self._fails.pop(tool_id, None)
            return False
        n = self._fails.get(tool_id, 0) + 1
        self._fails[tool_id] = n
        return n >= self.failure_threshold

    def _reset_counts(self, tool_id: str) -> None:
        self._fails.pop(tool_id, None)

    def _counts_state(self, tool_id: str) -> np.ndarray | None:
        n = self._fails.get(tool_id)
        return None if n is None else np.array([n], dtype=np.float64)

    def _set_counts_state(self, tool_id: str, counts: np.ndarray | None) -> None:
        self._fails.pop(tool_id, None)
        if counts is not None:
            self._fails[tool_id] = int(np.asarray(counts).ravel()[0])

    def _count_keys(self) -> Sequence[str]:
        return list(self._fails)
