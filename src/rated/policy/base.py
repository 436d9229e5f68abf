"""The one ``Policy`` protocol shared by the live retriever and the dynamic simulator.

A policy re-ranks the semantic top-K (``Candidates``) and learns from the execution outcome of the tool
that was actually called (``Feedback``). It never sees ground truth or which tools are down. Time is
injected (``now``): steps in the simulator, seconds in production, so that fading and cool-downs are
testable without sleeping.

Write a new policy by subclassing ``BasePolicy`` and implementing ``_score`` (read-only) and ``_learn``
(the one state change). Hyper-parameters are ``__init__`` arguments stored under the same names; learned
state lives in underscore attributes, so ``clone()`` rebuilds an untrained copy (river's convention).
"""

from __future__ import annotations

import abc
import inspect
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol, Self, runtime_checkable

import numpy as np

from rated.errors import ConfigError
from rated.outcome import Outcome

__all__ = ["BasePolicy", "Candidates", "Feedback", "Policy", "Ranking", "State", "all_finite"]

State = dict[str, np.ndarray]  # a policy's persisted state for one key: named float arrays


def all_finite(arr: np.ndarray) -> bool:
    """True when no entry is NaN or infinite: one reduction on the common path (a finite sum implies
    finite entries), the exact test only when the sum is not finite (NaN, inf, or overflow)."""
    return math.isfinite(np.add.reduce(arr, axis=None, dtype=np.float64)) or bool(np.isfinite(arr).all())


@dataclass(frozen=True)
class Candidates:
    """The semantic stage's top-K for one query: what a policy re-ranks.

    ``semantic`` is S_sem (higher is better, on a [0, 1]-like scale), ``prior`` is r_static in [0, 1],
    ``context`` the L2-normalised query embedding (None when the retriever is not dense).
    """

    tool_ids: tuple[str, ...]
    semantic: np.ndarray
    prior: np.ndarray
    providers: tuple[str, ...]
    context: np.ndarray | None = None
    now: float = 0.0

    def __post_init__(self) -> None:
        k = len(self.tool_ids)
        if k == 0:
            raise ConfigError("Candidates needs at least one tool")
        for name in ("semantic", "prior"):
            arr = np.asarray(getattr(self, name), dtype=np.float32)
            if arr.shape != (k,):
                raise ConfigError(f"Candidates.{name} must have shape ({k},), got {arr.shape}")
            if not all_finite(arr):
                raise ConfigError(f"Candidates.{name} contains NaN or infinite scores")
            object.__setattr__(self, name, arr)
        if len(self.providers) != k:
            raise ConfigError(f"Candidates.providers must have {k} entries, got {len(self.providers)}")
        if self.context is not None:
            ctx = np.asarray(self.context, dtype=np.float32).ravel()
            if not all_finite(ctx):
                raise ConfigError("Candidates.context contains NaN or infinite values")
            object.__setattr__(self, "context", ctx)

    @classmethod
    def _trusted(
        cls,
        tool_ids: tuple[str, ...],
        semantic: np.ndarray,
        prior: np.ndarray,
        providers: tuple[str, ...],
        context: np.ndarray | None,
        now: float,
    ) -> Candidates:
        """Without ``__post_init__``'s checks (about 6 us of the ~40 us that ``retrieve`` adds after its
        search), for arrays the caller made itself as they must be: float32 of shape ``(k,)`` (``context``
        1-d float32), finite. The retriever's search output, stored priors and checked query embedding
        are; a NaN that slipped through would still fail ``BasePolicy.rank``'s check of the scores."""
        candidates = object.__new__(cls)
        candidates.__dict__.update(
            tool_ids=tool_ids, semantic=semantic, prior=prior, providers=providers, context=context, now=now
        )
        return candidates

    def __len__(self) -> int:
        return len(self.tool_ids)


@dataclass(frozen=True)
class Ranking:
    """A policy's answer: ``order`` indexes into the candidates, best first.

    ``scores`` and every array in ``components`` are aligned with the *candidates* (not with ``order``).
    ``healthy`` is the policy's view of each candidate; ``degraded`` is True when no candidate looked
    healthy and the ranking was returned anyway (fail open).
    """

    order: np.ndarray
    scores: np.ndarray
    components: Mapping[str, np.ndarray] = field(default_factory=dict)
    healthy: np.ndarray | None = None
    degraded: bool = False


@dataclass(frozen=True)
class Feedback:
    """The outcome of executing ``tool_id`` for a query whose embedding is ``context``."""

    tool_id: str
    outcome: Outcome
    now: float = 0.0
    context: np.ndarray | None = None
    provider: str | None = None
    probe: bool = False  # a health probe no agent paid for, not a real call


