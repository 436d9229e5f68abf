"""When each tool fails: a list of failure episodes, plus caller-error rates.

An episode says: from ``start`` (inclusive) to ``end`` (exclusive), a call to ``tool`` fails with
probability ``p_fail`` (1 for an outage, less for a degraded tool) with error ``kind``; a rate limit with
``hint`` carries a retry-after equal to the time left in the episode, as a real 429 would. A *partial*
episode (``qset >= 0``) only hits the queries marked in ``query_masks[qset]`` (a tool that fails for
some kinds of request); a health probe, which carries no query, passes it. Overlapping
episodes (a tool outage during a provider outage) combine by the highest ``p_fail``. The oracle knows the
episodes (which tools are in the failing set at each step), never the coin flips.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from rated.outcome import Outcome, OutcomeKind

__all__ = ["KINDS", "Schedule"]

#: error kinds an episode can have, by code
KINDS = (OutcomeKind.TOOL_ERROR, OutcomeKind.TIMEOUT, OutcomeKind.RATE_LIMITED, OutcomeKind.AUTH_ERROR)
_SUCCESS = Outcome(OutcomeKind.SUCCESS)
_CALLER = Outcome(OutcomeKind.CALLER_ERROR)
_PLAIN = {k: Outcome(k) for k in KINDS}


@dataclass
class Schedule:
    """All failure episodes of one seed's run, with per-tool lookups."""

    n_tools: int
    steps: int
    tool: np.ndarray  # (E,) int64
    start: np.ndarray  # (E,) int64
    end: np.ndarray  # (E,) int64, exclusive
    p_fail: np.ndarray  # (E,) float64 in (0, 1]
    kind: np.ndarray  # (E,) int8, index into KINDS
    hint: np.ndarray  # (E,) bool: a rate limit that says when it ends
    caller_error: np.ndarray | None = None  # (n_tools,) P(caller error) per call, or None
    qset: np.ndarray | None = None  # (E,) int: -1 for every query, else an index into query_masks
    query_masks: list[np.ndarray] = field(default_factory=list)  # (n_queries,) bool each
    _by_tool: dict[int, list[int]] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        if self.qset is None:
            self.qset = np.full(len(self.tool), -1, dtype=np.int64)
        order = np.lexsort((self.start, self.tool))
        for name in ("tool", "start", "end", "p_fail", "kind", "hint", "qset"):
            setattr(self, name, np.asarray(getattr(self, name))[order])
        self._by_tool = {}
        for e, t in enumerate(self.tool.tolist()):
            self._by_tool.setdefault(t, []).append(e)

    @classmethod
    def empty(cls, n_tools: int, steps: int) -> Schedule:
        z = np.zeros(0, dtype=np.int64)
        return cls(n_tools, steps, z, z, z, np.zeros(0), np.zeros(0, dtype=np.int8), np.zeros(0, dtype=bool))

    @classmethod
    def concat(cls, parts: list[Schedule]) -> Schedule:
        """One schedule holding every episode of ``parts`` (same pool and length)."""
        first = parts[0]
        cat = {n: np.concatenate([getattr(p, n) for p in parts]) for n in ("tool", "start", "end", "p_fail")}
        masks: list[np.ndarray] = []
        qsets = []
        for p in parts:
            assert p.qset is not None
            qsets.append(np.where(p.qset >= 0, p.qset + len(masks), -1))
            masks.extend(p.query_masks)
        return cls(
            first.n_tools,
            first.steps,
            cat["tool"].astype(np.int64),
            cat["start"].astype(np.int64),
            cat["end"].astype(np.int64),
            cat["p_fail"].astype(np.float64),
            np.concatenate([p.kind for p in parts]).astype(np.int8),
            np.concatenate([p.hint for p in parts]).astype(bool),
            next((p.caller_error for p in parts if p.caller_error is not None), None),
            np.concatenate(qsets).astype(np.int64),
            masks,
        )

    def __len__(self) -> int:
        return len(self.tool)

    # ---- what a call sees --------------------------------------------------------------------------
    def episode_at(self, tool: int, t: int, query: int = -1) -> int:
        """Index of the episode governing ``tool`` at step ``t`` for ``query`` (-1: a probe, no query):
        the one with the highest p_fail, or -1 when the call would not fail."""
        qset = self.qset
        assert qset is not None  # __post_init__ fills it
        best, best_p = -1, 0.0
        for e in self._by_tool.get(tool, ()):
            if self.start[e] <= t < self.end[e] and self.p_fail[e] > best_p:
                q = qset[e]
                if q >= 0 and (query < 0 or not self.query_masks[q][query]):
                    continue
                best, best_p = e, float(self.p_fail[e])
        return best

    def call(
        self, tool: int, t: int, u_fail: float, u_caller: float, query: int = -1
    ) -> tuple[Outcome, bool]:
        """The outcome of calling ``tool`` at step ``t`` for ``query`` given two uniform draws; and whether
        it is a fault (a tool-side failure)."""
        e = self.episode_at(tool, t, query)
        if e >= 0 and u_fail < self.p_fail[e]:
            kind = KINDS[int(self.kind[e])]
            if kind is OutcomeKind.RATE_LIMITED and self.hint[e]:
                return Outcome(kind, retry_after=float(self.end[e] - t)), True
            return _PLAIN[kind], True
        if self.caller_error is not None and u_caller < self.caller_error[tool]:
            return _CALLER, False
        return _SUCCESS, False

    # ---- what the oracle knows ---------------------------------------------------------------------
    def failing_mask(self, positions: np.ndarray, queries: np.ndarray | None = None) -> np.ndarray:
        """``positions`` (T, K): tool indices at each step (for ``queries``, (T,)) -> (T, K) True where the
        tool is failing for that step's query."""
        qset = self.qset
        assert qset is not None  # __post_init__ fills it
        mask = np.zeros(positions.shape, dtype=bool)
        for e in range(len(self)):
            s, t_end = int(self.start[e]), min(int(self.end[e]), positions.shape[0])
            if s >= t_end:
                continue
            hit = positions[s:t_end] == self.tool[e]
            q = int(qset[e])
            if q >= 0:
                if queries is None:
                    continue
                hit &= self.query_masks[q][queries[s:t_end]][:, None]
            mask[s:t_end] |= hit
        return mask

    def down_fraction(self, tools: np.ndarray, t0: int = 0) -> float:
        """Mean over steps >= ``t0`` and over ``tools`` of being in the failing set (for the report)."""
        tools = np.unique(np.asarray(tools, dtype=np.int64))
        if len(tools) == 0 or t0 >= self.steps:
            return 0.0
        down = np.zeros((len(tools), self.steps - t0), dtype=bool)
        where = {int(t): i for i, t in enumerate(tools)}
        for e in range(len(self)):
            i = where.get(int(self.tool[e]))
            if i is not None:
                down[i, max(0, int(self.start[e]) - t0) : max(0, int(self.end[e]) - t0)] = True
        return float(down.mean())
