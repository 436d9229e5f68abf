"""benchmarks/toolbox_add.py keeps running: a tiny run times Toolbox.add_tools, Retriever.add_tools and the
Toolbox of a git revision (here HEAD) for the same new tools, and prints a ratio for each."""

from __future__ import annotations

import runpy
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "toolbox_add.py"


@pytest.mark.parametrize("store", ["memory", "sqlite"])
def test_toolbox_add_script_times_the_toolbox_against_the_retriever(capsys, store):
    module = runpy.run_path(str(SCRIPT), run_name="toolbox_add_test")
    argv = ["--sizes", "30,60", "--add", "2", "--rounds", "1", "--store", store]
    if (SCRIPT.parents[1] / ".git").exists():
        argv += ["--before", "HEAD"]
    assert module["main"](argv) == 0
    out = capsys.readouterr().out
    for size in ("30", "60"):
        assert f"{size} tools  Retriever.add_tools" in out and f"{size} tools  Toolbox.add_tools " in out
        assert (f"{size} tools  Toolbox.add_tools (HEAD)" in out) == ("--before" in argv)
    assert out.count(" x1.00") >= 2  # the retriever's own ratio, once per size
