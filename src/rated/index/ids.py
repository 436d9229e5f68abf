"""Id bookkeeping shared by the indexes."""

from __future__ import annotations

from collections.abc import Container, Iterable

from rated.errors import CatalogError, UnknownToolError

__all__ = ["check_known_ids", "check_new_ids"]


def check_new_ids(ids: Iterable[str], existing: Container[str]) -> None:
    """Raise ``CatalogError`` naming every id that is already indexed or repeated in ``ids``."""
    seen: set[str] = set()
    dupes: set[str] = set()
    for tool_id in ids:
        if tool_id in existing or tool_id in seen:
            dupes.add(tool_id)
        seen.add(tool_id)
    if dupes:
        shown = ", ".join(map(repr, sorted(dupes)[:10]))
        raise CatalogError(f"duplicate tool id(s): {shown}" + (" ..." if len(dupes) > 10 else ""))


def check_known_ids(ids: Iterable[str], known: Container[str]) -> None:
    """Raise ``UnknownToolError`` for the first id in ``ids`` that is not in ``known``."""
    for tool_id in ids:
        if tool_id not in known:
            raise UnknownToolError(tool_id)
