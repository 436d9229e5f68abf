"""The dashboard's chart: outcomes over time, stacked by kind, as PNG bytes.

Per-minute bins over the last ``minutes`` when any outcome falls in them; otherwise (a quiet service) the
span of the records read, so the chart still shows the last traffic there was. Drawn on a pyplot-free
figure (``rated.plotting.figure``): requests render it in worker threads.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

import numpy as np

from rated.outcome import OutcomeKind
from rated.plotting import figure, png_bytes
from rated.store.base import OutcomeRecord

__all__ = ["COLORS", "outcomes_png"]

COLORS = {  # also the page's legend colours
    OutcomeKind.SUCCESS.value: "#2e7d32",
    OutcomeKind.TOOL_ERROR.value: "#c62828",
    OutcomeKind.TIMEOUT.value: "#ef6c00",
    OutcomeKind.RATE_LIMITED.value: "#8e24aa",
    OutcomeKind.AUTH_ERROR.value: "#6d4c41",
    OutcomeKind.CALLER_ERROR.value: "#9e9e9e",
    "other": "#37474f",  # a name the log holds but this version does not know
}
_MAX_BINS = 120
_SIZE = (10.0, 3.0)  # inches: about 1200 x 360 px at the helper's dpi, one laptop-wide row


def outcomes_png(
    records: Sequence[OutcomeRecord], now: float, minutes: int, *, capped: bool = False
) -> bytes:
    """``records`` (oldest first) as a stacked bar chart ending at ``now``; an empty chart with a note when
    there are none. ``capped``: the records are only the newest part of the log (said in the title)."""
    start = now - minutes * 60.0
    recent = [
        r for r in records if r.time >= start
    ]  # as the page counts them: a replica's clock may run ahead
    if recent or not records:
        lo, hi, bins = start, now, min(minutes, _MAX_BINS)
        title = f"outcomes per {_bin_label((hi - lo) / bins)}, last {minutes} min"
        shown = recent
    else:  # nothing in the window: the span of the last outcomes there were
        lo, hi = records[0].time, max(records[-1].time, records[0].time + 60.0)
        bins = min(max(int((hi - lo) // 60), 1), _MAX_BINS)
        per = _bin_label((hi - lo) / bins)
        title = f"last {len(records):,} outcomes (none in the last {minutes} min), per {per}"
        shown = list(records)
    if capped:
        title += f" (newest {len(records):,} read)"

    fig = figure(figsize=_SIZE)
    ax = fig.add_subplot()
    edges = np.linspace(lo, hi, bins + 1)
    width = (hi - lo) / bins
    bottom = np.zeros(bins)
    times = np.minimum([r.time for r in shown], hi) if shown else np.zeros(0)  # ahead of the clock: last bar
    kinds = np.array([_kind(r.outcome) for r in shown], dtype=object)
    for kind, color in COLORS.items():
        counts, _ = np.histogram(times[kinds == kind], bins=edges)
        if counts.any():
            ax.bar(edges[:-1], counts, width=width, bottom=bottom, align="edge", color=color, label=kind)
            bottom += counts
    if not shown:
        ax.text(0.5, 0.5, "no outcomes reported yet", ha="center", va="center", transform=ax.transAxes)
        ax.set_ylim(0, 1)
        ax.set_yticks([])
    else:
        ax.legend(loc="upper left", fontsize=8, ncols=4, frameon=False)
        ax.set_ylim(0, max(float(bottom.max()), 1.0) * 1.25)  # room for the legend
    ticks = np.linspace(lo, hi, 7)
    ax.set_xticks(ticks, [_clock(t, hi - lo) for t in ticks])
    ax.set_xlim(lo, hi)
    ax.set_xlabel("time (UTC)")
    ax.set_ylabel("outcomes")
    ax.set_title(title, fontsize=10)
    ax.spines[["top", "right"]].set_visible(False)
    return png_bytes(fig, dpi=100)


def _kind(name: str) -> str:
    return name if name in COLORS else "other"


def _bin_label(seconds: float) -> str:
    if abs(seconds - 60.0) < 1e-6:
        return "minute"
    return f"{seconds:.0f} s" if seconds < 120 else f"{seconds / 60:.0f} min"


def _clock(t: float, span: float) -> str:
    when = datetime.fromtimestamp(t, UTC)
    return when.strftime("%H:%M" if span <= 86_400 else "%m-%d %H:%M")
