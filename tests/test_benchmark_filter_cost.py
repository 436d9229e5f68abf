"""benchmarks/filter_cost.py keeps running: a tiny run times every filter on both dense kinds."""

from __future__ import annotations

import json
import runpy
import subprocess
from pathlib import Path

import pytest

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


FACETS = SCRIPT.parent / "filter_cost_facets.py"


def facets_module(monkeypatch) -> dict:
    """benchmarks/filter_cost_facets.py's globals (it imports its sibling scale)."""
    monkeypatch.syspath_prepend(str(FACETS.parent))
    return runpy.run_path(str(FACETS), run_name="filter_cost_facets_test")


def test_filter_cost_facets_script_times_both_variants_and_the_snapshot_parses_no_pool(tmp_path, monkeypatch):
    module = facets_module(monkeypatch)
    assert module["main"](["--tools", "300", "--rounds", "1", "--out", str(tmp_path)]) == 0
    doc = json.loads((tmp_path / "filter_cost_facets.json").read_text())
    rows = {r["stage"]: r for r in doc["rows"]}
    assert set(rows) == set(module["STAGES"])
    assert all(r["parse_ms"] > 0 and r["snapshot_ms"] > 0 for r in rows.values())
    first = rows["first facet filter"]
    assert first["parse_parsed"] > 150  # every record but those the unfiltered queries parsed for hits
    assert first["snapshot_parsed"] < 20  # at most the candidates' records, for the hits
    assert rows["after own add"]["snapshot_parsed"] == 0  # the added tool came parsed
    assert rows["replica after add"]["snapshot_parsed"] <= 1


def test_filter_cost_facets_snapshot_variant_is_the_retrievers_own_pool_filter(monkeypatch):
    """Not a copy of it: a copy had gone on passing the last pool's whole filter after the retriever
    changed to keep its facet table alone."""
    from rated.retriever import Retriever

    assert facets_module(monkeypatch)["from_snapshot"] is Retriever._current_pool_filter


OLD = "e03c3b6"  # the first revision with the facet snapshot: its PoolFilter has no latest_facets yet


def test_filter_cost_facets_before_a_revision_whose_pool_filter_has_no_latest_facets(monkeypatch):
    """``--before`` such a revision failed at the first add (the retriever reads ``latest_facets`` of the
    pool filter it drops)."""
    known = subprocess.run(["git", "cat-file", "-e", f"{OLD}^{{commit}}"], cwd=FACETS.parents[1], check=False)
    if known.returncode != 0:
        pytest.skip(f"{OLD} is not in this checkout's history")
    old = facets_module(monkeypatch)["old_pool_filter"](OLD)
    assert old.latest_facets is None
