"""The generic on-disk benchmark format that every loader writes and every benchmark reads.

A dataset is a folder with ``tools.jsonl`` (one ``Tool`` per line) and ``queries.jsonl`` (one
``{"id", "text", "relevant": [tool ids], "split": "train"|"val"|"test"}`` per line; ``split`` defaults to
``test``). Extra files (``irrelevance.jsonl``, ``meta.json``) are allowed. Loading validates that every
label names a tool in the pool and reports every problem, never silently dropping one.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from rated.catalog.schema import Tool
from rated.errors import CatalogProblem, DataError
from rated.validation_text import pydantic_reason

__all__ = ["SPLITS", "Dataset", "Query", "load_dataset", "save_dataset"]

SPLITS = ("train", "val", "test")


@dataclass(frozen=True)
class Query:
    id: str
    text: str
    relevant: tuple[str, ...]
    split: str = "test"


@dataclass
class Dataset:
    name: str
    tools: list[Tool]
    queries: list[Query]
    meta: dict[str, Any] = field(default_factory=dict)

    def split(self, name: str) -> list[Query]:
        if name not in SPLITS:
            raise DataError(f"unknown split {name!r}; expected one of {', '.join(SPLITS)}")
        return [q for q in self.queries if q.split == name]

    @property
    def tool_ids(self) -> list[str]:
        return [t.id for t in self.tools]

    def validate(self) -> None:
        """Raise ``DataError`` listing every duplicate id, bad split or label outside the pool."""
        problems: list[str] = []
        seen: set[str] = set()
        for t in self.tools:
            if t.id in seen:
                problems.append(f"duplicate tool id {t.id!r}")
            seen.add(t.id)
        qids: set[str] = set()
        for q in self.queries:
            if q.id in qids:
                problems.append(f"duplicate query id {q.id!r}")
            qids.add(q.id)
            if not q.text.strip():
                problems.append(f"query {q.id!r}: empty text")
            if q.split not in SPLITS:
                problems.append(f"query {q.id!r}: unknown split {q.split!r}")
            if not q.relevant:
                problems.append(f"query {q.id!r}: no relevant tool")
            for tid in q.relevant:
                if tid not in seen:
                    problems.append(f"query {q.id!r}: relevant tool {tid!r} is not in the pool")
        if problems:
            shown = "\n".join(f"  - {p}" for p in problems[:20])
            more = f"\n  ... and {len(problems) - 20} more" if len(problems) > 20 else ""
            raise DataError(f"dataset {self.name!r} has {len(problems)} problem(s):\n{shown}{more}")


def _read_jsonl(path: Path) -> Iterable[tuple[int, dict[str, Any]]]:
    with path.open("rb") as fh:  # bytes, decoded per line: a bad byte is reported with its line
        for lineno, raw in enumerate(fh, 1):
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError:
                raise DataError(f"{path}: line {lineno}: not UTF-8 text") from None
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as exc:
                raise DataError(f"{path}: line {lineno}: invalid JSON ({exc.msg})") from None
            if not isinstance(obj, dict):
                raise DataError(f"{path}: line {lineno}: expected a JSON object")
            yield lineno, obj


def _read_meta(path: Path) -> dict[str, Any]:
    if not path.is_file():
        return {}
    try:
        meta = json.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError:
        raise DataError(f"{path}: not UTF-8 text") from None
    except json.JSONDecodeError as exc:
        raise DataError(f"{path}: invalid JSON ({exc.msg}, line {exc.lineno})") from None
    if not isinstance(meta, dict):
        raise DataError(f"{path}: expected a JSON object, got {type(meta).__name__}")
    return meta


def load_dataset(directory: str | Path) -> Dataset:
    """Read and validate a dataset folder."""
    root = Path(directory)
    if not root.is_dir():
        what = "is a file, not a folder" if root.exists() else "not found"
        raise DataError(f"dataset folder {root} {what} (it holds tools.jsonl and queries.jsonl)")
    tools_path, queries_path = root / "tools.jsonl", root / "queries.jsonl"
    for p in (tools_path, queries_path):
        if not p.is_file():
            raise DataError(f"{p} not found (a dataset folder holds tools.jsonl and queries.jsonl)")
    tools: list[Tool] = []
    problems: list[CatalogProblem] = []
    for lineno, obj in _read_jsonl(tools_path):
        try:
            tools.append(Tool.model_validate(obj))
        except ValidationError as exc:
            for err in exc.errors():
                loc = ".".join(str(x) for x in err["loc"])
                problems.append(CatalogProblem(f"line {lineno}", loc, pydantic_reason(err)))
    if problems:
        raise DataError(
            f"{tools_path}: {len(problems)} invalid tool record(s): " + "; ".join(map(str, problems[:10]))
        )
    queries: list[Query] = []
    for lineno, obj in _read_jsonl(queries_path):
        try:
            rel = obj["relevant"]
            if isinstance(rel, str) or not isinstance(rel, Sequence):
                raise TypeError("relevant must be a list of tool ids")
            queries.append(
                Query(
                    id=str(obj["id"]),
                    text=str(obj["text"]),
                    relevant=tuple(str(r) for r in rel),
                    split=str(obj.get("split") or "test"),
                )
            )
        except (KeyError, TypeError) as exc:
            raise DataError(f"{queries_path}: line {lineno}: {exc}") from None
    meta = _read_meta(root / "meta.json")
    ds = Dataset(name=str(meta.get("name") or root.name), tools=tools, queries=queries, meta=meta)
    ds.validate()
    return ds


def save_dataset(dataset: Dataset, directory: str | Path) -> Path:
    """Validate, then write ``tools.jsonl``, ``queries.jsonl`` and ``meta.json`` into ``directory``."""
    dataset.validate()
    root = Path(directory)
    root.mkdir(parents=True, exist_ok=True)
    with (root / "tools.jsonl").open("w", encoding="utf-8") as fh:
        for t in dataset.tools:
            fh.write(t.model_dump_json(exclude_defaults=True) + "\n")
    with (root / "queries.jsonl").open("w", encoding="utf-8") as fh:
        for q in dataset.queries:
            fh.write(
                json.dumps({"id": q.id, "text": q.text, "relevant": list(q.relevant), "split": q.split})
                + "\n"
            )
    (root / "meta.json").write_text(json.dumps({"name": dataset.name, **dataset.meta}, indent=2))
    return root
