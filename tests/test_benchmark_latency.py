"""benchmarks/latency.py keeps running: a tiny synthetic run with the fake encoder writes its JSON and PNG."""

from __future__ import annotations

import json
import runpy
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "latency.py"


def test_latency_script_runs_and_reports_every_stage(tmp_path, monkeypatch):
    argv = [
        "latency.py",
        "--source",
        "synthetic",
        "--encoder",
        "hash",
        "--tools",
        "120",
        "--calls",
        "5",
        "--warmup",
        "1",
        "--out",
        str(tmp_path),
    ]
    monkeypatch.setattr(sys, "argv", argv)
    module = runpy.run_path(str(SCRIPT), run_name="latency_test")
    assert module["main"]() == 0
    doc = json.loads((tmp_path / "latency.json").read_text())
    stages = {row["stage"]: row for row in doc["stages"]}
    for name in (
        "encode",
        "encode+search",
        "retrieve",
        "rerank+fusion (rated)",
        "feedback (memory)",
        "feedback (sqlite, normal)",
    ):
        assert stages[name]["median_ms"] > 0
    assert stages["encode"]["ratio_to_encode"] is None and stages["retrieve"]["ratio_to_encode"] > 0
    assert doc["tools"] == 120 and (tmp_path / "latency.png").stat().st_size > 1000


@pytest.mark.slow
def test_encoder_backends_script_compares_backends_in_one_run(monkeypatch, capsys):
    from rated.paths import data_dir

    root = data_dir()
    if root is None or not (root / "stabletoolbench").is_dir() or not (root / "metatool").is_dir():
        pytest.skip("benchmark data not available")
    bench = SCRIPT.parent
    monkeypatch.syspath_prepend(str(bench))  # the script imports its sibling encode_throughput
    module = runpy.run_path(str(bench / "encoder_backends.py"), run_name="backends_test")
    argv = ["--rounds", "1", "--queries", "3", "--tools", "20", "--json"]
    assert module["main"](argv) == 0
    result = json.loads(capsys.readouterr().out)
    base = result["onnxruntime f32"]
    assert base["speedup_short"] == base["speedup_long"] == base["speedup_catalog"] == 1.0
    assert (
        base["reference_min_cosine"] >= 0.999 and result["onnxruntime int8"]["reference_min_cosine"] < 0.999
    )
    for m in result.values():
        assert m["short_query_ms"] > 0 and m["catalog_texts_per_s"] > 0
