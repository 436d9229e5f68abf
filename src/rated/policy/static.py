"""Re-rankers without feedback: the plain semantic ranking and RATED's fusion with ``w2 = 0``."""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from rated.errors import ConfigError
from rated.policy.base import BasePolicy, Candidates

__all__ = ["StaticPolicy"]


class StaticPolicy(BasePolicy):
    """``score = w_sem * S_sem + w_prior * r_static``; learns nothing.

    ``StaticPolicy()`` is the retriever's own order (``static``); ``StaticPolicy(0.75, 0.10)`` is RATED
    without feedback (``rated_no_feedback``): the paper's fusion with the bandit weight set to zero.

    >>> import numpy as np
    >>> c = Candidates(("a", "b"), np.array([0.5, 0.45]), np.array([0.2, 0.9]), ("a", "b"))
    >>> StaticPolicy().rank(c).order.tolist(), StaticPolicy(0.75, 0.10).rank(c).order.tolist()
    ([0, 1], [1, 0])
    """

    name: ClassVar[str] = "static"

    def __init__(self, w_sem: float = 1.0, w_prior: float = 0.0):
        if w_sem < 0 or w_prior < 0 or w_sem + w_prior <= 0:
            raise ConfigError(f"weights must be >= 0 and not both 0, got w_sem={w_sem}, w_prior={w_prior}")
        self.w_sem = float(w_sem)
        self.w_prior = float(w_prior)

    def _score(self, candidates: Candidates) -> tuple[np.ndarray, dict[str, np.ndarray], np.ndarray | None]:
        scores = self.w_sem * candidates.semantic + self.w_prior * candidates.prior
        return scores, {"semantic": candidates.semantic, "prior": candidates.prior}, None
