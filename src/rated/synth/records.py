"""The hand-off types of the synthetic-query pipeline and their JSONL form.

A ``SynthQuery`` is one training pair (query text -> positive tool) with its mined negatives and split; a
``Generation`` is what a generator returned for one tool, before any filter.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from rated.errors import DataError

__all__ = ["Generation", "SynthQuery", "read_pairs", "write_pairs"]


@dataclass(frozen=True)
class Generation:
    """One generator answer for one tool: parsed queries, the raw text, and an error when it failed."""

    tool_id: str
    queries: tuple[str, ...] = ()
    raw: str = ""
    error: str | None = None
    seconds: float = 0.0
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.error is None


@dataclass(frozen=True)
class SynthQuery:
    """One synthetic query for one tool; ``group`` is the tool's duplicate group (its id when it has none)."""

    id: str
    text: str
    tool_id: str
    group: str
    split: str = "train"
    hard_negatives: tuple[str, ...] = ()
    random_negatives: tuple[str, ...] = ()
    generator: str = ""
    model: str = ""

    def to_json(self) -> str:
        obj = asdict(self)
        obj["hard_negatives"] = list(self.hard_negatives)
        obj["random_negatives"] = list(self.random_negatives)
        return json.dumps(obj, ensure_ascii=False)

    @classmethod
    def from_dict(cls, obj: dict[str, Any]) -> SynthQuery:
        return cls(
            id=str(obj["id"]),
            text=str(obj["text"]),
            tool_id=str(obj["tool_id"]),
            group=str(obj.get("group") or obj["tool_id"]),
            split=str(obj.get("split") or "train"),
            hard_negatives=tuple(str(x) for x in obj.get("hard_negatives") or ()),
            random_negatives=tuple(str(x) for x in obj.get("random_negatives") or ()),
            generator=str(obj.get("generator") or ""),
            model=str(obj.get("model") or ""),
        )


def write_pairs(records: list[SynthQuery], path: str | Path) -> Path:
    """Write ``records`` as JSONL atomically (a temporary file renamed into place)."""
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".tmp")
    with tmp.open("w", encoding="utf-8") as fh:
        for rec in records:
            fh.write(rec.to_json() + "\n")
    tmp.replace(out)
    return out


def _iter_pairs(path: Path) -> Iterator[SynthQuery]:
    with path.open(encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                yield SynthQuery.from_dict(json.loads(line))
            except (json.JSONDecodeError, KeyError, TypeError) as exc:
                raise DataError(f"{path}: line {lineno}: not a synthetic query record ({exc})") from None


def read_pairs(path: str | Path) -> list[SynthQuery]:
    """Read a pairs file written by ``rated synth``; raises ``DataError`` naming the bad line."""
    p = Path(path)
    if not p.is_file():
        raise DataError(f"{p} not found (expected the JSONL written by `rated synth`)")
    return list(_iter_pairs(p))
