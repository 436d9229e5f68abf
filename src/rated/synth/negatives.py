"""Negatives for each synthetic query: hard ones mined with the current encoder, and random ones.

Hard negatives are the tools the encoder ranks highest for the query (within its top ``top``), never the
positive nor another listing of the same integration (same ``group``): the same Slack tool listed by
LangChain and by n8n is not a negative of itself. A candidate that scores almost as high as the positive
(above ``margin`` times the positive's score) is skipped too, since it is more often an unlabelled
duplicate than a true negative ("positive-aware" mining, as in NV-Retriever).
"""

from __future__ import annotations

import random
from collections.abc import Sequence

import numpy as np

from rated.catalog.schema import Tool
from rated.catalog.text import tool_text
from rated.encode.base import Encoder

__all__ = ["mine_hard_negatives", "sample_random_negatives"]


def mine_hard_negatives(
    queries: Sequence[str],
    positives: Sequence[str],
    tools: Sequence[Tool],
    encoder: Encoder,
    n: int = 1,
    *,
    top: int = 100,
    margin: float = 0.95,
    tool_vecs: np.ndarray | None = None,
    chunk: int = 2048,
) -> list[tuple[str, ...]]:
    """For each query (with positive tool id ``positives[i]``), up to ``n`` hard-negative tool ids.

    Candidates come from the encoder's top ``top`` tools, in rank order, excluding the positive's group and
    any tool whose score exceeds ``margin`` times the positive's score (``margin <= 0`` disables that guard).
    """
    if len(queries) != len(positives):
        raise ValueError("queries and positives differ in length")
    if n <= 0 or not queries:
        return [() for _ in queries]
    ids = [t.id for t in tools]
    pos_index = {tid: i for i, tid in enumerate(ids)}
    groups = [t.group or t.id for t in tools]
    if tool_vecs is None:
        tool_vecs = encoder.encode_tools([tool_text(t) for t in tools])
    top = min(top, len(tools))
    out: list[tuple[str, ...]] = []
    for start in range(0, len(queries), chunk):
        qv = encoder.encode_queries(list(queries[start : start + chunk]))
        scores = qv @ tool_vecs.T
        cand = np.argpartition(-scores, top - 1, axis=1)[:, :top]
        for row in range(cand.shape[0]):
            pid = positives[start + row]
            p = pos_index[pid]
            order = cand[row][np.argsort(-scores[row, cand[row]], kind="stable")]
            ceiling = margin * float(scores[row, p]) if margin > 0 and scores[row, p] > 0 else np.inf
            picked: list[str] = []
            for j in order:
                if groups[j] == groups[p] or scores[row, j] > ceiling:
                    continue
                picked.append(ids[j])
                if len(picked) == n:
                    break
            out.append(tuple(picked))
    return out


def sample_random_negatives(
    positives: Sequence[str],
    tools: Sequence[Tool],
    n: int = 1,
    *,
    exclude: Sequence[Sequence[str]] | None = None,
    seed: int = 0,
) -> list[tuple[str, ...]]:
    """For each positive tool id, ``n`` random tool ids outside its group (and outside ``exclude[i]``)."""
    if n <= 0:
        return [() for _ in positives]
    rng = random.Random(seed)
    ids = [t.id for t in tools]
    group_of = {t.id: t.group or t.id for t in tools}
    out: list[tuple[str, ...]] = []
    for i, pid in enumerate(positives):
        banned = set(exclude[i]) if exclude is not None else set()
        g = group_of[pid]
        picked: list[str] = []
        # rejection sampling: cheap because a group is a tiny part of the pool; bounded for tiny pools
        for _ in range(50 * n):
            cand = ids[rng.randrange(len(ids))]
            if group_of[cand] != g and cand not in banned and cand not in picked:
                picked.append(cand)
                if len(picked) == n:
                    break
        out.append(tuple(picked))
    return out
