"""Global MAB: one context-free, discounted success estimate per tool, fused like RATED's bandit score.

The paper's "RATED (w/ Global MAB)" ablation: ``w_sem*S_sem + w_mab*min(1, mean + bonus) + w_prior*r_static``
where ``mean`` is a Beta posterior mean ``(s + n0*m0) / (s + f + n0)`` over discounted counts (each
update multiplies the old counts by ``gamma``; with a finite ``half_life`` they also fade with time) and
``bonus = alpha / sqrt(n0 + s + f)`` is a UCB optimism term. No health gate: demotion is only as strong
as ``w_mab`` makes it.

The prior mean is ``m0 = 1 - prior_weight * (1 - r_static)``, as in RATED. With ``prior_weight = 0`` (the
default, RATED's too) a tool nobody has reported on scores 1, so only failures move the estimate. With
``prior_weight = 1`` (``m0 = r_static``, the only form before the benchmark audit) an unobserved tool scores
about ``r_static``, while one success lifts a tool to about 1. That is a popularity lock-in: the first tool
that was called and worked then outranks better matches for every other query, even when nothing is down.
RATED avoids it on purpose (docs/dynamic-benchmark.md, section 4), so the baseline must be able to avoid it
too. Both values are in the tuning grid.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import ClassVar

import numpy as np

from rated.errors import ConfigError
from rated.policy.base import BasePolicy, Candidates, Feedback, State

__all__ = ["GlobalMABPolicy", "apply_outcome", "faded", "success_value"]


def faded(counts: tuple[float, float, float], now: float, half_life: float) -> tuple[float, float]:
    """The success and failure counts of ``(t_last, s, f)`` as they stand at ``now``, after fading."""
    t_last, s, f = counts
    if math.isfinite(half_life) and now > t_last:
        fade = 0.5 ** ((now - t_last) / half_life)
        s, f = s * fade, f * fade
    return s, f


def apply_outcome(
    counts: tuple[float, float, float] | None, now: float, y: float, gamma: float, half_life: float
) -> tuple[float, float, float]:
    """Fold one outcome (``y`` 1 for success, 0 for failure) into ``(t_last, s, f)`` (None: none yet)."""
    counts = counts or (now, 0.0, 0.0)
    s, f = faded(counts, now, half_life)
    return (max(now, counts[0]), gamma * s + y, gamma * f + (1.0 - y))


def success_value(feedback: Feedback) -> float:
    """1.0 for a success, 0.0 for a failure that counts against the tool."""
    return 1.0 if feedback.outcome.is_success else 0.0


class GlobalMABPolicy(BasePolicy):
    """Per-tool Beta estimate of the success rate, added to the semantic score with weight ``w_mab``.

    >>> import numpy as np
    >>> from rated.outcome import Outcome
    >>> p = GlobalMABPolicy(w_mab=0.5)
    >>> p.learn(Feedback("a", Outcome.of("tool_error"), now=1.0))
    >>> c = Candidates(("a", "b"), np.array([0.6, 0.5]), np.full(2, 0.8), ("a", "b"), now=2.0)
    >>> p.rank(c).order.tolist()
    [1, 0]
    """

    name: ClassVar[str] = "global_mab"

    def __init__(
        self,
        w_sem: float = 0.75,
        w_mab: float = 0.15,
        w_prior: float = 0.10,
        gamma: float = 0.95,
        prior_strength: float = 1.0,
        alpha: float = 0.1,
        half_life: float = math.inf,
        prior_weight: float = 0.0,
    ):
        if (
            min(w_sem, w_mab, w_prior, alpha) < 0
            or not 0 < gamma <= 1
            or prior_strength <= 0
            or half_life <= 0
            or not 0 <= prior_weight <= 1
        ):
            raise ConfigError(
                "need weights and alpha >= 0, 0 < gamma <= 1, prior_strength > 0, half_life > 0, "
                f"0 <= prior_weight <= 1; got {w_sem}, {w_mab}, {w_prior}, alpha={alpha}, gamma={gamma}, "
                f"prior_strength={prior_strength}, half_life={half_life}, prior_weight={prior_weight}"
            )
        self.w_sem = float(w_sem)
        self.w_mab = float(w_mab)
        self.w_prior = float(w_prior)
        self.gamma = float(gamma)
        self.prior_strength = float(prior_strength)
        self.alpha = float(alpha)
        self.half_life = float(half_life)
        self.prior_weight = float(prior_weight)
        self._counts: dict[str, tuple[float, float, float]] = {}  # tool -> (t_last, s, f)

    def _current(self, tool_id: str, now: float) -> tuple[float, float, float] | None:
        """The counts as they stand at ``now`` (subclasses add outcomes not yet folded in)."""
        return self._counts.get(tool_id)

    def _score(self, candidates: Candidates) -> tuple[np.ndarray, dict[str, np.ndarray], np.ndarray | None]:
        now, n0, hl = candidates.now, self.prior_strength, self.half_life
        prior = candidates.prior
        # prior mean of the success rate: 1 for every tool at the default prior_weight 0 (no array work)
        m0 = (
            (1.0 - self.prior_weight * (1.0 - prior.astype(np.float64))).tolist()
            if self.prior_weight
            else None
        )
        est = np.empty(len(candidates))
        for i, tool in enumerate(candidates.tool_ids):
            c = self._current(tool, now)
            s, f = (0.0, 0.0) if c is None else faded(c, now, hl)
            mean = (s + n0 * (m0[i] if m0 else 1.0)) / (s + f + n0)
            est[i] = min(1.0, mean + self.alpha / math.sqrt(n0 + s + f))
        scores = self.w_sem * candidates.semantic + self.w_mab * est + self.w_prior * prior
        return scores, {"semantic": candidates.semantic, "mab": est, "prior": prior}, None

    def _learn(self, feedback: Feedback) -> None:
        self._record(feedback.tool_id, feedback.now, success_value(feedback))

    def _record(self, tool_id: str, now: float, y: float) -> None:
        """Fold one outcome observed at ``now`` into the tool's stored counts."""
        self._counts[tool_id] = apply_outcome(self._counts.get(tool_id), now, y, self.gamma, self.half_life)

    def get_state(self, key: str) -> State | None:
        c = self._counts.get(key)
        return None if c is None else {"counts": np.array(c, dtype=np.float64)}

    def set_state(self, key: str, state: State | None) -> None:
        if state is None:
            self._counts.pop(key, None)
        else:
            t, s, f = (float(v) for v in np.asarray(state["counts"], dtype=np.float64).ravel()[:3])
            self._counts[key] = (t, s, f)

    def all_state_keys(self) -> Sequence[str]:
        return list(self._counts)
