"""Base for the lexical indexes, which keep their texts and refit their model on every add or remove.

For catalogs of thousands of tools a refit takes milliseconds and needs no encoder, so keeping the texts
and rebuilding beats incremental bookkeeping in each scorer.
"""

from __future__ import annotations

from collections.abc import Sequence

from rated.index.ids import check_known_ids, check_new_ids

__all__ = ["RefitTextIndex"]


class RefitTextIndex:
    """String-id'd texts in insertion order; subclasses implement ``_refit`` over ``_ids``/``_texts``."""

    def __init__(self) -> None:
        self._ids: list[str] = []
        self._texts: list[str] = []
        self._pos: dict[str, int] = {}

    def __len__(self) -> int:
        return len(self._ids)

    @property
    def ids(self) -> list[str]:
        return list(self._ids)

    def add(self, ids: Sequence[str], texts: Sequence[str]) -> None:
        """Append tools; an id already present (or repeated in ``ids``) is a ``CatalogError``."""
        if len(ids) != len(texts):
            raise ValueError(f"{len(ids)} ids but {len(texts)} texts")
        check_new_ids(ids, self._pos)
        self._ids.extend(ids)
        self._texts.extend(texts)
        self._reindex()

    def remove(self, ids: Sequence[str]) -> None:
        """Drop tools by id (an unknown id raises ``UnknownToolError`` and changes nothing)."""
        check_known_ids(ids, self._pos)
        drop = set(ids)
        kept = [(i, t) for i, t in zip(self._ids, self._texts, strict=True) if i not in drop]
        self._ids = [i for i, _ in kept]
        self._texts = [t for _, t in kept]
        self._reindex()

    def _reindex(self) -> None:
        self._pos = {tool_id: p for p, tool_id in enumerate(self._ids)}
        self._refit()

    def _refit(self) -> None:
        """Rebuild the scoring model from ``_ids`` and ``_texts`` (both may be empty)."""
        raise NotImplementedError
