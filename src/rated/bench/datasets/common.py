"""Helpers every benchmark loader shares: seeded query-level splits, label checks, distractor tools."""

from __future__ import annotations

import json
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from rated.bench.dataset import SPLITS, Dataset, Query
from rated.catalog.schema import Tool
from rated.errors import DataError
from rated.paths import data_dir

__all__ = [
    "Problems",
    "Prepared",
    "add_distractors",
    "assign_splits",
    "check_labels",
    "data_root",
    "read_json",
    "require_file",
    "write_jsonl",
]


@dataclass
class Problems:
    """Defects found while converting a benchmark: each is reported (and counted), none silently dropped."""

    items: list[str] = field(default_factory=list)

    def add(self, message: str) -> None:
        if message not in self.items[-50:]:  # the same defect met again (e.g. one API in many queries)
            self.items.append(message)

    def __len__(self) -> int:
        return len(self.items)


@dataclass
class Prepared:
    """A converted benchmark: the dataset, queries that have no correct tool, and the problems found."""

    dataset: Dataset
    irrelevance: list[dict[str, str]] = field(default_factory=list)
    problems: Problems = field(default_factory=Problems)


def assign_splits(
    keys: Sequence[str],
    fractions: tuple[float, float, float],
    seed: int,
    strata: Sequence[Hashable] | None = None,
) -> list[str]:
    """A fixed train/val/test label per key: keys are sorted, shuffled with ``seed`` and cut by
    ``fractions`` (within each stratum when ``strata`` is given, so every stratum is spread over the splits).
    The result depends only on the keys, not on their input order."""
    if len(fractions) != 3 or abs(sum(fractions) - 1.0) > 1e-9 or min(fractions) < 0:
        raise DataError(f"split fractions must be three non-negative numbers summing to 1, got {fractions}")
    groups: dict[Hashable, list[int]] = {}
    for i, _ in enumerate(keys):
        groups.setdefault(strata[i] if strata is not None else 0, []).append(i)
    out = [""] * len(keys)
    rng = np.random.default_rng(seed)
    for stratum in sorted(groups, key=str):
        members = sorted(groups[stratum], key=lambda i: keys[i])
        order = rng.permutation(len(members))
        n = len(members)
        cut1 = int(round(n * fractions[0]))
        cut2 = int(round(n * (fractions[0] + fractions[1])))
        for rank, j in enumerate(order):
            out[members[j]] = SPLITS[0] if rank < cut1 else SPLITS[1] if rank < cut2 else SPLITS[2]
    return out


def check_labels(queries: Sequence[Query], pool: set[str], problems: Problems) -> list[Query]:
    """Queries whose labels all name pool tools; every other one is reported in ``problems`` and left out."""
    kept = []
    for q in queries:
        missing = [t for t in q.relevant if t not in pool]
        if not q.text.strip():
            problems.add(f"query {q.id!r}: empty text, left out")
        elif not q.relevant:
            problems.add(f"query {q.id!r}: no relevant tool, left out")
        elif missing:
            problems.add(f"query {q.id!r}: relevant tool(s) {missing} not in the pool, left out")
        else:
            kept.append(q)
    return kept


def add_distractors(dataset: Dataset, tools: Sequence[Tool], problems: Problems) -> Dataset:
    """Append ``tools`` (e.g. the EcoAgent catalog) to the pool as distractors, never as labels.

    A distractor whose id is already in the pool is renamed ``distractor:<id>`` (reported), so labels keep
    pointing at the benchmark's own tools."""
    pool = {t.id for t in dataset.tools}
    added: list[Tool] = []
    for tool in tools:
        if tool.id in pool:
            new_id = f"distractor:{tool.id}"
            problems.add(f"distractor {tool.id!r} clashes with a benchmark tool id; renamed {new_id!r}")
            tool = tool.model_copy(update={"id": new_id})
        if tool.id in pool:
            problems.add(f"distractor {tool.id!r} repeated; skipped")
            continue
        pool.add(tool.id)
        added.append(tool)
    meta = dict(dataset.meta)
    meta["n_distractors"] = meta.get("n_distractors", 0) + len(added)
    return Dataset(name=dataset.name, tools=[*dataset.tools, *added], queries=dataset.queries, meta=meta)


def write_jsonl(rows: Sequence[dict], path: Path) -> None:
    with path.open("w", encoding="utf-8") as fh:
        for row in rows:
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")


def data_root(root: Path | None, name: str) -> Path:
    """``root`` when given, else ``data_dir()/name``; a ``DataError`` says what to set when neither is."""
    if root is not None:
        return root
    base = data_dir()
    if base is None:
        raise DataError(f"no data directory: set RATED_DATA_DIR to the folder holding {name}/")
    return base / name


def require_file(path: Path) -> Path:
    """``path``, or a ``DataError`` pointing at the data README when it is missing."""
    if not path.is_file():
        raise DataError(f"{path} not found (see shared/data/README.md)")
    return path


def read_json(path: Path) -> Any:
    """A benchmark JSON file, with a ``DataError`` naming the file when it is missing or invalid."""
    try:
        return json.loads(require_file(path).read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise DataError(f"{path}: invalid JSON ({exc.msg})") from None
