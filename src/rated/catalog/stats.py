"""Catalog statistics: per-source counts, auth types, defect rates and the reliability distribution.

Reads the ``extra["prior"]`` / ``extra["defects"]`` annotations ``rated catalog build`` writes; tools
without them are scored here (prior with the given encoder, defects always).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from rated.catalog.collect.build import annotate
from rated.catalog.defects import Defect
from rated.catalog.prior import RELIABLE_THRESHOLD
from rated.catalog.schema import Tool
from rated.encode.base import Encoder
from rated.plotting import pyplot, save_png

__all__ = ["catalog_stats", "ensure_annotated", "plot_reliability"]


def ensure_annotated(tools: Sequence[Tool], encoder: Encoder | None) -> list[Tool]:
    """Tools with prior and defects; re-scores the whole catalog when any tool lacks them."""
    if all("defects" in t.extra and "prior" in t.extra for t in tools):
        return list(tools)
    if encoder is None and all("defects" in t.extra for t in tools):
        return list(tools)
    annotated, _ = annotate(tools, encoder)
    return annotated


def catalog_stats(tools: Sequence[Tool]) -> dict[str, Any]:
    """One row per source plus an ``all`` row: counts, auth types, defect rates, r_static quantiles."""
    rows: dict[str, Any] = {}
    by_source: dict[str, list[Tool]] = {}
    for t in tools:
        by_source.setdefault(t.source, []).append(t)
    for name, group in [*sorted(by_source.items()), ("all", list(tools))]:
        n = len(group)
        defects = Counter(code for t in group for code in t.extra.get("defects", []))
        r = np.array([t.extra["prior"]["r_static"] for t in group if "prior" in t.extra], dtype=np.float64)
        row: dict[str, Any] = {
            "tools": n,
            "auth": dict(Counter(t.auth.type.value for t in group).most_common()),
            "with_endpoint": round(sum(1 for t in group if t.endpoint) / n, 4),
            "in_group": round(sum(1 for t in group if t.group) / n, 4),
            "defect_rate": {d.value: round(defects[d.value] / n, 4) for d in Defect},
            "any_defect": round(sum(1 for t in group if t.extra.get("defects")) / n, 4),
        }
        if len(r):
            row["r_static"] = {
                "mean": round(float(r.mean()), 4),
                "p10": round(float(np.quantile(r, 0.1)), 4),
                "median": round(float(np.median(r)), 4),
                "p90": round(float(np.quantile(r, 0.9)), 4),
            }
            row["reliable"] = round(float((r >= RELIABLE_THRESHOLD).mean()), 4)
        rows[name] = row
    return rows


def plot_reliability(tools: Sequence[Tool], path: str | Path) -> Path:
    """A PNG with one r_static histogram per source (threshold marked)."""
    plt = pyplot()

    by_source: dict[str, list[float]] = {}
    for t in tools:
        if "prior" in t.extra:
            by_source.setdefault(t.source, []).append(float(t.extra["prior"]["r_static"]))
    names = sorted(by_source)
    cols = min(3, max(1, len(names)))
    rows = max(1, -(-len(names) // cols))
    fig, axes = plt.subplots(rows, cols, figsize=(3.6 * cols, 2.8 * rows), squeeze=False)
    axes = axes.ravel()
    for ax in axes[len(names) :]:
        ax.set_visible(False)
    bins = np.linspace(0.0, 1.0, 41)
    for ax, name in zip(axes, names, strict=False):
        values = np.array(by_source[name])
        ax.hist(values, bins=bins, color="#4c72b0")
        ax.axvline(RELIABLE_THRESHOLD, color="#c44e52", linestyle="--", linewidth=1)
        ax.set_title(
            f"{name} (n={len(values)}, {100 * (values >= RELIABLE_THRESHOLD).mean():.0f}% reliable)",
            fontsize=8,
        )
        ax.set_xlabel("r_static", fontsize=8)
        ax.tick_params(labelsize=7)
    fig.suptitle("Static reliability prior per source", fontsize=10)
    return save_png(fig, path)
