"""Output paths of long commands: checked before the run, written whole or not at all.

A benchmark that runs for minutes must not fail at the end because ``--out`` names a folder or a place
that cannot be written, and an interrupted or failed write must not leave a half file that looks like a
result. ``check_out_file`` / ``check_out_dir`` fail early with a message naming the flag and the path;
``writing`` yields a temporary path that replaces the destination only when the block succeeds.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

from rated.errors import ConfigError, RatedError
from rated.paths import atomic_path

__all__ = ["check_out_dir", "check_out_file", "writing"]


def _check_folder(folder: Path, flag: str, path: Path) -> None:
    """The folder exists and is writable, or can be created (its nearest existing parent is writable)."""
    existing = folder
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        raise ConfigError(f"{flag} {path}: {existing} is a file, not a folder")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise ConfigError(f"{flag} {path}: folder {existing} is not writable")


def check_out_file(path: Path, flag: str = "--out") -> Path:
    """``path`` can be written as a file (its folder is created when written)."""
    path = Path(path)
    if path.is_dir():
        raise ConfigError(f"{flag} {path} is a folder; give a file name, e.g. {path / 'result.json'}")
    _check_folder(path.parent, flag, path)
    return path


def check_out_dir(path: Path, flag: str = "--out") -> Path:
    """``path`` is, or can be created as, a writable folder."""
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise ConfigError(f"{flag} {path} is a file; this command writes a folder")
    _check_folder(path, flag, path)
    return path


@contextlib.contextmanager
def writing(path: Path) -> Iterator[Path]:
    """A temporary path next to ``path`` that becomes ``path`` when the block ends without an error.

    The folder is created; an ``OSError`` (disk full, permissions) becomes one ``RatedError`` naming
    ``path``, and nothing is left at ``path``.
    """
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with atomic_path(path) as tmp:
            yield tmp
    except OSError as exc:
        ours = exc.filename is None or Path(exc.filename).name.startswith(f".{path.name}.")
        raise RatedError(f"cannot write {path if ours else exc.filename}: {exc.strerror or exc}") from None
