"""The paper's re-ranker exactly as written (for ablations): disjoint diagonal LinUCB, no fixes.

Per tool ``A`` (starts at 1) and ``b`` (starts at ``r_static / sqrt(d)``, the paper's prior injection);
``S_bandit = theta.x + alpha * sqrt(sum(x*x / A))`` with ``theta = b / A``; after the selected tool runs,
``A <- gamma*A + x*x`` and ``b <- gamma*b + y*x`` with ``y`` 1 for success, 0 otherwise. Fused as
``w1*S_sem + w2*S_bandit + w3*r_static``. No bound on ``S_bandit``, no time fading, no health gate: this is
what paper-notes section 2 says goes wrong (popularity lock-in, no recovery), kept so the benchmark can
show it. Without a query embedding the context is the constant ``1/sqrt(d)`` vector.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import ClassVar

import numpy as np

from rated.errors import ConfigError
from rated.policy.base import BasePolicy, Candidates, Feedback, State

__all__ = ["PaperLinUCBPolicy"]


class PaperLinUCBPolicy(BasePolicy):
    """Diagonal LinUCB as in the paper (section 3.3), with its defaults.

    >>> import numpy as np
    >>> from rated.outcome import Outcome
    >>> p = PaperLinUCBPolicy()
    >>> x = np.full(4, 0.5, dtype=np.float32)
    >>> c = Candidates(("a", "b"), np.array([0.62, 0.60]), np.full(2, 0.8), ("a", "b"), x, 0.0)
    >>> for t in range(30):
    ...     p.learn(Feedback("b", Outcome.of("success"), float(t), x))
    >>> p.rank(c).order.tolist()  # successes of b swamp the semantic score: lock-in
    [1, 0]
    """

    name: ClassVar[str] = "linucb_paper"

    def __init__(
        self, w1: float = 0.75, w2: float = 0.15, w3: float = 0.10, alpha: float = 0.1, gamma: float = 0.95
    ):
        if min(w1, w2, w3, alpha) < 0 or not 0 < gamma <= 1:
            raise ConfigError(
                f"need weights and alpha >= 0 and 0 < gamma <= 1, got {w1}, {w2}, {w3}, {alpha}, {gamma}"
            )
        self.w1, self.w2, self.w3, self.alpha, self.gamma = (
            float(w1),
            float(w2),
            float(w3),
            float(alpha),
            float(gamma),
        )
        self._A: dict[str, np.ndarray] = {}
        self._b: dict[str, np.ndarray] = {}
        self._prior: dict[str, float] = {}

    @staticmethod
    def _x(context: np.ndarray | None, dim: int | None) -> np.ndarray:
        if context is not None:
            return np.asarray(context, dtype=np.float64)
        d = dim or 1
        return np.full(d, 1.0 / math.sqrt(d))

    def _score(self, candidates: Candidates) -> tuple[np.ndarray, dict[str, np.ndarray], np.ndarray | None]:
        dim = next((len(a) for a in self._A.values()), None)
        x = self._x(candidates.context, dim)
        bandit = np.empty(len(candidates))
        for i, tool in enumerate(candidates.tool_ids):
            A = self._A.get(tool)
            if A is None or len(A) != len(x):
                A = np.ones(len(x))
                b = np.full(len(x), float(candidates.prior[i]) / math.sqrt(len(x)))
            else:
                b = self._b[tool]
            bandit[i] = float((b / A) @ x) + self.alpha * math.sqrt(float((x * x / A).sum()))
        scores = self.w1 * candidates.semantic + self.w2 * bandit + self.w3 * candidates.prior
        return scores, {"semantic": candidates.semantic, "bandit": bandit, "prior": candidates.prior}, None

    def _learn(self, feedback: Feedback) -> None:
        tool = feedback.tool_id
        dim = len(self._A[tool]) if tool in self._A else next((len(a) for a in self._A.values()), None)
        x = self._x(feedback.context, dim)
        if tool not in self._A:
            # the prior r_static is not in the feedback: the first update starts from a neutral 0.5
            self._A[tool] = np.ones(len(x))
            self._b[tool] = np.full(len(x), 0.5 / math.sqrt(len(x)))
        y = 1.0 if feedback.outcome.is_success else 0.0
        self._A[tool] = self.gamma * self._A[tool] + x * x
        self._b[tool] = self.gamma * self._b[tool] + y * x

    def get_state(self, key: str) -> State | None:
        if key not in self._A:
            return None
        return {"A": self._A[key].copy(), "b": self._b[key].copy()}

    def set_state(self, key: str, state: State | None) -> None:
        if state is None:
            self._A.pop(key, None)
            self._b.pop(key, None)
        else:
            self._A[key] = np.asarray(state["A"], dtype=np.float64).copy()
            self._b[key] = np.asarray(state["b"], dtype=np.float64).copy()

    def all_state_keys(self) -> Sequence[str]:
        return list(self._A)