@runtime_checkable
class Policy(Protocol):
    """What the retriever and the simulator need from any re-ranker."""

    name: str

    def rank(self, candidates: Candidates) -> Ranking: ...

    def learn(self, feedback: Feedback) -> None: ...

    def clone(self) -> Self: ...

    def state_keys(self, feedback: Feedback) -> list[str]: ...

    def get_state(self, key: str) -> State | None: ...

    def set_state(self, key: str, state: State | None) -> None: ...


class BasePolicy(abc.ABC):
    """Shared behaviour: input checks, ignoring caller errors, fail-open ranking, clone, state access."""

    name: ClassVar[str] = "base"
    attempts: ClassVar[int] = 1  # how many ranked tools an agent may try per step (retry baselines)
    uses_probes: ClassVar[bool] = False  # True when ``probe_targets`` may name tools to health-check
    #: False when ``_score`` already prices health in and the healthy mask only reports it (no grouping)
    health_orders: bool = True

    # ---- ranking -----------------------------------------------------------------------------------
    def rank(self, candidates: Candidates) -> Ranking:
        scores, components, healthy = self._score(candidates)
        scores = np.asarray(scores, dtype=np.float64)
        k = len(candidates)
        shape = (k,)
        if scores.shape != shape or not all_finite(scores):
            raise ConfigError(f"{type(self).__name__}._score returned invalid scores: {scores!r}")
        healthy_arr = np.ones(k, dtype=bool) if healthy is None else np.asarray(healthy, bool)
        if healthy_arr.shape != shape:
            raise ConfigError(
                f"{type(self).__name__}._score returned a healthy mask of shape {healthy_arr.shape} "
                f"for {k} candidates"
            )
        for name, values in components.items():  # getattr first: np.shape's dispatch costs ~0.3 us each
            if getattr(values, "shape", None) != shape and np.shape(values) != shape:
                raise ConfigError(
                    f"{type(self).__name__}._score returned component {name!r} of shape "
                    f"{np.shape(values)} for {k} candidates"
                )
        n_healthy = int(np.count_nonzero(healthy_arr))
        # healthy first, then by score; stable so that ties keep the semantic order
        if n_healthy in (0, k) or not self.health_orders:  # one group: a stable sort by score
            order = (-scores).argsort(kind="stable")
        else:
            order = np.lexsort((-scores, ~healthy_arr))
        return Ranking(
            order=order, scores=scores, components=components, healthy=healthy_arr, degraded=n_healthy == 0
        )

    @abc.abstractmethod
    def _score(self, candidates: Candidates) -> tuple[np.ndarray, dict[str, np.ndarray], np.ndarray | None]:
        """Return (final score per candidate, named score components, healthy mask or None)."""

    # ---- learning ----------------------------------------------------------------------------------
    def learn(self, feedback: Feedback) -> None:
        if not feedback.outcome.is_success and not feedback.outcome.counts_against_tool:
            return  # caller errors say nothing about the tool
        self._learn(feedback)

    def _learn(self, feedback: Feedback) -> None:  # noqa: B027 - a policy without feedback learns nothing
        """Update state from one tool-attributable outcome. The only method that changes state."""

    # ---- health probes: checks of demoted tools that no agent pays for (MCP ping, HTTP health) ------
    def probe_targets(self, now: float, budget: int) -> list[str]:
        """Up to ``budget`` tool ids this policy wants health-checked at ``now`` (most useful first).

        The caller runs the checks and reports each result through ``learn`` with ``Feedback(probe=True)``.
        Policies that do not use probes return an empty list.
        """
        return []

    # ---- persistence: a policy's state is a set of keyed States (one per tool, provider, ...) -------
    def state_keys(self, feedback: Feedback) -> list[str]:
        """The state keys that ``learn(feedback)`` may change (the store locks and rewrites them)."""
        return [feedback.tool_id]

    def get_state(self, key: str) -> State | None:
        return None

    def set_state(self, key: str, state: State | None) -> None:
        return None

    def all_state_keys(self) -> Sequence[str]:
        return ()

    # ---- cloning -----------------------------------------------------------------------------------
    def get_params(self) -> dict[str, Any]:
        sig = inspect.signature(type(self).__init__)
        return {n: getattr(self, n) for n in sig.parameters if n != "self" and hasattr(self, n)}

    def clone(self, **overrides: Any) -> Self:
        """A fresh, untrained copy with the same hyper-parameters (and any overrides)."""
        return type(self)(**{**self.get_params(), **overrides})

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.get_params().items())
        return f"{type(self).__name__}({args})"
