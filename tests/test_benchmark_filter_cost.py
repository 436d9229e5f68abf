"""benchmarks/filter_cost.py keeps running: a tiny run times every filter on both dense kinds."""

from __future__ import annotations

import json
import runpy
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "filter_cost.py"


def test_filter_cost_script_times_each_filter_against_the_unfiltered_search(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(SCRIPT.parent))  # the script imports its sibling scale
    module = runpy.run_path(str(SCRIPT), run_name="filter_cost_test")
    assert module["main"](["--tools", "300", "--queries", "5", "--out", str(tmp_path)]) == 0
    doc = json.loads((tmp_path / "filter_cost.json").read_text())
    rows = doc["rows"]
    assert {(r["index"], r["filter"]) for r in rows} == {
        (kind, name) for kind in ("flat", "hnsw") for name in module["FILTERS"]
    }
    assert all(r["median_ms"] > 0 for r in rows)
    assert all(r["ratio"] == 1.0 for r in rows if r["filter"] == "none")
    assert all(r["recall_at_5"] is not None for r in rows if r["index"] == "hnsw")
    first = {r["stage"].split(" (")[0]: r for r in doc["first_facet_filter"]}
    assert set(first) == {"first facet filter", "unfiltered meanwhile", "next facet filter", "unfiltered"}
    assert all(r["ms"] > 0 for r in doc["first_facet_filter"])
