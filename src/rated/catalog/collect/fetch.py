"""Fetch pinned package archives with the registries' own clients, into a cache, never installing them.

``pip download --no-deps --only-binary=:all: NAME==VERSION`` for Python wheels and ``npm pack NAME@VERSION``
for npm tarballs, run as subprocesses. Each archive lands in ``CACHE/<registry>/<name>/<version>/`` with a
``.sha256`` beside it; a download goes to a temporary folder first and is moved in only once it is whole
and opens as an archive, so an interrupted or failed fetch never leaves a broken cache entry. A cached
archive whose checksum no longer matches is fetched again (into a temporary folder, then swapped in).
"""

from __future__ import annotations

import shutil
import tarfile
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from rated.encode.manifest import file_sha256
from rated.errors import RatedError
from rated.package_download import DownloadError, pip_command, run_client
from rated.paths import rated_home

__all__ = ["FetchError", "Fetcher", "PackageSpec", "default_cache_dir", "verify_archive"]

Registry = Literal["pypi", "npm"]


class FetchError(RatedError):
    """A package archive could not be fetched or is unreadable."""


@dataclass(frozen=True, order=True)
class PackageSpec:
    """One pinned package release."""

    registry: Registry
    name: str
    version: str

    def __str__(self) -> str:
        sep = "==" if self.registry == "pypi" else "@"
        return f"{self.name}{sep}{self.version}"


def default_cache_dir() -> Path:
    return rated_home() / "cache" / "packages"


def verify_archive(path: Path) -> None:
    """Raise ``FetchError`` unless ``path`` opens as a wheel/zip or a gzipped tarball."""
    try:
        if path.suffix in {".whl", ".zip"}:
            with zipfile.ZipFile(path) as zf:
                bad = zf.testzip()
            if bad is not None:
                raise FetchError(f"{path}: corrupt member {bad!r}")
        else:
            with tarfile.open(path, "r:*") as tf:
                for _ in tf:
                    pass
    except (zipfile.BadZipFile, tarfile.TarError, OSError, EOFError) as exc:
        raise FetchError(f"{path}: not a readable archive ({exc})") from None


class Fetcher:
    """Get pinned archives into a cache; ``fetch`` returns the cached archive's path."""

    def __init__(self, cache_dir: str | Path | None = None, *, timeout: float = 600.0, offline: bool = False):
        self.cache_dir = Path(cache_dir).expanduser() if cache_dir else default_cache_dir()
        self.timeout = timeout
        self.offline = offline

    def entry_dir(self, spec: PackageSpec) -> Path:
        safe = spec.name.replace("/", "__").replace("@", "")
        return self.cache_dir / spec.registry / safe / spec.version

    def cached(self, spec: PackageSpec) -> Path | None:
        """The cached archive if present and intact (checksum), else None."""
        folder = self.entry_dir(spec)
        archives = sorted(p for p in folder.glob("*") if p.is_file() and not p.name.endswith(".sha256"))
        if len(archives) != 1:
            return None
        archive = archives[0]
        sidecar = archive.with_name(archive.name + ".sha256")
        if sidecar.is_file():
            return archive if sidecar.read_text().strip() == file_sha256(archive) else None
        try:  # archive put there by hand (or by a test): accept it once it opens, and record its checksum
            verify_archive(archive)
        except FetchError:
            return None
        sidecar.write_text(file_sha256(archive) + "\n")
        return archive

    def fetch(self, spec: PackageSpec) -> Path:
        hit = self.cached(spec)
        if hit is not None:
            return hit
        folder = self.entry_dir(spec)
        corrupt = folder.exists() and any(folder.iterdir())
        if self.offline:
            state = "is corrupt" if corrupt else "is not cached"
            raise FetchError(f"{spec} {state} in {folder} and fetching is disabled (offline)")
        folder.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(prefix=".fetch-", dir=folder.parent) as tmp:
            try:
                archive = self._download(spec, Path(tmp))
                verify_archive(archive)
            except FetchError as exc:
                if corrupt:
                    raise FetchError(f"{exc} (and the cached copy in {folder} is corrupt)") from None
                raise
            (Path(tmp) / (archive.name + ".sha256")).write_text(file_sha256(archive) + "\n")
            staged = Path(tmp) / "entry"
            staged.mkdir()
            for p in (archive, Path(tmp) / (archive.name + ".sha256")):
                p.rename(staged / p.name)
            if folder.exists():
                shutil.rmtree(folder)
            staged.rename(folder)
        result = self.cached(spec)
        if result is None:  # pragma: no cover - the entry was just verified
            raise FetchError(f"{spec}: cache entry {folder} unreadable right after download")
        return result

    def _download(self, spec: PackageSpec, dest: Path) -> Path:
        if spec.registry == "pypi":
            cmd = pip_command(str(spec), dest)
        elif spec.registry == "npm":
            npm = shutil.which("npm")
            if npm is None:
                raise FetchError(f"{spec}: the npm client is not installed (needed to fetch npm packages)")
            cmd = [npm, "pack", str(spec), "--pack-destination", str(dest), "--silent"]
        else:  # pragma: no cover - Literal type
            raise FetchError(f"unknown registry {spec.registry!r}")
        try:
            return run_client(cmd, dest, requirement=str(spec), timeout=self.timeout)
        except OSError as exc:
            raise FetchError(f"{spec}: cannot run {cmd[0]} ({exc.strerror})") from None
        except DownloadError as exc:
            if exc.kind == "timeout":
                raise FetchError(f"{spec}: the registry did not answer within {self.timeout:.0f} s") from None
            if exc.kind == "no-archive":
                found = exc.detail.split(", ") if exc.detail else []
                raise FetchError(f"{spec}: expected one archive after download, found {found}") from None
            raise FetchError(f"{spec}: download failed: {exc.detail}") from None
