"""Fetcher: registry commands, cache layout, checksums, and failures that leave the cache intact."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from catalog_fixtures import write_tgz, write_wheel

from rated.catalog.collect.archive import Archive
from rated.catalog.collect.fetch import Fetcher, FetchError, PackageSpec

WHEEL = PackageSpec("pypi", "demo-pkg", "1.2.3")
NPM = PackageSpec("npm", "demo-node", "4.5.6")


def _fake_run(calls: list[list[str]], fail: bool = False):
    def run(cmd, capture_output, text, timeout, cwd, check):  # noqa: ANN001 - mirrors subprocess.run
        calls.append(cmd)
        if fail:
            return subprocess.CompletedProcess(
                cmd, 1, "", "npm notice x\nERROR: No matching distribution found\n"
            )
        dest = Path(cwd)
        if "pip" in cmd:
            write_wheel(
                dest / "demo_pkg-1.2.3-py3-none-any.whl", "demo-pkg", "1.2.3", {"demo/x.py": "A = 1\n"}
            )
        else:
            write_tgz(dest / "demo-node-4.5.6.tgz", {"package/package.json": '{"license": "MIT"}'})
        return subprocess.CompletedProcess(cmd, 0, "", "")

    return run


def test_download_commands_and_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[list[str]] = []
    monkeypatch.setattr(subprocess, "run", _fake_run(calls))
    fetcher = Fetcher(tmp_path)
    path = fetcher.fetch(WHEEL)
    assert path.parent == tmp_path / "pypi" / "demo-pkg" / "1.2.3"
    pip = calls[0]
    assert pip[1:4] == ["-m", "pip", "download"] and "--no-deps" in pip and "--only-binary=:all:" in pip
    assert "demo-pkg==1.2.3" in pip
    assert (path.parent / (path.name + ".sha256")).is_file()
    assert fetcher.fetch(WHEEL) == path and len(calls) == 1  # cached: no second download
    tgz = fetcher.fetch(NPM)
    assert calls[1][1:3] == ["pack", "demo-node@4.5.6"] and "--pack-destination" in calls[1]
    assert Archive(tgz, NPM).license() == "MIT"
    assert not list(tmp_path.glob("*/.fetch-*"))  # temporary folders are gone


def test_corrupt_cache_entry_is_refetched(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[list[str]] = []
    monkeypatch.setattr(subprocess, "run", _fake_run(calls))
    fetcher = Fetcher(tmp_path)
    path = fetcher.fetch(WHEEL)
    path.write_bytes(b"garbage")
    assert fetcher.cached(WHEEL) is None
    again = fetcher.fetch(WHEEL)
    assert len(calls) == 2 and Archive(again, WHEEL).glob("demo/*") == ["demo/x.py"]


def test_failed_download_names_the_package_and_keeps_the_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    good = Fetcher(tmp_path)
    monkeypatch.setattr(subprocess, "run", _fake_run([]))
    kept = good.fetch(NPM)
    broken = good.fetch(WHEEL)
    broken.write_bytes(b"garbage")
    monkeypatch.setattr(subprocess, "run", _fake_run([], fail=True))
    with pytest.raises(FetchError, match=r"demo-pkg==1\.2\.3: download failed: ERROR: No matching.*corrupt"):
        good.fetch(WHEEL)
    assert broken.read_bytes() == b"garbage"  # the entry was not half-replaced
    assert good.cached(NPM) == kept


def test_timeout_and_offline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def slow(cmd, **kwargs):  # noqa: ANN001, ANN003
        raise subprocess.TimeoutExpired(cmd, 1)

    monkeypatch.setattr(subprocess, "run", slow)
    with pytest.raises(FetchError, match="did not answer"):
        Fetcher(tmp_path, timeout=1).fetch(WHEEL)
    with pytest.raises(FetchError, match="not cached.*offline"):
        Fetcher(tmp_path, offline=True).fetch(WHEEL)


def test_hand_placed_archive_is_verified(tmp_path: Path) -> None:
    fetcher = Fetcher(tmp_path, offline=True)
    folder = fetcher.entry_dir(WHEEL)
    write_wheel(folder / "x.whl", "demo-pkg", "1.2.3", {})
    assert fetcher.fetch(WHEEL) == folder / "x.whl"
    (folder / "x.whl").unlink()
    (folder / "x.whl.sha256").unlink()
    (folder / "y.whl").write_bytes(b"not a zip")
    with pytest.raises(FetchError, match="is corrupt"):
        fetcher.fetch(WHEEL)
