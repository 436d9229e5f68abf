"""What ``Retriever.sync_tools`` does to an index: which given tools are new, which changed, which are as
stored, and (with ``prune``) which indexed tools the given catalog no longer holds.

A tool is compared by its record, the JSON the store keeps (``Tool.model_dump_json()``): a tool whose
record is byte-equal to the stored one costs nothing, neither encoding nor a write.

>>> stored = {"a": b"1", "b": b"2", "z": b"9"}
>>> plan = plan_sync(["a", "b", "c"], [b"1", b"X", b"3"], stored, ["a", "b", "z"], prune=True)
>>> plan.report
SyncReport(added=['c'], updated=['b'], removed=['z'], unchanged=['a'])
>>> plan.changed  # positions in the given catalog that must be encoded and stored
[1, 2]
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from rated.store.base import LastToolError

__all__ = ["SyncPlan", "SyncReport", "plan_sync"]


@dataclass(frozen=True)
class SyncReport:
    """The ids a sync added, updated in place (re-encoded, learned state kept), removed (``prune``) and
    left as they were, each in catalog order."""

    added: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        """Whether the sync changed the stored catalog at all."""
        return bool(self.added or self.updated or self.removed)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class SyncPlan:
    report: SyncReport
    changed: list[int]  # positions in the given catalog of the added and updated tools, in its order


def plan_sync(
    ids: Sequence[str],
    digests: Sequence[bytes],
    stored: Mapping[str, bytes],
    pool: Sequence[str],
    prune: bool,
) -> SyncPlan:
    """Compare the given tools (``ids`` with their records' ``digests``) with the ``stored`` digests of the
    index's ``pool`` (its ids in catalog order). ``LastToolError`` when ``prune`` would remove every
    indexed tool: a catalog sharing no id with the index is more likely the wrong file than a sync, and
    replacing a whole catalog is a rebuild (``rated index --force``)."""
    added: list[str] = []
    updated: list[str] = []
    unchanged: list[str] = []
    changed: list[int] = []
    for i, (tool_id, digest) in enumerate(zip(ids, digests, strict=True)):
        old = stored.get(tool_id)
        if old == digest:
            unchanged.append(tool_id)
            continue
        (added if old is None else updated).append(tool_id)
        changed.append(i)
    given = set(ids)
    removed = [tool_id for tool_id in pool if tool_id not in given] if prune else []
    if removed and len(removed) == len(pool):
        raise LastToolError(
            f"syncing with prune would remove every indexed tool ({len(pool)}): none of the "
            f"{len(ids)} given tools is indexed; replace a whole catalog with `rated index --force`"
        )
    return SyncPlan(SyncReport(added, updated, removed, unchanged), changed)
