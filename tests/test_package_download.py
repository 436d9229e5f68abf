"""pip download through a fake runner: command, temporary folder, failures by kind, and the wheel cache."""

from __future__ import annotations

import hashlib
import subprocess
from pathlib import Path

import pytest

from rated.package_download import (
    DownloadError,
    cached_wheel,
    pip_command,
    pip_download,
    run_client,
    sha256_matches,
)

REQ = "demo-pkg==1.0"
WHEEL = "demo_pkg-1.0-py3-none-any.whl"


def _runner(calls: list[dict], *, returncode: int = 0, stderr: str = "", leave: tuple[str, ...] = (WHEEL,)):
    def run(cmd, capture_output, text, timeout, cwd, check):  # noqa: ANN001 - mirrors subprocess.run
        calls.append({"cmd": cmd, "cwd": Path(cwd), "timeout": timeout})
        for name in leave:
            (Path(cwd) / name).write_bytes(b"wheel bytes")
        return subprocess.CompletedProcess(cmd, returncode, "", stderr)

    return run


def test_pip_command_never_installs_and_pins() -> None:
    cmd = pip_command(REQ, Path("/x"))
    assert cmd[1:4] == ["-m", "pip", "download"]
    assert {"--no-deps", "--only-binary=:all:", "--no-input"} <= set(cmd)
    assert cmd[-3:] == [REQ, "-d", "/x"]


def test_pip_download_goes_through_a_temporary_folder(tmp_path: Path) -> None:
    calls: list[dict] = []
    path = pip_download(REQ, tmp_path / "cache", timeout=5, runner=_runner(calls))
    assert path == tmp_path / "cache" / WHEEL and path.read_bytes() == b"wheel bytes"
    assert calls[0]["cwd"].parent == tmp_path / "cache" and calls[0]["cwd"].name.startswith(".download-")
    assert calls[0]["timeout"] == 5 and REQ in calls[0]["cmd"]
    assert [p.name for p in (tmp_path / "cache").iterdir()] == [WHEEL]  # the temporary folder is gone


@pytest.mark.parametrize(
    ("kwargs", "kind", "reason"),
    [
        (
            {"returncode": 1, "stderr": "x\n\nWARNING: Location a\nERROR: No matching distribution\n"},
            "failed",
            "download failed: x | ERROR: No matching distribution",
        ),
        ({"returncode": 1, "stderr": "python: No module named pip\n"}, "no-pip", "No module named pip"),
        ({"returncode": 2, "stderr": ""}, "failed", "download failed: exit code 2"),
        ({"leave": ()}, "no-archive", "expected one archive, found none"),
        ({"leave": ("a-1.whl", "b-1.whl")}, "no-archive", "found a-1.whl, b-1.whl"),
    ],
)
def test_failures_have_a_kind_and_leave_nothing(tmp_path: Path, kwargs: dict, kind: str, reason: str) -> None:
    with pytest.raises(DownloadError) as info:
        pip_download(REQ, tmp_path, timeout=5, runner=_runner([], **kwargs))
    assert info.value.kind == kind and info.value.requirement == REQ
    assert reason in info.value.reason and str(info.value).startswith(f"{REQ}: ")
    assert list(tmp_path.iterdir()) == []


def test_timeout_and_missing_client(tmp_path: Path) -> None:
    def slow(cmd, **kwargs):  # noqa: ANN001, ANN003
        raise subprocess.TimeoutExpired(cmd, 7)

    with pytest.raises(DownloadError, match="no answer within 7 s") as info:
        run_client(["pip"], tmp_path, requirement=REQ, timeout=7, runner=slow)
    assert info.value.kind == "timeout"
    with pytest.raises(OSError):  # the caller knows which client it tried to start
        run_client([str(tmp_path / "no-such-client")], tmp_path, requirement=REQ, timeout=7)


def test_cached_wheel_honours_the_pin(tmp_path: Path) -> None:
    assert cached_wheel(tmp_path / "missing", "demo-pkg", "1.0") is None
    wheel = tmp_path / WHEEL
    wheel.write_bytes(b"good")
    good = hashlib.sha256(b"good").hexdigest()
    assert sha256_matches(wheel, good) == (True, good)
    assert cached_wheel(tmp_path, "demo-pkg", "1.0") == wheel
    assert cached_wheel(tmp_path, "demo-pkg", "2.0") is None
    assert cached_wheel(tmp_path, "demo-pkg", "1.0", sha256=good) == wheel
    assert cached_wheel(tmp_path, "demo-pkg", "1.0", sha256="0" * 64) is None
    assert not wheel.exists()  # a wheel that fails its pin is dropped, to be fetched again
