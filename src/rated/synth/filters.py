"""Filters that keep a synthetic query only when it is a usable training example.

Text rules from the paper: 5 to 120 words, no near-duplicates (word-set Jaccard above 0.7), no verbatim
copy of the tool's description. Plus a consistency filter (round-trip check, as in Promptagator): the
current encoder must rank the query's tool, or a listing of the same integration (its ``group``), in its
top ``k``, which drops queries the LLM wrote about something else.

>>> round(jaccard("send an email to Bob", "send Bob an email"), 2)
0.8
>>> dedupe(["send an email to Bob", "send Bob an email", "what is the weather in Rome"])
['send an email to Bob', 'what is the weather in Rome']
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np

from rated.catalog.schema import Tool
from rated.catalog.text import tool_text
from rated.encode.base import Encoder

__all__ = [
    "MAX_WORDS",
    "MIN_WORDS",
    "consistency_mask",
    "copies_description",
    "dedupe",
    "jaccard",
    "length_ok",
    "words",
]

MIN_WORDS = 5
MAX_WORDS = 120
_WORD = re.compile(r"\w+", re.UNICODE)


def words(text: str) -> list[str]:
    """Lower-cased word tokens."""
    return _WORD.findall(text.lower())


def length_ok(text: str, min_words: int = MIN_WORDS, max_words: int = MAX_WORDS) -> bool:
    """Whether ``text`` has between ``min_words`` and ``max_words`` words (inclusive)."""
    return min_words <= len(words(text)) <= max_words


def jaccard(a: str, b: str) -> float:
    """Jaccard similarity of the two texts' word sets (0 when both are empty)."""
    sa, sb = set(words(a)), set(words(b))
    union = sa | sb
    return len(sa & sb) / len(union) if union else 0.0


def dedupe(texts: Sequence[str], threshold: float = 0.7) -> list[str]:
    """Keep each text unless its word-set Jaccard with an already kept one is above ``threshold``."""
    kept: list[str] = []
    kept_sets: list[set[str]] = []
    for text in texts:
        s = set(words(text))
        if any(len(s & k) / max(len(s | k), 1) > threshold for k in kept_sets):
            continue
        kept.append(text)
        kept_sets.append(s)
    return kept


def copies_description(query: str, description: str, span: int = 8, threshold: float = 0.7) -> bool:
    """True when ``query`` repeats ``span`` consecutive words of ``description`` or is a near-copy of it.

    A near-copy is a word-set Jaccard above ``threshold`` with the whole description; it catches short
    descriptions that a long span cannot.
    """
    dw = words(description)
    if not dw:
        return False
    qw = words(query)
    if jaccard(query, description) > threshold:
        return True
    if len(dw) < span or len(qw) < span:
        return False
    desc_spans = {tuple(dw[i : i + span]) for i in range(len(dw) - span + 1)}
    return any(tuple(qw[i : i + span]) in desc_spans for i in range(len(qw) - span + 1))


def _topk(scores: np.ndarray, k: int) -> np.ndarray:
    k = min(k, scores.shape[1])
    part = np.argpartition(-scores, k - 1, axis=1)[:, :k]
    return part


def consistency_mask(
    queries: Sequence[str],
    query_groups: Sequence[str],
    tools: Sequence[Tool],
    encoder: Encoder,
    k: int = 20,
    *,
    tool_vecs: np.ndarray | None = None,
    chunk: int = 2048,
) -> np.ndarray:
    """Boolean mask: True where ``encoder`` ranks a tool of the query's group among its top ``k`` tools.

    ``query_groups[i]`` is the group key of query ``i``'s positive tool (``tool.group or tool.id``).
    ``tool_vecs`` may be passed to reuse already computed tool embeddings.
    """
    if len(queries) != len(query_groups):
        raise ValueError("queries and query_groups differ in length")
    if k < 1:
        raise ValueError(f"k must be at least 1, got {k}")
    if not queries:
        return np.zeros(0, dtype=bool)
    if tool_vecs is None:
        tool_vecs = encoder.encode_tools([tool_text(t) for t in tools])
    tool_groups = np.array([t.group or t.id for t in tools], dtype=object)
    keep = np.zeros(len(queries), dtype=bool)
    for start in range(0, len(queries), chunk):
        qv = encoder.encode_queries(list(queries[start : start + chunk]))
        top = _topk(qv @ tool_vecs.T, k)
        for row, idx in enumerate(top):
            keep[start + row] = query_groups[start + row] in set(tool_groups[idx])
    return keep
