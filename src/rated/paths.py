"""Where rated keeps its cache (models, downloaded wheels) and where benchmark data is read from."""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

__all__ = ["atomic_path", "data_dir", "rated_home"]


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


@contextlib.contextmanager
def atomic_path(dest: Path) -> Iterator[Path]:
    """A temporary path next to ``dest`` that replaces ``dest`` when the block ends without an error.

    Readers see the old file or the whole new one, never a half-written file; on error the temporary file
    is removed and ``dest`` is left as it was. The file gets the usual umask-based permissions.
    """
    dest = Path(dest)
    fd, tmp = tempfile.mkstemp(prefix=f".{dest.name}.", suffix=".tmp", dir=dest.parent)
    os.close(fd)
    try:
        yield Path(tmp)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp creates 0600; these are ordinary cache and data files
        os.replace(tmp, dest)
    finally:
        Path(tmp).unlink(missing_ok=True)
