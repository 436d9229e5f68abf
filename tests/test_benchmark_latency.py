"""benchmarks/latency.py keeps running: a tiny synthetic run with the fake encoder writes its JSON and PNG."""

from __future__ import annotations

import json
import runpy
import sys
from pathlib import Path

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
