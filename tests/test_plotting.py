"""pyplot on Agg and save_png: a PNG in a new folder, the figure freed; the catalog plot goes through it."""

from __future__ import annotations

from pathlib import Path

from rated.catalog.schema import Tool
from rated.catalog.stats import plot_reliability
from rated.plotting import pyplot, save_png

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def test_save_png_writes_into_a_new_folder_and_frees_the_figure(tmp_path: Path) -> None:
    plt = pyplot()
    assert plt.get_backend().lower() == "agg"
    fig, ax = plt.subplots()
    ax.plot([0, 1], [1, 0])
    out = save_png(fig, tmp_path / "new" / "line.png")
    assert out == tmp_path / "new" / "line.png" and out.read_bytes()[:8] == PNG_MAGIC
    assert fig.number not in plt.get_fignums()


def test_plot_reliability_writes_a_png(tmp_path: Path) -> None:
    tools = [
        Tool(id=f"t{i}", name=f"t{i}", description="d", source=src, extra={"prior": {"r_static": r}})
        for i, (src, r) in enumerate([("a", 0.2), ("a", 0.9), ("b", 0.7)])
    ]
    out = plot_reliability(tools, tmp_path / "plots" / "reliability.png")
    assert out.read_bytes()[:8] == PNG_MAGIC
