"""Plotting helpers shared by the benchmarks (matplotlib, Agg backend: files only, no display)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

__all__ = ["grouped_bars"]


def grouped_bars(
    values: Mapping[str, Mapping[str, float]],
    metrics: Sequence[str],
    path: str | Path,
    *,
    title: str = "",
    errors: Mapping[str, Mapping[str, tuple[float, float]]] | None = None,
    ylabel: str = "score",
) -> Path:
    """One group of bars per method, one bar per metric; ``errors[method][metric] = (lo, hi)`` draws a
    confidence interval. Writes a PNG and returns its path."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    methods = list(values)
    x = np.arange(len(methods))
    width = 0.8 / max(1, len(metrics))
    fig, ax = plt.subplots(figsize=(max(6.0, 1.2 * len(methods) + 2), 4.0))
    for j, metric in enumerate(metrics):
        heights = [values[m].get(metric, 0.0) for m in methods]
        yerr = None
        if errors is not None:
            lo = [
                heights[i] - errors.get(m, {}).get(metric, (heights[i], heights[i]))[0]
                for i, m in enumerate(methods)
            ]
            hi = [
                errors.get(m, {}).get(metric, (heights[i], heights[i]))[1] - heights[i]
                for i, m in enumerate(methods)
            ]
            yerr = np.array([lo, hi])
        ax.bar(x + (j - (len(metrics) - 1) / 2) * width, heights, width, label=metric, yerr=yerr, capsize=2)
    ax.set_xticks(x, methods, rotation=20, ha="right")
    ax.set_ylim(0, 1)
    ax.set_ylabel(ylabel)
    if title:
        ax.set_title(title)
    ax.legend(ncol=len(metrics), fontsize="small", loc="upper left")
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=120)
    plt.close(fig)
    return out
