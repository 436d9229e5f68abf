"""Sensitivity sweeps of RATED (the paper's Figure 4), on validation seeds only.

Three 2-D grids, each cell a full run of ``rated`` (other settings at their defaults or as given):
``fusion`` (w1 x w3, with w2 = 1 - w1 - w3 as in the paper), ``bandit`` (gamma x alpha) and ``fading``
(the evidence half-life x the base recovery half-life of a tool error). Each cell reports mean Post-Fail
SR and FSR over the validation seeds; the PNG shows both as heatmaps.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rated.bench.dynamic.runner import MethodSpec, Prepared
from rated.bench.dynamic.tuning import tune

__all__ = ["SWEEPS", "Sweep", "run_sweeps", "sweep_plot"]


@dataclass(frozen=True)
class Sweep:
    name: str
    x: str
    xs: tuple[float, ...]
    y: str
    ys: tuple[float, ...]

    def points(self) -> list[dict[str, float]]:
        out = []
        for yv in self.ys:
            for xv in self.xs:
                p = {self.x: xv, self.y: yv}
                if self.name == "fusion":
                    p["w2"] = round(1.0 - xv - yv, 6)
                    if p["w2"] < 0:
                        continue
                out.append(p)
        return out


SWEEPS: Mapping[str, Sweep] = {
    "fusion": Sweep("fusion", "w1", (0.6, 0.65, 0.7, 0.75, 0.8, 0.85), "w3", (0.0, 0.05, 0.1, 0.15)),
    "bandit": Sweep("bandit", "gamma", (0.8, 0.9, 0.95, 0.99), "alpha", (0.0, 0.05, 0.1, 0.2)),
    "fading": Sweep(
        "fading",
        "half_life",
        (500.0, 1000.0, 2000.0, 4000.0, 8000.0),
        "recover_tool_error",
        (100.0, 200.0, 400.0, 800.0, 1600.0),
    ),
}


def run_sweeps(
    prep: Prepared,
    retriever: str,
    names: Sequence[str] = tuple(SWEEPS),
    base_params: Mapping[str, Any] | None = None,
    *,
    jobs: int = 1,
    on_progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Every cell of the named sweeps on the prepared (validation) seeds."""
    out: dict[str, Any] = {}
    for name in names:
        sw = SWEEPS[name]
        base = MethodSpec("rated", "rated", retriever, dict(base_params or {}))
        res = tune(prep, base, sw.points(), jobs=jobs, on_progress=on_progress)
        cells = {(t["params"][sw.x], t["params"][sw.y]): t for t in res.tried}
        out[name] = {
            "x": sw.x,
            "xs": list(sw.xs),
            "y": sw.y,
            "ys": list(sw.ys),
            "post_fail_sr": _grid(cells, sw, "post_fail_sr"),
            "fsr": _grid(cells, sw, "fsr"),
            "best": {"params": res.params, "post_fail_sr": res.post_fail_sr, "fsr": res.fsr},
        }
    return out


def _grid(cells: Mapping[tuple[float, float], Mapping[str, Any]], sw: Sweep, key: str) -> list[list[float]]:
    """``values[y][x]`` (NaN where the grid skips a cell)."""
    return [[float(cells[(x, y)][key]) if (x, y) in cells else float("nan") for x in sw.xs] for y in sw.ys]


def sweep_plot(results: Mapping[str, Any], out_dir: str | Path, title: str = "") -> list[Path]:
    """One PNG per sweep: Post-Fail SR and FSR heatmaps side by side."""
    from rated.bench.plots import heatmap_grid

    paths = []
    for name, r in results.items():
        panels = [("Post-Fail SR", r["xs"], r["ys"], r["post_fail_sr"]), ("FSR", r["xs"], r["ys"], r["fsr"])]
        paths.append(
            heatmap_grid(
                panels,
                Path(out_dir) / f"sweep-{name}.png",
                xlabel=r["x"],
                ylabel=r["y"],
                title=f"{title} {name}".strip(),
            )
        )
    return paths
