"""benchmarks/hnsw_open.py keeps running: a tiny run times open + first search with and without the saved
HNSW graph, and after a writer's add and removal (each open attaching the graph the writer saved), and
writes its JSON."""

from __future__ import annotations

import json
import runpy
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "hnsw_open.py"


def test_hnsw_open_script_times_both_ways_in_one_run(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(SCRIPT.parent))  # the script imports its siblings scale and latency
    module = runpy.run_path(str(SCRIPT), run_name="hnsw_open_test")
    argv = ["--tools", "150", "--threshold", "50", "--repeats", "1", "--out", str(tmp_path)]
    assert module["main"](argv) == 0
    doc = json.loads((tmp_path / "hnsw_open.json").read_text())
    assert set(doc["runs"]) == {"saved graph", "graph built"}
    assert all(len(runs) == 1 and min(runs[0]) > 0 for runs in doc["runs"].values())
    assert 100 < doc["graph blob bytes per tool"] < 1000 and doc["same top-10"] is True
    assert set(doc["writer"]) == {"add 1 tool", "remove it"}
    assert all(run["writer s"] > 0 and run["graph built"] is False for run in doc["writer"].values())
