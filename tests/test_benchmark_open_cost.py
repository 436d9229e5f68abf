"""benchmarks/open_cost.py keeps running: a tiny run against a second checkout (here the same one) times
open, the first search and the listing in fresh processes, checks the answers agree, and prints ratios."""

from __future__ import annotations

import runpy
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "open_cost.py"


def test_open_cost_script_compares_two_checkouts_in_one_run(monkeypatch, capsys):
    monkeypatch.syspath_prepend(str(SCRIPT.parent))  # the script imports its siblings scale and latency
    module = runpy.run_path(str(SCRIPT), run_name="open_cost_test")
    src = str(SCRIPT.parents[1] / "src")
    argv = ["--sizes", "120", "--repeats", "1", "--source", "synthetic", "--compare", src]
    assert module["main"](argv) == 0
    out = capsys.readouterr().out
    assert "120 tools" in out and "answers identical in every run" in out
    for measure in ("open + first search", "first tools()", "retrieve", "rss tools"):
        assert measure in out
    assert out.count("compare/this") == 5  # the times, not the memory
