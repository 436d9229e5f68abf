"""The dynamic reliability benchmark: a query stream, failing tools, and re-rankers that learn from outcomes.

``run_benchmark(Env.from_dataset(dataset), BenchConfig(ScenarioConfig("outages")), methods)`` runs every
method on the same streams (paired seeds); ``report.to_json`` / ``markdown_table`` / ``plot_curves`` turn
the result into the JSON, table and PNG that ``rated bench dynamic`` writes. See docs/dynamic-benchmark.md.
"""

from rated.bench.dynamic.candidates import RETRIEVERS, CandidateTable, build_table
from rated.bench.dynamic.report import markdown_table, plot_curves, to_json
from rated.bench.dynamic.runner import (
    BenchConfig,
    BenchResult,
    Env,
    MethodSpec,
    prepare,
    run_benchmark,
    seeds_for,
)
from rated.bench.dynamic.scenarios import SCENARIOS, ScenarioConfig, World, make_scenario
from rated.bench.dynamic.schedule import Schedule
from rated.bench.dynamic.toy import toy_dataset
from rated.bench.dynamic.tuning import GRIDS, tune, tune_all

__all__ = [
    "GRIDS",
    "RETRIEVERS",
    "SCENARIOS",
    "BenchConfig",
    "BenchResult",
    "CandidateTable",
    "Env",
    "MethodSpec",
    "ScenarioConfig",
    "Schedule",
    "World",
    "build_table",
    "make_scenario",
    "markdown_table",
    "plot_curves",
    "prepare",
    "run_benchmark",
    "seeds_for",
    "to_json",
    "toy_dataset",
    "tune",
    "tune_all",
]
