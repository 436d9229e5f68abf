"""Base for the lexical indexes: string-id'd documents in insertion order, each tokenized once.

A change of the pool hands the subclass the new documents' tokens, or the positions that remain, and
never tokenizes the other documents again: re-reading every text, not the scoring model, is what an add
or a remove cost before (seconds for a catalog of tens of thousands of tools). For the same reason an
index can be exported to plain arrays and restored from them (``rated.index.snapshot``): a process that
opens a large catalog need not tokenize it again.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from rated.index.ids import check_known_ids, check_new_ids

__all__ = ["RefitTextIndex", "pack_terms", "unpack_terms"]

Arrays = Mapping[str, np.ndarray]


def pack_terms(terms: Sequence[str]) -> np.ndarray:
    """Terms as one UTF-8 byte array, newline-separated (a token never holds a newline: it is a word)."""
    text = "\n".join(terms)
    if text.count("\n") != max(len(terms) - 1, 0):
        raise ValueError("a term holds a newline")
    return np.frombuffer(text.encode("utf-8"), dtype=np.uint8)


def unpack_terms(packed: np.ndarray, expected: int | None = None) -> list[str]:
    """The terms ``pack_terms`` packed; ``ValueError`` when there are not ``expected`` of them."""
    raw = np.asarray(packed)
    if raw.dtype != np.uint8 or raw.ndim != 1:
        raise ValueError(f"packed terms must be a 1-d uint8 array, got {raw.dtype} {raw.shape}")
    text = raw.tobytes().decode("utf-8")
    terms = text.split("\n") if text else []
    if expected is not None and len(terms) != expected:
        raise ValueError(f"expected {expected} terms, found {len(terms)}")
    return terms


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

    def export(self) -> dict[str, np.ndarray]:
        """What ``restore`` needs besides the ids, as plain arrays (saved without pickle)."""
        raise NotImplementedError

    def restore(self, ids: Sequence[str], arrays: Arrays) -> None:
        """Become, while empty, the index that ``export`` described, over ``ids``. ``ValueError`` (and no
        change) when the arrays do not describe an index of ``len(ids)`` documents."""
        if self._ids:
            raise ValueError("only an empty index can be restored")
        check_new_ids(ids, ())
        self._ids = list(ids)  # first: a subclass may refit over them
        self._pos = {tool_id: p for p, tool_id in enumerate(self._ids)}
        try:
            self._restored(len(ids), arrays)
        except BaseException:
            self._ids, self._pos = [], {}
            raise

    def _restored(self, n: int, arrays: Arrays) -> None:
        """Check ``arrays`` and take them in as the state of the ``n`` documents of ``_ids`` (raise before
        changing anything)."""
        raise NotImplementedError

    def _added(self, tokens: list[list[str]]) -> None:
        """Take in the ``tokens`` of the documents just appended to ``_ids``."""
        raise NotImplementedError

    def _removed(self, keep: np.ndarray) -> None:
        """Only the documents at the old positions ``keep`` (ascending) remain."""
        raise NotImplementedError
