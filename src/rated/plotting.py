"""The two steps every rated plot shares: pyplot on the Agg backend, and writing the figure as a PNG.

Benchmark plots (``rated.bench.plots``) and catalog statistics (``rated.catalog.stats``) use them, so every
PNG is laid out, sized and freed the same way and matplotlib is imported only when something is plotted.
The service dashboard draws per request, in worker threads: ``figure`` and ``png_bytes`` serve it.
"""

from __future__ import annotations

from io import BytesIO
from pathlib import Path
from typing import Any

from rated.errors import ConfigError

__all__ = ["figure", "png_bytes", "pyplot", "save_png"]

_DPI = 120


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
        fig.savefig(out, dpi=_DPI, format="png")  # the path as given, even without a .png suffix
    except OSError as exc:  # a user-given path: one clear error, not a traceback
        raise ConfigError(f"{out}: cannot write the plot ({exc.strerror or exc})") from None
    finally:
        plt.close(fig)
    return out


def figure(**kwargs: Any) -> Any:
    """A ``matplotlib.figure.Figure`` outside pyplot's global registry: safe to draw from server worker
    threads (pyplot's state is not), rendered by Agg, and freed with its last reference (no ``close``)."""
    from matplotlib.figure import Figure

    return Figure(**kwargs)


def png_bytes(fig: Any, dpi: int = _DPI) -> bytes:
    """Lay out ``fig`` and return it as PNG bytes (an HTTP response, not a file); a pyplot figure is freed."""
    fig.tight_layout()
    buf = BytesIO()
    fig.savefig(buf, dpi=dpi, format="png")
    if getattr(fig.canvas, "manager", None) is not None:  # made by pyplot: drop it from its registry
        import matplotlib.pyplot as plt

        plt.close(fig)
    return buf.getvalue()
