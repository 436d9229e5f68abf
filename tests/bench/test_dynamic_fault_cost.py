"""Tuning with a price per failed call (``--fault-cost``): the choice, the CLI checks, the report."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from rated.bench.dataset import save_dataset
from rated.bench.dynamic.report import markdown_table
from rated.bench.dynamic.toy import toy_dataset
from rated.bench.dynamic.tuning import _best, check_fault_cost
from rated.cli import main
from rated.errors import ConfigError

FAST = [
    "--retriever",
    "tfidf",
    "--encoder",
    "hash",
    "--steps",
    "300",
    "--onset",
    "120",
    "--recovery-at",
    "220",
]

# two settings: one succeeds more but calls failing tools far more often
TRIED = [
    {"params": {"cooldown": 100.0}, "post_fail_sr": 0.60, "fsr": 0.10},
    {"params": {"cooldown": 800.0}, "post_fail_sr": 0.59, "fsr": 0.04},
]


def test_success_alone_by_default() -> None:
    assert _best(TRIED, 0.0)["params"] == {"cooldown": 100.0}


def test_a_price_per_failed_call_chooses_the_fewer_faults() -> None:
    # 0.60 - 0.10 = 0.50 against 0.59 - 0.04 = 0.55
    assert _best(TRIED, 1.0)["params"] == {"cooldown": 800.0}
    # a small price does not outweigh a point of success: 0.60 - 0.01 > 0.59 - 0.004
    assert _best(TRIED, 0.1)["params"] == {"cooldown": 100.0}


def test_ties_on_the_objective_go_to_the_lower_fsr_then_the_earlier_point() -> None:
    tied = [
        {"params": {"a": 1}, "post_fail_sr": 0.55, "fsr": 0.05},
        {"params": {"a": 2}, "post_fail_sr": 0.60, "fsr": 0.10},  # 0.50 at price 1, as the first
        {"params": {"a": 3}, "post_fail_sr": 0.52, "fsr": 0.02},  # 0.50 too, fewest faults
    ]
    assert _best(tied, 1.0)["params"] == {"a": 3}
    assert _best(tied[:2], 1.0)["params"] == {"a": 1}


@pytest.mark.parametrize("bad", [-0.5, math.nan, math.inf, True, "1"])
def test_unusable_prices_are_refused(bad: object) -> None:
    with pytest.raises(ConfigError, match="price per failed call"):
        check_fault_cost(bad)


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return save_dataset(toy_dataset(), tmp_path_factory.mktemp("toy"))


def test_tune_records_the_price_and_chooses_by_it(
    data: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    from rated.bench.dynamic import tuning

    prices: list[float] = []

    def best(tried: list[dict], fault_cost: float) -> dict:
        prices.append(fault_cost)
        return real_best(tried, fault_cost)

    real_best = tuning._best
    monkeypatch.setattr(tuning, "_best", best)
    args = ["bench", "tune", "--dataset", str(data), "--scenario", "recovery", *FAST, "--val-seeds", "1"]
    out = tmp_path / "tuned.json"
    assert main([*args, "--methods", "breaker", "--fault-cost", "2", "--out", str(out)]) == 0
    assert prices == [2.0]  # the CLI's price reached the choice
    assert "settings chosen by validation Post-Fail SR - 2 x FSR" in capsys.readouterr().out
    payload = json.loads(out.read_text())
    assert payload["fault_cost"] == 2.0
    grid = payload["methods"]["breaker"]["grid"]
    net = [g["post_fail_sr"] - 2.0 * g["fsr"] for g in grid]
    chosen = payload["methods"]["breaker"]
    assert chosen["val_post_fail_sr"] - 2.0 * chosen["val_fsr"] == pytest.approx(max(net), abs=1e-4)


def test_dynamic_with_tune_reports_the_objective(
    data: Path, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    out = tmp_path / "r.json"
    args = ["bench", "dynamic", "--dataset", str(data), "--scenario", "recovery", *FAST, "--seeds", "1"]
    args += ["--tune", "--methods", "static", "rated_no_feedback", "breaker", "rated", "--fixed", "rated"]
    assert main([*args, "--fault-cost", "0.5", "--out", str(out)]) == 0
    report = json.loads(out.read_text())
    assert report["tuning"]["fault_cost"] == 0.5
    printed = capsys.readouterr().out
    assert "tuned settings chosen by Post-Fail SR - 0.5 x FSR" in printed
    # the objective per seed, its mean, and paired differences of it (higher is better)
    breaker, rated = report["methods"]["breaker"], report["methods"]["rated"]
    for m in (breaker, rated):
        nets = [r["post_fail_sr"] - 0.5 * r["fsr"] for r in m["per_seed"]]
        assert [r["net"] for r in m["per_seed"]] == pytest.approx(nets)
        assert m["net"]["mean"] == pytest.approx(sum(nets) / len(nets))
    diff = report["paired"]["rated - breaker"]["net"]
    assert diff["mean"] == pytest.approx(rated["net"]["mean"] - breaker["net"]["mean"])
    assert diff["a_better"] == int(rated["per_seed"][0]["net"] > breaker["per_seed"][0]["net"] + 1e-12)
    assert "| method | Post-Fail SR % | FSR % | SR - 0.5 x FSR % | regret (pts) |" in printed
    assert "Paired, Post-Fail SR - 0.5 x FSR: rated - static " in printed
    net_line = printed.split("Paired, Post-Fail SR - 0.5")[1]
    assert "rated - breaker" in net_line  # baselines only: not RATED's own variants, not the oracle
    assert "rated - oracle" not in net_line and "rated - rated_no_feedback" not in net_line
    # tuned for success alone: no objective in the heading, no column
    plain = markdown_table({**report, "tuning": {**report["tuning"], "fault_cost": 0.0}})
    assert "tuned settings chosen" not in plain and "x FSR" not in plain


def test_a_tuned_file_with_an_unusable_price_is_refused(
    data: Path, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    tuned = tmp_path / "tuned.json"
    tuned.write_text(json.dumps({"fault_cost": "1", "methods": {"breaker": {"params": {}}}}))
    args = ["bench", "dynamic", "--dataset", str(data), "--scenario", "recovery", *FAST, "--seeds", "1"]
    out = tmp_path / "r.json"
    assert main([*args, "--methods", "breaker", "--tuned", str(tuned), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert f"--tuned {tuned}: the price per failed call must be a finite number >= 0, got '1'" in err
    assert not out.exists()


def test_without_a_price_the_report_has_no_net(data: Path, tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    args = ["bench", "dynamic", "--dataset", str(data), "--scenario", "recovery", *FAST, "--seeds", "1"]
    assert main([*args, "--methods", "static", "rated", "--out", str(out)]) == 0
    report = json.loads(out.read_text())
    assert "net" not in report["methods"]["rated"] and "net" not in report["paired"]["rated - static"]


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--fault-cost", "1"], "--fault-cost only means something with --tune"),
        (["--tune", "--fault-cost", "-1"], "--fault-cost: the price per failed call must be"),
        (["--tune", "--fault-cost", "nan"], "--fault-cost: the price per failed call must be"),
    ],
)
def test_cli_refuses_a_price_it_cannot_use(
    data: Path, tmp_path: Path, capsys: pytest.CaptureFixture, extra: list[str], message: str
) -> None:
    args = [
        "bench",
        "dynamic",
        "--dataset",
        str(data),
        *FAST,
        "--seeds",
        "1",
        "--out",
        str(tmp_path / "x.json"),
    ]
    assert main([*args, *extra]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "x.json").exists()
