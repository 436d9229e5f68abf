"""Loaders that turn public tool-retrieval benchmarks into the generic ``Dataset`` format.

``prepare(name, out, distractors=None)`` converts, optionally adds an external catalog as distractors,
validates and writes the folder (``tools.jsonl``, ``queries.jsonl``, ``meta.json``, ``irrelevance.jsonl``
where the benchmark has queries with no correct tool, ``problems.txt`` listing what was left out).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from rated.bench.dataset import save_dataset
from rated.bench.datasets.bfcl import load_bfcl
from rated.bench.datasets.common import Prepared, add_distractors, write_jsonl
from rated.bench.datasets.metatool import load_metatool
from rated.bench.datasets.stabletoolbench import load_stabletoolbench
from rated.errors import DataError

__all__ = ["LOADERS", "Prepared", "load", "prepare"]

LOADERS: dict[str, Callable[[], Prepared]] = {
    "bfcl": load_bfcl,
    "stabletoolbench": lambda: load_stabletoolbench("api"),
    "stabletoolbench-tool": lambda: load_stabletoolbench("tool"),
    "metatool": load_metatool,
}


def load(name: str, distractors: str | Path | None = None) -> Prepared:
    """Convert benchmark ``name`` in memory; ``distractors`` is a catalog file whose tools join the pool."""
    if name not in LOADERS:
        raise DataError(f"unknown benchmark {name!r}; expected one of {', '.join(LOADERS)}")
    prepared = LOADERS[name]()
    if distractors is not None:
        from rated.catalog.loaders import load_catalog

        extra = load_catalog(distractors)
        prepared.dataset = add_distractors(prepared.dataset, extra, prepared.problems)
        prepared.dataset.meta["distractors"] = str(distractors)
    prepared.dataset.validate()
    return prepared


def prepare(name: str, out: str | Path, distractors: str | Path | None = None) -> Prepared:
    """Convert benchmark ``name`` and write it to ``out``."""
    prepared = load(name, distractors)
    prepared.dataset.meta["n_problems"] = len(prepared.problems)
    root = save_dataset(prepared.dataset, out)
    irrelevance = root / "irrelevance.jsonl"
    if prepared.irrelevance:
        write_jsonl(prepared.irrelevance, irrelevance)
    elif irrelevance.exists():
        irrelevance.unlink()
    (root / "problems.txt").write_text("".join(p + "\n" for p in prepared.problems.items), encoding="utf-8")
    return prepared
