"""Where rated keeps its cache (models, downloaded wheels) and where benchmark data is read from."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["data_dir", "rated_home"]


def rated_home() -> Path:
    """``$RATED_HOME`` or ``~/.cache/rated``; created on demand."""
    home = Path(os.environ.get("RATED_HOME") or Path.home() / ".cache" / "rated").expanduser()
    home.mkdir(parents=True, exist_ok=True)
    return home


def data_dir() -> Path | None:
    """``$RATED_DATA_DIR``, else the workspace's ``shared/data`` next to the checkout when it exists."""
    env = os.environ.get("RATED_DATA_DIR")
    if env:
        return Path(env).expanduser()
    for start in (Path.cwd(), Path(__file__).resolve()):
        for parent in (start, *start.parents):
            candidate = parent / "shared" / "data"
            if candidate.is_dir():
                return candidate
    return None
