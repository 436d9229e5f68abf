"""Where rated keeps its cache (models, downloaded wheels) and where benchmark data is read from."""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
from collections.abc import Iterator
from pathlib import Path

from rated.errors import ConfigError

__all__ = ["HOME_ENV", "atomic_dir", "atomic_path", "data_dir", "fresh_dir", "rated_home"]


HOME_ENV = "RATED_HOME"


def rated_home() -> Path:
    """``$RATED_HOME`` or ``~/.cache/rated``, as an absolute path; created on demand.

    Absolute, so that processes started from different folders share one cache. A folder that cannot
    be created (a file in the way, no permission) is a ConfigError naming it; an existing read-only
    folder is fine (a prepared cache is only read).
    """
    env = os.environ.get(HOME_ENV)
    home = Path(env or Path.home() / ".cache" / "rated").expanduser().absolute()
    if home.is_dir():
        return home
    try:
        home.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        origin = f"${HOME_ENV}" if env else "the default cache folder"
        reason = exc.strerror or str(exc)
        raise ConfigError(
            f"cannot use {home} ({origin}) as rated's cache folder: {reason}; "
            f"set {HOME_ENV} to a writable folder"
        ) from None
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


def fresh_dir(parent: Path, prefix: str, suffix: str = "") -> Path:
    """A new empty folder ``parent/<prefix><random><suffix>`` with the permissions any new folder gets.

    For folders built aside and renamed into place: ``tempfile.mkdtemp`` makes them 0700 whatever the
    umask, and a fixed chmod ignores it too. Here the kernel applies the umask (and a default ACL) as for a
    plain ``mkdir``; the umask is never read, which only ``os.umask`` can do, by changing it for every
    thread of the process meanwhile.
    """
    while True:
        path = Path(parent) / f"{prefix}{secrets.token_hex(6)}{suffix}"
        try:
            path.mkdir()
            return path
        except FileExistsError:
            continue


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


@contextlib.contextmanager
def atomic_dir(dest: Path) -> Iterator[Path]:
    """A new empty folder next to ``dest`` that replaces ``dest`` when the block ends without an error.

    ``dest`` keeps its previous content until the new folder is complete; on an error or an interrupt
    (Ctrl-C) the new folder is removed and ``dest`` is left as it was. A folder cannot replace a non-empty
    one in a single rename, so the swap is two: the previous folder is moved aside to ``.<name>.<random>.old``
    and the new one moved in (the previous one put back if that fails), then the previous one is deleted.
    Only a process killed between the two renames leaves ``dest`` missing, its previous content then still
    in that ``.old`` sibling. A symlink at ``dest`` is kept: the folder it points to is replaced. ``dest``
    may be the working directory (``.``): the process then works in the new folder.
    """
    dest = Path(dest).absolute()  # "." gets a name, so a parent to build the new folder in
    if dest.name == ".." or dest.is_symlink():  # as the system resolves it
        dest = dest.resolve()
    if dest.exists() and not dest.is_dir():
        raise ConfigError(f"{dest} is a file, not a folder")
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = fresh_dir(dest.parent, f".{dest.name}.", ".tmp")  # permissions from the umask, as for any folder
    old = tmp.with_name(f"{tmp.name.removesuffix('.tmp')}.old")
    try:
        yield tmp
        here = _is_cwd(dest)
        try:
            with contextlib.suppress(FileNotFoundError):  # nothing there yet: nothing to keep aside
                os.rename(dest, old)
            os.rename(tmp, dest)
            if here:  # else the process would stay in the previous folder, deleted below
                os.chdir(dest)
        finally:
            if old.exists() and not dest.exists():  # the new folder did not get in: put the old one back
                os.rename(old, dest)
            shutil.rmtree(old, ignore_errors=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)  # a failed or interrupted block's partial folder


def _is_cwd(path: Path) -> bool:
    try:
        return os.path.samefile(path, os.curdir)
    except OSError:  # no folder there yet, or no working directory at all
        return False
