"""The semantic-stage variants compared on validation splits, and the rule that picks the default.

Rule: among the fused variants, keep the one whose worst gain over the best single baseline (TF-IDF, BM25
or dense MRR) across the benchmarks is largest; ties go to the higher mean MRR. Only validation splits are
used (``rated bench offline --split val --ablation``), never test.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TypedDict

from rated.catalog.text import DEFAULT_TEXT, TextConfig
from rated.index.semantic import SemanticConfig

__all__ = ["BASELINES", "VARIANTS", "ablation_table", "select_default"]


class _LexicalSide(TypedDict):
    """The ``SemanticConfig`` keywords that name a variant's lexical side."""

    lexical: str
    lexical_norm: str


PLAIN_TEXT = TextConfig(parameters=False, provider=False, tags=False)
# every variant names its lexical side in full, so a change of the default cannot change a row
BM25_MAX: _LexicalSide = {"lexical": "bm25", "lexical_norm": "max"}
TFIDF: _LexicalSide = {"lexical": "tfidf", "lexical_norm": "none"}
BASELINES = ("dense", "bm25", "tfidf")

VARIANTS: dict[str, tuple[SemanticConfig, TextConfig]] = {
    "dense (name+description text)": (SemanticConfig(dense_weight=1.0, lexical="none"), PLAIN_TEXT),
    "dense": (SemanticConfig(dense_weight=1.0, lexical="none"), DEFAULT_TEXT),
    "bm25": (SemanticConfig(dense_weight=0.0, **BM25_MAX), DEFAULT_TEXT),
    "tfidf": (SemanticConfig(dense_weight=0.0, lexical="tfidf", lexical_norm="none"), DEFAULT_TEXT),
    **{
        f"dense+bm25 convex max-norm w={w}": (SemanticConfig(dense_weight=w, **BM25_MAX), DEFAULT_TEXT)
        for w in (0.5, 0.7, 0.8, 0.9)
    },
    **{
        f"dense+bm25 convex bound-norm w={w}": (
            SemanticConfig(dense_weight=w, lexical="bm25", lexical_norm="bound"),
            DEFAULT_TEXT,
        )
        for w in (0.3, 0.5, 0.7)
    },
    **{
        f"dense+tfidf convex w={w}": (
            SemanticConfig(dense_weight=w, lexical="tfidf", lexical_norm="none"),
            DEFAULT_TEXT,
        )
        for w in (0.3, 0.4, 0.45, 0.5, 0.55, 0.6, 0.7)
    },
    "dense+tfidf convex w=0.5, no stemming": (
        SemanticConfig(dense_weight=0.5, lexical="tfidf", lexical_norm="none", stem=False),
        DEFAULT_TEXT,
    ),
    "dense+tfidf convex w=0.5, name+description text": (
        SemanticConfig(dense_weight=0.5, lexical="tfidf", lexical_norm="none"),
        PLAIN_TEXT,
    ),
    **{
        f"dense+bm25 RRF w={w}": (SemanticConfig(dense_weight=w, fusion="rrf", **BM25_MAX), DEFAULT_TEXT)
        for w in (0.5, 0.7)
    },
}


def select_default(results: Mapping[str, Mapping[str, Mapping[str, float]]]) -> str:
    """The fused variant with the largest worst-case MRR gain over each benchmark's best baseline."""
    best_base = {ds: max(r[b]["mrr"] for b in BASELINES if b in r) for ds, r in results.items()}
    fused = [v for v in next(iter(results.values())) if v not in BASELINES and not v.startswith("dense (")]

    def key(v: str) -> tuple[float, float]:
        gains = [results[ds][v]["mrr"] - best_base[ds] for ds in results]
        return min(gains), sum(results[ds][v]["mrr"] for ds in results) / len(results)

    return max(fused, key=key)


def ablation_table(results: Mapping[str, Mapping[str, Mapping[str, float]]]) -> str:
    """Markdown: one row per variant, MRR per benchmark (and its gain over the best baseline)."""
    datasets = list(results)
    best_base = {ds: max(r[b]["mrr"] for b in BASELINES if b in r) for ds, r in results.items()}
    lines = ["| variant | " + " | ".join(datasets) + " |", "|---|" + "---|" * len(datasets)]
    for v in next(iter(results.values())):
        cells = [
            f"{results[ds][v]['mrr']:.3f} ({results[ds][v]['mrr'] - best_base[ds]:+.3f})" for ds in datasets
        ]
        lines.append(f"| {v} | " + " | ".join(cells) + " |")
    return "\n".join(lines)
