"""``rated bench dynamic | tune | sweep | latency`` end to end on the toy dataset (fast settings)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rated.bench.dataset import save_dataset
from rated.bench.dynamic.toy import toy_dataset
from rated.cli import main

FAST = ["--retriever", "tfidf", "--encoder", "hash", "--steps", "300", "--onset", "120", "--seeds", "2"]


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return save_dataset(toy_dataset(), tmp_path_factory.mktemp("toy"))


def test_dynamic_writes_issue_json_table_and_png(
    data: Path, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    out = tmp_path / "r.json"
    args = [
        "bench",
        "dynamic",
        "--dataset",
        str(data),
        "--scenario",
        "recovery",
        "--recovery-at",
        "220",
        *FAST,
    ]
    assert main([*args, "--methods", "static", "blacklist", "breaker", "rated", "--out", str(out)]) == 0
    report = json.loads(out.read_text())
    assert report["dataset"] == "toy" and report["scenario"] == "recovery" and report["failure_rate"] == 0.2
    assert report["seeds"] == [0, 1]
    assert set(report["methods"]) == {"static", "blacklist", "breaker", "rated", "oracle"}
    for m in report["methods"].values():
        for metric in ("post_fail_sr", "fsr", "adaptation_steps", "regret"):
            assert {"mean", "std"} <= set(m[metric])
        assert 0.0 <= m["post_fail_sr"]["mean"] <= 1.0
    assert report["methods"]["oracle"]["fsr"]["mean"] == 0.0
    assert "rated - breaker" in report["paired"] and report["curves"]["step"]
    assert (tmp_path / "r.png").stat().st_size > 0
    text = capsys.readouterr().out
    assert "| method | Post-Fail SR %" in text and "| rated |" in text


def test_norepeat_stream_is_scaled_to_the_queries(data: Path, tmp_path: Path) -> None:
    out = tmp_path / "n.json"
    args = [
        "bench",
        "dynamic",
        "--dataset",
        str(data),
        "--scenario",
        "persistent",
        "--stream",
        "norepeat",
        *FAST,
    ]
    assert main([*args, "--methods", "static", "rated", "--probes", "10", "--out", str(out)]) == 0
    report = json.loads(out.read_text())
    assert report["steps"] == 48 and report["query_repetition_rate"]["mean"] == 0.0
    assert report["notes"] and "norepeat" in report["notes"][0]
    assert report["probes"] == {"interval": 10, "budget": 5}


def test_tune_then_use_the_tuned_settings(data: Path, tmp_path: Path) -> None:
    tuned = tmp_path / "tuned.json"
    args = ["bench", "tune", "--dataset", str(data), "--scenario", "persistent", *FAST, "--val-seeds", "1"]
    assert main([*args, "--methods", "breaker", "static", "--out", str(tuned)]) == 0
    payload = json.loads(tuned.read_text())
    assert payload["validation_seeds"] == [1000]
    chosen = payload["methods"]["breaker"]["params"]
    assert len(payload["methods"]["breaker"]["grid"]) == 48 and payload["methods"]["static"]["params"] == {}
    out = tmp_path / "t.json"
    run = ["bench", "dynamic", "--dataset", str(data), "--scenario", "persistent", *FAST]
    assert main([*run, "--methods", "breaker", "--tuned", str(tuned), "--out", str(out)]) == 0
    assert json.loads(out.read_text())["methods"]["breaker"]["params"] == chosen


def test_sweep_writes_heatmaps(data: Path, tmp_path: Path) -> None:
    args = ["bench", "sweep", "--dataset", str(data), "--scenario", "persistent", *FAST, "--grids", "bandit"]
    args += ["--val-seeds", "1"]
    assert main([*args, "--out", str(tmp_path / "sw")]) == 0
    payload = json.loads((tmp_path / "sw" / "sweep.json").read_text())
    grid = payload["sweeps"]["bandit"]
    assert len(grid["post_fail_sr"]) == len(grid["ys"]) and len(grid["post_fail_sr"][0]) == len(grid["xs"])
    assert (tmp_path / "sw" / "sweep-bandit.png").stat().st_size > 0


def test_latency_json_shape(data: Path, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    out = tmp_path / "lat.json"
    args = [
        "bench",
        "latency",
        "--dataset",
        str(data),
        "--encoder",
        "hash",
        "--queries",
        "30",
        "--warmup",
        "5",
    ]
    assert main([*args, "--out", str(out)]) == 0
    methods = json.loads(out.read_text())["methods"]
    assert {"encode_only", "static_prior", "global_mab", "rated", "feedback_update"} <= set(methods)
    for m in methods.values():
        assert m["mean_ms"] > 0 and m["p95_ms"] >= m["median_ms"] > 0
    assert methods["rated"]["mean_ms"] >= methods["encode_only"]["mean_ms"] * 0.5
    assert methods["rated"]["added_mean_ms"] > 0
    # the table shows the retriever's own ranking path beside the public API's (live_added_median_ms)
    rows = {
        line.split("|")[1].strip(): line for line in capsys.readouterr().out.splitlines() if line[:2] == "| "
    }
    assert "retriever path" in rows["stage"]
    assert rows["rated"].rstrip(" |").endswith(f"{methods['rated']['live_added_median_ms']:.4f}")
    assert rows["encode_only"].rstrip(" |").endswith("-")  # no re-ranking: nothing added


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--probes", "often"], "--probes"),
        (["--methods", "magic"], "unknown method"),
        (["--set", "x"], "--set"),
    ],
)
def test_user_errors_are_one_line(data: Path, tmp_path: Path, capsys, extra: list[str], message: str) -> None:
    args = ["bench", "dynamic", "--dataset", str(data), *FAST, "--out", str(tmp_path / "x.json"), *extra]
    assert main(args) == 2
    assert message in capsys.readouterr().err


def test_infinite_settings_survive_json() -> None:
    import math

    from rated.bench.dynamic.report import json_params
    from rated.cli.bench_dynamic import _tuned_params

    payload = {"methods": {"global_mab": {"params": json_params({"half_life": math.inf})}}}
    written = json.loads(json.dumps(payload))
    assert written["methods"]["global_mab"]["params"] == {"half_life": "inf"}
    assert _tuned_params(written) == {"global_mab": {"half_life": math.inf}}
