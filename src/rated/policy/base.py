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


def _floats(values: object, k: int) -> list[float] | None:
    """``values`` as ``k`` plain floats, or None when they are not ``k`` numbers."""
    try:
        if type(values) is list:  # a policy's plain-float path (RATED's): no array to make
            return list(map(float, values)) if len(values) == k else None
        arr = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError):
        return None
    return arr.tolist() if arr.shape == (k,) else None


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
        for name, values in (("semantic", self.semantic), ("prior", self.prior)):
            arr = np.asarray(values, dtype=np.float32)
            if arr.shape != (k,):
                raise ConfigError(f"Candidates.{name} must have shape ({k},), got {arr.shape}")
            # a float64 sum of K float32 values cannot overflow: finite exactly when every value is; on
            # a short array the sum of its plain floats skips a NumPy reduction (~1 us)
            if not (math.isfinite(sum(arr.tolist())) if k <= 64 else all_finite(arr)):
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
        are; a NaN that slipped through would still fail ``BasePolicy``'s check of the scores."""
        candidates = object.__new__(cls)
        fields = {
            "tool_ids": tool_ids,
            "semantic": semantic,
            "prior": prior,
            "providers": providers,
            "context": context,
            "now": now,
        }
        object.__setattr__(candidates, "__dict__", fields)
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

    @classmethod
    def _fast(cls, fields: dict[str, Any]) -> Ranking:
        """A ranking whose ``__dict__`` is ``fields`` (every field by name; not checked), without the frozen
        ``__init__``'s per-field ``object.__setattr__`` (about 1 us of a RATED ranking's 15-30)."""
        ranking = object.__new__(cls)
        object.__setattr__(ranking, "__dict__", fields)
        return ranking


#: a ``Ranking`` in plain Python values (``BasePolicy._ranked``): ``order``, ``scores`` (floats),
#: ``components`` (as ``_score`` returned them: arrays or lists of floats), ``healthy`` (bools), ``degraded``;
#: a tuple, not a NamedTuple, whose construction costs about 1 us on the retriever's latency-critical path
PlainRanking = tuple[list[int], list[float], Mapping[str, Any], list[bool], bool]


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

    @property
    def name(self) -> str:
        """The policy's registry name (a class variable of ``BasePolicy``: read-only here, so it fits)."""
        ...

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
        order, scores, components, healthy, degraded = self._ranked(candidates)
        return Ranking._fast(
            {
                "order": np.array(order, dtype=np.intp),
                "scores": np.array(scores, dtype=np.float64),
                "components": {name: np.asarray(values) for name, values in components.items()},
                "healthy": np.array(healthy, dtype=bool),
                "degraded": degraded,
            }
        )

    def _ranked(self, candidates: Candidates) -> PlainRanking:
        """``rank`` in plain Python values: what the retriever turns into hits (a ``Ranking``'s arrays
        would cost it a NumPy round trip for each). ``_score``'s output is checked here."""
        scores, components, healthy = self._score(candidates)
        k = len(candidates.tool_ids)
        if type(scores) is list and len(scores) == k:  # _floats' plain-list path, without its call
            try:
                values: list[float] | None = list(map(float, scores))
            except (TypeError, ValueError):
                values = None
        else:
            values = _floats(scores, k)
        if values is None or not (math.isfinite(sum(values)) or all(map(math.isfinite, values))):
            raise ConfigError(f"{type(self).__name__}._score returned invalid scores: {scores!r}")
        if healthy is None:
            mask = [True] * k
        elif type(healthy) is list and len(healthy) == k:
            mask = list(map(bool, healthy))
        else:
            arr = np.asarray(healthy, bool)
            if arr.shape != (k,):
                raise ConfigError(
                    f"{type(self).__name__}._score returned a healthy mask of shape {arr.shape} "
                    f"for {k} candidates"
                )
            mask = arr.tolist()
        shape = (k,)
        for key, column in components.items():  # getattr first: np.shape's dispatch costs ~0.3 us each
            if (len(column) == k) if type(column) is list else (getattr(column, "shape", None) == shape):
                continue
            if np.shape(column) != shape:
                raise ConfigError(
                    f"{type(self).__name__}._score returned component {key!r} of shape {np.shape(column)} "
                    f"for {k} candidates"
                )
        # healthy first, then by score; Python's sort is stable (with reverse=True too), so that ties keep
        # the semantic order, and faster than NumPy's on K = 10
        order = sorted(range(k), key=values.__getitem__, reverse=True)
        n_healthy = mask.count(True)
        if 0 < n_healthy < k and self.health_orders:
            order.sort(key=mask.__getitem__, reverse=True)  # healthy first, each group still by score
        return order, values, components, mask, n_healthy == 0

    @abc.abstractmethod
    def _score(self, candidates: Candidates) -> tuple[Any, Mapping[str, Any], Any]:
        """Return (final score per candidate, named score components, healthy mask or None): arrays of
        shape (K,), or lists of K plain floats (bools for the mask), which spare the retriever's hits a
        NumPy round trip."""

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
