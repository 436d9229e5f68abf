"""Bad input to the benchmark commands: one clear line, a non-zero exit, and no output file.

Each case is something a user can type; every one used to either crash with a traceback, run on
silently with a setting that means nothing, or fail only after the whole run.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from rated.bench.dataset import save_dataset
from rated.bench.dynamic.toy import toy_dataset
from rated.cli import main

FAST = ["--retriever", "tfidf", "--encoder", "hash", "--steps", "300", "--onset", "120", "--seeds", "2"]


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return save_dataset(toy_dataset(), tmp_path_factory.mktemp("toy"))


def _broken(data: Path, tmp_path: Path, name: str, content: bytes | None, append: bool = False) -> Path:
    folder = tmp_path / "broken"
    shutil.copytree(data, folder)
    path = folder / name
    if content is None:
        path.unlink()
    elif append:
        path.write_bytes(path.read_bytes() + content)
    else:
        path.write_bytes(content)
    return folder


def _fails(argv: list[str], capsys: pytest.CaptureFixture, message: str, out_dir: Path) -> None:
    """Exit non-zero with ``message`` on stderr, no traceback, and nothing written under ``out_dir``."""
    code = main(argv)
    err = capsys.readouterr().err
    assert code != 0, err
    assert message in " ".join(err.split()), err
    assert "Traceback" not in err
    assert not out_dir.exists() or not any(out_dir.rglob("*")), list(out_dir.rglob("*"))


# ---- dataset folders ----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("name", "content", "append", "message"),
    [
        ("meta.json", b"{oops", False, "meta.json: invalid JSON"),
        ("meta.json", b"[1, 2]", False, "meta.json: expected a JSON object, got list"),
        ("queries.jsonl", b"\xff\xfe\n", True, "queries.jsonl: line 49: not UTF-8 text"),
        ("tools.jsonl", b"\xff\n", False, "tools.jsonl: line 1: not UTF-8 text"),
        ("queries.jsonl", b'{"id": "x", "text": "hi", "relevant": ["nope"]}\n', True, "'nope' is not in"),
        ("queries.jsonl", b"{not json\n", True, "queries.jsonl: line 49: invalid JSON"),
        ("queries.jsonl", None, False, "queries.jsonl not found"),
        ("queries.jsonl", b"", False, "has no 'test' queries"),
    ],
)
@pytest.mark.parametrize("command", ["dynamic", "offline", "latency"])
def test_broken_dataset_is_one_message(
    data: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture,
    name: str,
    content: bytes | None,
    append: bool,
    message: str,
    command: str,
) -> None:
    folder = _broken(data, tmp_path, name, content, append)
    out = tmp_path / "out" / "r.json"
    if command == "dynamic":
        argv = ["bench", "dynamic", "--dataset", str(folder), *FAST, "--methods", "static"]
    elif command == "offline":
        argv = ["bench", "offline", "--dataset", str(folder), "--methods", "tfidf"]
    else:
        argv = ["bench", "latency", "--dataset", str(folder), "--encoder", "hash", "--queries", "5"]
        if message == "has no 'test' queries":
            message = "has no queries"
    _fails([*argv, "--out", str(out)], capsys, message, tmp_path / "out")


def test_a_file_given_as_the_dataset_folder(
    data: Path, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    argv = [
        "bench",
        "dynamic",
        "--dataset",
        str(data / "tools.jsonl"),
        *FAST,
        "--out",
        str(tmp_path / "o/r.json"),
    ]
    _fails(argv, capsys, "is a file, not a folder", tmp_path / "o")


# ---- nonsense settings ---------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--seeds", "0"], "--seeds must be >= 1, got 0"),
        (["--seeds", "-1"], "--seeds must be >= 1"),
        (["--probes", "10", "--probe-budget", "0"], "--probe-budget must be >= 1"),
        (["--probes", "-5"], "--probes interval must be >= 1"),
        (["--failure-rate", "nan"], "failure_rate must lie in (0, 1), got nan"),
        (["--failure-rate", "1.5"], "failure_rate must lie in (0, 1)"),
        (["--onset", "400"], "need 0 < onset < steps"),
        (["--scenario", "recovery", "--recovery-at", "50"], "recovery needs onset < recovery_at < steps"),
        (["--scenario", "recovery", "--recovery-at", "5000"], "recovery needs onset < recovery_at < steps"),
        (["--partial-share", "-1"], "partial_share must be a number >= 0"),
        (["--set", "nomethod.cooldown=3"], "--set names 'nomethod', not among --methods"),
        (["--set", "breaker.cooldown=abc"], "--set breaker.cooldown=abc: expected a number"),
        (["--set", "breaker.cooldown=nan"], "'nan' is not a usable number"),
        (["--set", "breaker.respect_retry_after=2"], "expected true or false"),
        (["--set", "breaker.nonsense=3"], "breaker has no parameter 'nonsense' (it takes failure_threshold"),
        (["--methods", "breaker", "breaker"], "method 'breaker' is given twice"),
        (["--plot-methods", "nope"], "--plot-methods names 'nope'"),
        (["--fixed", "breaker"], "--fixed only means something with --tune"),
        (["--tune", "--fixed", "nope"], "--fixed names 'nope'"),
        (["-k", "0"], "-k must be >= 1"),
    ],
)
def test_nonsense_dynamic_settings_are_refused_before_the_run(
    data: Path, tmp_path: Path, capsys: pytest.CaptureFixture, extra: list[str], message: str
) -> None:
    argv = ["bench", "dynamic", "--dataset", str(data), *FAST, "--methods", "breaker", "static"]
    _fails([*argv, *extra, "--out", str(tmp_path / "o" / "r.json")], capsys, message, tmp_path / "o")


@pytest.mark.parametrize(
    ("command", "extra", "message"),
    [
        ("tune", ["--jobs", "0"], "--jobs must be >= 1, got 0"),
        ("tune", ["--val-seeds", "0"], "--val-seeds must be >= 1, got 0"),
        ("sweep", ["--jobs", "-2"], "--jobs must be >= 1"),
        ("sweep", ["--set", "breaker.cooldown=3"], "a sweep varies only rated; --set names breaker"),
        ("sweep", ["--set", "rated.bogus=1"], "rated has no parameter 'bogus'"),
    ],
)
def test_nonsense_tune_and_sweep_settings(
    data: Path, tmp_path: Path, capsys: pytest.CaptureFixture, command: str, extra: list[str], message: str
) -> None:
    out = tmp_path / "o" / ("t.json" if command == "tune" else "sweep")
    argv = ["bench", command, "--dataset", str(data), *FAST, *extra, "--out", str(out)]
    if command == "tune":
        argv += ["--methods", "breaker"]
    _fails(argv, capsys, message, tmp_path / "o")


@pytest.mark.parametrize(
    ("extra", "message"), [(["--queries", "0"], "--queries must be >= 1"), (["--warmup", "-1"], "--warmup")]
)
def test_nonsense_latency_settings(
    data: Path, tmp_path: Path, capsys: pytest.CaptureFixture, extra: list[str], message: str
) -> None:
    argv = ["bench", "latency", "--dataset", str(data), "--encoder", "hash", *extra]
    _fails([*argv, "--out", str(tmp_path / "o" / "l.json")], capsys, message, tmp_path / "o")


def test_offline_with_no_method(data: Path, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    argv = ["bench", "offline", "--dataset", str(data), "--methods", ",", "--out", str(tmp_path / "o/r.json")]
    _fails(argv, capsys, "--methods names no method", tmp_path / "o")


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ('{"a": 1}\n{"b": 2}\n', "not a JSON file"),
        ('{"name": "toy"}', "not tuned settings"),
        ('{"methods": {"breaker": 3}}', "not tuned settings"),
    ],
)
def test_tuned_file_that_is_not_tuned_settings(
    data: Path, tmp_path: Path, capsys: pytest.CaptureFixture, content: str, message: str
) -> None:
    tuned = tmp_path / "tuned.json"
    tuned.write_text(content)
    argv = ["bench", "dynamic", "--dataset", str(data), *FAST, "--methods", "breaker", "--tuned", str(tuned)]
    _fails([*argv, "--out", str(tmp_path / "o" / "r.json")], capsys, message, tmp_path / "o")


# ---- output paths --------------------------------------------------------------------------------------
def _commands(data: Path, out: Path) -> dict[str, list[str]]:
    d = str(data)
    return {
        "dynamic": ["bench", "dynamic", "--dataset", d, *FAST, "--methods", "static", "--out", str(out)],
        "tune": ["bench", "tune", "--dataset", d, *FAST, "--methods", "static", "--out", str(out)],
        "latency": [
            "bench",
            "latency",
            "--dataset",
            d,
            "--encoder",
            "hash",
            "--queries",
            "5",
            "--out",
            str(out),
        ],
        "offline": ["bench", "offline", "--dataset", d, "--methods", "tfidf", "--out", str(out)],
    }


@pytest.mark.parametrize("command", ["dynamic", "tune", "latency", "offline"])
def test_out_that_is_a_folder(
    data: Path, tmp_path: Path, capsys: pytest.CaptureFixture, command: str
) -> None:
    folder = tmp_path / "o"
    folder.mkdir()
    _fails(_commands(data, folder)[command], capsys, "is a folder; give a file name", folder)


@pytest.mark.parametrize("command", ["dynamic", "tune", "latency", "offline"])
def test_out_under_a_file(data: Path, tmp_path: Path, capsys: pytest.CaptureFixture, command: str) -> None:
    blocker = tmp_path / "o" / "file.txt"
    blocker.parent.mkdir()
    blocker.write_text("x")
    code = main(_commands(data, blocker / "r.json")[command])
    err = capsys.readouterr().err
    assert code == 2 and f"{blocker} is a file, not a folder" in " ".join(err.split()), err
    assert sorted(p.name for p in blocker.parent.iterdir()) == ["file.txt"]


def test_sweep_out_that_is_a_file(data: Path, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    out = tmp_path / "sweep.json"
    out.write_text("{}")
    argv = ["bench", "sweep", "--dataset", str(data), *FAST, "--grids", "bandit", "--out", str(out)]
    assert main(argv) == 2
    assert "is a file; this command writes a folder" in capsys.readouterr().err
    assert out.read_text() == "{}"


def test_prepare_out_under_a_file(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    blocker = tmp_path / "file.txt"
    blocker.write_text("x")
    assert main(["data", "prepare", "bfcl", "--out", str(blocker / "bfcl")]) == 2
    assert "is a file, not a folder" in capsys.readouterr().err


# ---- interrupted or failed writes ----------------------------------------------------------------------
@pytest.mark.parametrize(
    ("exc", "code", "message"),
    [(KeyboardInterrupt(), 130, "interrupted"), (OSError(28, "No space left on device"), 1, "cannot write")],
)
def test_dynamic_leaves_no_json_when_the_end_fails(
    data: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
    exc: BaseException,
    code: int,
    message: str,
) -> None:
    import rated.bench.dynamic.report as report

    def plot(*_a: object, **_k: object) -> None:
        raise exc

    monkeypatch.setattr(report, "plot_curves", plot)
    out = tmp_path / "o" / "r.json"
    argv = ["bench", "dynamic", "--dataset", str(data), *FAST, "--methods", "static", "--out", str(out)]
    assert main(argv) == code
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
    assert not out.exists() and not [p for p in out.parent.iterdir() if p.suffix != ".png"]


def test_offline_leaves_no_json_when_interrupted(
    data: Path, tmp_path: Path, capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    import rated.bench.plots as plots

    def bars(*_a: object, **_k: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(plots, "grouped_bars", bars)
    out = tmp_path / "o" / "r.json"
    argv = ["bench", "offline", "--dataset", str(data), "--methods", "tfidf", "--out", str(out)]
    assert main(argv) == 130
    assert "interrupted" in capsys.readouterr().err
    assert not out.exists() and not list(out.parent.iterdir())


def test_a_good_run_still_writes_json_and_png(data: Path, tmp_path: Path) -> None:
    out = tmp_path / "new" / "r.json"
    argv = ["bench", "dynamic", "--dataset", str(data), *FAST, "--methods", "static", "--out", str(out)]
    assert main(argv) == 0
    assert json.loads(out.read_text())["methods"]["static"]
    assert sorted(p.name for p in out.parent.iterdir()) == ["r.json", "r.png"]
