"""benchmarks/encoder_roofline.py: the work count is right and the script keeps running."""

from __future__ import annotations

import json
import runpy
from pathlib import Path

import pytest

from rated.encode.onnx_build import BertConfig

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"


@pytest.fixture
def roofline(monkeypatch):
    monkeypatch.syspath_prepend(str(BENCH))  # the script imports its sibling encode_throughput
    return runpy.run_path(str(BENCH / "encoder_roofline.py"), run_name="roofline_test")


def test_multiply_adds_counted_by_hand(roofline):
    cfg = BertConfig(
        vocab_size=10, hidden_size=2, num_hidden_layers=3, num_attention_heads=1, intermediate_size=4
    )
    # per layer, 5 tokens: projections 5 * (4*2*2 + 2*2*4) = 160, attention products 2 * 5*5 * 2 = 100
    assert roofline["macs_per_text"](cfg, 5) == 3 * (160 + 100)


def test_minilm_needs_about_ten_million_per_token(roofline):
    cfg = BertConfig(
        vocab_size=30522, hidden_size=384, num_hidden_layers=6, num_attention_heads=12, intermediate_size=1536
    )
    assert 10.6e6 < roofline["macs_per_text"](cfg, 1) < 10.7e6


def test_matmul_rate_is_measured(roofline):
    session = roofline["matmul_session"](1)
    assert roofline["best_gmacs"](session, 8, 16, 4, 0.01) > 0


@pytest.mark.slow
def test_script_reports_every_target(roofline, capsys):
    from rated.paths import data_dir

    root = data_dir()
    if root is None or not (root / "stabletoolbench").is_dir() or not (root / "metatool").is_dir():
        pytest.skip("benchmark data not available")
    assert roofline["main"](["--tools", "20", "--queries", "3", "--seconds", "0.05", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert [t["target"].split()[0] for t in result["targets"]] == ["catalog", "retrieve", "retrieve"]
    for t in result["targets"]:
        assert t["needed_gmacs"] > 0 and t["encoder_gmacs"] > 0
        assert t["needed_over_best"] == pytest.approx(
            t["needed_gmacs"] / result["best_matmul_gmacs"], rel=0.02
        )
