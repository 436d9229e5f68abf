"""The two steps every rated plot shares: pyplot on the Agg backend, and writing the figure as a PNG.

Benchmark plots (``rated.bench.plots``) and catalog statistics (``rated.catalog.stats``) use them, so every
PNG is laid out, sized and freed the same way and matplotlib is imported only when something is plotted.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rated.errors import ConfigError

__all__ = ["pyplot", "save_png"]


def pyplot() -> Any:
    """``matplotlib.pyplot`` on the Agg backend (files only, no display), imported only when plotting."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def save_png(fig: Any, path: str | Path) -> Path:
    """Lay out, write ``fig`` as a PNG at ``path`` (creating its folder), free it and return the path."""
    import matplotlib.pyplot as plt

    fig.tight_layout()
    out = Path(path)
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(out, dpi=120, format="png")  # the path as given, even without a .png suffix
    except OSError as exc:  # a user-given path: one clear error, not a traceback
        raise ConfigError(f"{out}: cannot write the plot ({exc.strerror or exc})") from None
    finally:
        plt.close(fig)
    return out
