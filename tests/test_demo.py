"""The demo's tuned settings come from the documented results, one ``--set`` per tuned parameter."""

import json
from pathlib import Path

from rated.demo import _tuned_settings

RESULTS = Path(__file__).resolve().parents[1] / "docs" / "dynamic-benchmark" / "results.json"


def test_tuned_settings_are_the_documented_ones_as_set_options():
    args = _tuned_settings("bfcl-outages-0.2")
    assert args[::2] == ["--set"] * (len(args) // 2)
    pairs = dict(a.split("=", 1) for a in args[1::2])
    documented = json.loads(RESULTS.read_text())["bfcl-outages-0.2"]["methods"]
    assert pairs["breaker.cooldown"] == str(documented["breaker"]["params"]["cooldown"])
    assert pairs["rated.utility"] == str(documented["rated"]["params"]["utility"])
    assert not any(key.startswith("rated_prev.") for key in pairs)  # a documentation-only variant
