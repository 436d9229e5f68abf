"""bfcl_wheel: a cached wheel is reused, a download goes through pip, a failure is a DataError."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from rated.bench.datasets.bfcl import bfcl_wheel
from rated.errors import DataError


def test_bfcl_wheel_downloads_once_then_reuses_the_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[list[str]] = []

    def run(cmd, capture_output, text, timeout, cwd, check):  # noqa: ANN001 - mirrors subprocess.run
        calls.append(cmd)
        (Path(cwd) / "bfcl_eval-1.0-py3-none-any.whl").write_bytes(b"zip")
        return subprocess.CompletedProcess(cmd, 0, "", "")

    monkeypatch.setattr(subprocess, "run", run)
    wheel = bfcl_wheel("1.0", cache=tmp_path)
    assert wheel == tmp_path / "bfcl_eval-1.0-py3-none-any.whl"
    assert "bfcl-eval==1.0" in calls[0] and "--no-deps" in calls[0]
    assert bfcl_wheel("1.0", cache=tmp_path) == wheel and len(calls) == 1


def test_bfcl_wheel_failure_names_the_package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def run(cmd, **kwargs):  # noqa: ANN001, ANN003
        return subprocess.CompletedProcess(cmd, 1, "", "ERROR: No matching distribution found\n")

    monkeypatch.setattr(subprocess, "run", run)
    with pytest.raises(DataError, match=r"could not fetch bfcl-eval==1\.0 with pip: .*No matching"):
        bfcl_wheel("1.0", cache=tmp_path)
    assert list(tmp_path.iterdir()) == []
