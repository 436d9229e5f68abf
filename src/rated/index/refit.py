"""Base for the lexical indexes: string-id'd documents in insertion order, each tokenized once.

A change of the pool hands the subclass the new documents' tokens, or the positions that remain, and
never tokenizes the other documents again: re-reading every text, not the scoring model, is what an add
or a remove cost before (seconds for a catalog of tens of thousands of tools).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from rated.index.ids import check_known_ids, check_new_ids

__all__ = ["RefitTextIndex"]


class RefitTextIndex:
    """Ids in insertion order; subclasses keep what they score (counts, or the tokens themselves)."""

    def __init__(self) -> None:
        self._ids: list[str] = []
        self._pos: dict[str, int] = {}

    def __len__(self) -> int:
        return len(self._ids)

    @property
    def ids(self) -> list[str]:
        return list(self._ids)

    def tokens(self, text: str) -> list[str]:
        """A text's tokens, as the subclass indexes and queries them."""
        raise NotImplementedError

    def add(self, ids: Sequence[str], texts: Sequence[str]) -> None:
        """Append tools; an id already present (or repeated in ``ids``) is a ``CatalogError``."""
        if len(ids) != len(texts):
            raise ValueError(f"{len(ids)} ids but {len(texts)} texts")
        check_new_ids(ids, self._pos)
        tokens = [self.tokens(t) for t in texts]  # before any change: a failing tokenizer changes nothing
        start = len(self._ids)
        self._ids.extend(ids)
        self._pos.update((tool_id, start + i) for i, tool_id in enumerate(ids))
        self._added(tokens)

    def remove(self, ids: Sequence[str]) -> None:
        """Drop tools by id (an unknown id raises ``UnknownToolError`` and changes nothing)."""
        check_known_ids(ids, self._pos)
        drop = set(ids)
        keep = [p for p, tool_id in enumerate(self._ids) if tool_id not in drop]
        self._ids = [self._ids[p] for p in keep]
        self._pos = {tool_id: p for p, tool_id in enumerate(self._ids)}
        self._removed(np.asarray(keep, dtype=np.int64))

    def _added(self, tokens: list[list[str]]) -> None:
        """Take in the ``tokens`` of the documents just appended to ``_ids``."""
        raise NotImplementedError

    def _removed(self, keep: np.ndarray) -> None:
        """Only the documents at the old positions ``keep`` (ascending) remain."""
        raise NotImplementedError
