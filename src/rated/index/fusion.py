"""Fusion of score arrays from several retrievers over one pool, as small pure functions.

Every function takes full score arrays (one value per tool, aligned with the pool) or ranked position
lists, and returns a score array on the same positions. ``top_k`` turns any score array into a ranking.

>>> dense = np.array([0.9, 0.5, 0.1], dtype=np.float32)
>>> lexical = np.array([0.0, 4.0, 2.0], dtype=np.float32)
>>> [round(float(x), 2) for x in convex(dense, normalise(lexical, "max"), 0.5)]
[0.45, 0.75, 0.3]
>>> rrf([np.array([0, 1, 2]), np.array([1, 2, 0])], n=3, k=60).argmax()
np.int64(1)
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from rated.errors import ConfigError

__all__ = ["NORMALISERS", "convex", "normalise", "ranks", "rrf", "top_k"]

NORMALISERS = ("none", "max", "minmax", "bound")


def normalise(scores: np.ndarray, method: str, bound: float | None = None) -> np.ndarray:
    """Map one query's scores to about [0, 1].

    ``none``: unchanged (for scores already on [0, 1], like a cosine); ``max``: divided by the best score;
    ``minmax``: ``(s - min) / (max - min)``; ``bound``: divided by ``bound`` (a score no tool can exceed,
    e.g. ``BM25Index.score_bound``). All-zero or constant inputs give zeros rather than NaN.
    """
    s = np.asarray(scores, dtype=np.float32)
    if method == "none":
        return s
    if s.size == 0:
        return s
    if method == "max":
        top = float(s.max())
        return s / top if top > 0 else np.zeros_like(s)
    if method == "minmax":
        lo, hi = float(s.min()), float(s.max())
        return (s - lo) / (hi - lo) if hi > lo else np.zeros_like(s)
    if method == "bound":
        if bound is None:
            raise ConfigError("normalise(method='bound') needs the score bound")
        return np.clip(s / bound, 0.0, 1.0) if bound > 0 else np.zeros_like(s)
    raise ConfigError(f"unknown normalisation {method!r}; expected one of {', '.join(NORMALISERS)}")


def convex(a: np.ndarray, b: np.ndarray, weight_a: float) -> np.ndarray:
    """``weight_a * a + (1 - weight_a) * b``: the convex combination of two normalised score arrays."""
    if not 0.0 <= weight_a <= 1.0:
        raise ConfigError(f"fusion weight must lie in [0, 1], got {weight_a}")
    fused = weight_a * np.asarray(a, dtype=np.float32) + (1.0 - weight_a) * np.asarray(b, dtype=np.float32)
    return fused.astype(np.float32)


def ranks(scores: np.ndarray) -> np.ndarray:
    """Rank of each position under ``scores`` (0 = best; ties broken by position)."""
    order = np.argsort(-np.asarray(scores), kind="stable")
    out = np.empty(len(order), dtype=np.int64)
    out[order] = np.arange(len(order))
    return out


def rrf(
    rankings: Sequence[np.ndarray], n: int, k: int = 60, weights: Sequence[float] | None = None
) -> np.ndarray:
    """Reciprocal-rank fusion: ``sum_i w_i / (k + rank_i + 1)`` per position, divided by its maximum
    ``sum_i w_i / (k + 1)`` so a tool ranked first everywhere scores 1. Each ranking is a best-first array
    of positions (possibly a truncated list); positions absent from a list get nothing from it."""
    w = [1.0] * len(rankings) if weights is None else list(weights)
    if len(w) != len(rankings):
        raise ConfigError(f"{len(rankings)} rankings but {len(w)} weights")
    out = np.zeros(n, dtype=np.float64)
    for ranking, wi in zip(rankings, w, strict=True):
        pos = np.asarray(ranking, dtype=np.int64)
        out[pos] += wi / (k + 1.0 + np.arange(len(pos)))
    total = sum(w) / (k + 1.0)
    return (out / total if total > 0 else out).astype(np.float32)


def top_k(scores: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The ``k`` best positions (int64, best first, ties by position) and their scores (float32)."""
    s = np.asarray(scores, dtype=np.float32)
    k = max(0, min(int(k), len(s)))
    if k == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
    n = len(s)
    neg = -s  # ascending in neg is best first, with NaN last as in a sort
    if k < n:
        # every position scoring at least the k-th best score (argpartition would keep an arbitrary subset
        # of the scores tied at the cut, not the lowest positions); partition is also faster than it
        kth = np.partition(neg, k - 1)[k - 1]
        if kth == kth:
            cand = np.flatnonzero(neg <= kth)
            if len(cand) > 4 * k + 256:  # many ties at the cut: keep only the lowest positions among them
                tied = neg[cand] == kth
                cand = np.concatenate((cand[~tied], cand[tied][: k - (len(cand) - int(tied.sum()))]))
        else:  # NaN at the cut (fewer than k numbers): the first NaN positions fill up
            nan = np.isnan(neg)
            cand = np.concatenate((np.flatnonzero(~nan), np.flatnonzero(nan)[: k - int(n - nan.sum())]))
    else:
        cand = np.arange(n)
    # exact tie-breaking by position: lexsort on (position, -score), then the cut
    cand = cand[np.lexsort((cand, neg[cand]))][:k]
    return cand.astype(np.int64), s[cand]
