"""Plotting helpers shared by the benchmarks (matplotlib, Agg backend: files only, no display)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from rated.plotting import pyplot, save_png

__all__ = ["grouped_bars", "heatmap_grid", "success_curves"]


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
    import numpy as np

    plt = pyplot()
    methods = list(values)
    x = np.arange(len(methods))
    width = 0.8 / max(1, len(metrics))
    fig, ax = plt.subplots(figsize=(max(6.0, 1.2 * len(methods) + 2), 4.0))
    for j, metric in enumerate(metrics):
        heights = [values[m].get(metric, 0.0) for m in methods]
        yerr = None
        if errors is not None and any(metric in errors.get(m, {}) for m in methods):
            h = np.asarray(heights, dtype=float)
            bounds = [errors.get(m, {}).get(metric, (v, v)) for m, v in zip(methods, h, strict=True)]
            lo, hi = np.array(bounds, dtype=float).T
            yerr = np.array([h - lo, hi - h])
        ax.bar(x + (j - (len(metrics) - 1) / 2) * width, heights, width, label=metric, yerr=yerr, capsize=2)
    ax.set_xticks(x, methods, rotation=20, ha="right")
    ax.set_ylim(0, 1)
    ax.set_ylabel(ylabel)
    if title:
        ax.set_title(title)
    ax.legend(ncol=len(metrics), fontsize="small", loc="upper left")
    ax.grid(axis="y", alpha=0.3)
    return save_png(fig, path)


# ---- dynamic benchmark (engineer P) ------------------------------------------------------------------


def success_curves(
    steps: Sequence[float],
    curves: Mapping[str, Sequence[float]],
    path: str | Path,
    *,
    title: str = "",
    marks: Mapping[str, float] | None = None,
    ylabel: str = "success rate (trailing window)",
) -> Path:
    """One line per method over the stream (oracles dashed); ``marks`` draws labelled vertical lines
    (failure onset, recovery). Writes a PNG and returns its path."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(9.0, 4.8))
    colours = plt.get_cmap("tab20").colors
    for i, (label, values) in enumerate(curves.items()):
        style = "--" if label.startswith("oracle") else "-"
        width = 2.4 if label == "rated" else 1.2
        colour = "black" if label == "rated" else colours[(2 * i + i // 10) % len(colours)]
        ax.plot(list(steps)[: len(values)], list(values), style, lw=width, label=label, color=colour)
    for name, x in (marks or {}).items():
        ax.axvline(x, color="grey", lw=0.8, ls=":")
        ax.text(x, ax.get_ylim()[1], f" {name}", va="top", fontsize="small", color="grey")
    ax.set_xlabel("step")
    ax.set_ylabel(ylabel)
    if title:
        ax.set_title(title)
    ax.grid(alpha=0.3)
    if curves:
        ax.legend(fontsize="small", ncol=2, loc="lower left")
    return save_png(fig, path)


def heatmap_grid(
    panels: Sequence[tuple[str, Sequence[float], Sequence[float], Sequence[Sequence[float]]]],
    path: str | Path,
    *,
    xlabel: str,
    ylabel: str,
    title: str = "",
) -> Path:
    """Side-by-side heatmaps, one per ``(panel title, x values, y values, values[y][x])``, each cell
    annotated with its value. Writes a PNG and returns its path."""
    import numpy as np

    plt = pyplot()
    fig, axes = plt.subplots(1, len(panels), figsize=(4.6 * len(panels), 4.0), squeeze=False)
    for ax, (name, xs, ys, values) in zip(axes[0], panels, strict=True):
        grid = np.asarray(values, dtype=float)
        im = ax.imshow(grid, origin="lower", aspect="auto", cmap="viridis")
        ax.set_xticks(range(len(xs)), [f"{v:g}" for v in xs])
        ax.set_yticks(range(len(ys)), [f"{v:g}" for v in ys])
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        ax.set_title(name, fontsize="medium")
        for (i, j), v in np.ndenumerate(grid):
            ax.text(j, i, f"{v:.3f}", ha="center", va="center", fontsize="x-small", color="w")
        fig.colorbar(im, ax=ax, shrink=0.8)
    if title:
        fig.suptitle(title)
    return save_png(fig, path)
