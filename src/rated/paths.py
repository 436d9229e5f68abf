"""Where rated keeps its cache (models, downloaded wheels) and where benchmark data is read from."""

from __future__ import annotations

import contextlib
import os
import secrets
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
    while True:  # O_EXCL with mode 0o666: a fresh name, and the kernel applies the umask (threads too)
        tmp = dest.parent / f".{dest.name}.{secrets.token_hex(6)}.tmp"
        try:
            os.close(os.open(tmp, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o666))
            break
        except FileExistsError:
            continue
    try:
        yield tmp
        os.replace(tmp, dest)
    finally:
        tmp.unlink(missing_ok=True)
