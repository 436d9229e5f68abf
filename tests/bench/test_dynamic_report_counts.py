"""The dynamic benchmark's report heading counts seeds and steps as people read them: ``1 seed``,
``3 seeds`` (``rated bench dynamic --seeds 1`` printed ``1 seeds``)."""

from __future__ import annotations

from typing import Any

import pytest

from rated.bench.dynamic.report import markdown_table


def report(seeds: int, steps: int) -> dict[str, Any]:
    return {
        "dataset": "demo",
        "scenario": "outage",
        "failure_rate": 0.2,
        "stream": "repeat",
        "steps": steps,
        "onset": 0,
        "query_repetition_rate": {"mean": 0.5},
        "seeds": list(range(seeds)),
        "probes": {"interval": None},
        "methods": {},
    }


@pytest.mark.parametrize(
    ("seeds", "steps", "expected"),
    [(1, 1, ("(1 step,", "1 seed,")), (3, 200, ("(200 steps,", "3 seeds,"))],
)
def test_the_heading_counts_in_the_singular_for_one(
    seeds: int, steps: int, expected: tuple[str, ...]
) -> None:
    head = markdown_table(report(seeds, steps)).splitlines()[0]
    assert all(part in head for part in expected), head


def test_the_shared_helper_examples() -> None:
    import doctest

    import rated.plural

    assert doctest.testmod(rated.plural).failed == 0
