"""Keyed rows of state, grown on demand, so that a policy gathers K candidates' state in one ``take``.

Row 0 is a pristine row that every unknown key maps to: scoring needs no branch for keys that never
received feedback, and state is only allocated for keys that did. An optional vector table (one row per
key, allocated once its width is known) sits beside the scalar table.
"""

from __future__ import annotations

import numpy as np

__all__ = ["KeyedRows"]


class KeyedRows:
    """A ``(capacity, width)`` float64 scalar table and an optional float32 vector table, by key."""

    def __init__(self, pristine: np.ndarray):
        self._pristine = np.asarray(pristine, dtype=np.float64).copy()
        self.scalars = self._pristine[None, :].repeat(8, axis=0)
        self.vectors: np.ndarray | None = None
        self._pristine_vec: np.ndarray | None = None
        self.index: dict[str, int] = {}
        self._free: list[int] = []
        self._next = 1

    @property
    def vector_width(self) -> int | None:
        return None if self.vectors is None else int(self.vectors.shape[1])

    def set_vector_width(self, pristine: np.ndarray) -> None:
        """Allocate the vector table; every row (and unknown keys) starts as ``pristine``."""
        self._pristine_vec = np.asarray(pristine, dtype=np.float32).copy()
        self.vectors = self._pristine_vec[None, :].repeat(len(self.scalars), axis=0)

    def row(self, key: str) -> int:
        """The row of ``key``, allocated (pristine) on first use. May grow the tables: index after."""
        r = self.index.get(key)
        if r is not None:
            return r
        if self._free:
            r = self._free.pop()
        else:
            r = self._next
            self._next += 1
            if r >= len(self.scalars):
                self._grow()
        self._reset(r)
        self.index[key] = r
        return r

    def drop(self, key: str) -> None:
        r = self.index.pop(key, None)
        if r is not None:
            self._reset(r)
            self._free.append(r)

    def _reset(self, r: int) -> None:
        self.scalars[r] = self._pristine
        if self.vectors is not None:
            self.vectors[r] = self._pristine_vec

    def _grow(self) -> None:
        cap = len(self.scalars)
        self.scalars = np.concatenate([self.scalars, self._pristine[None, :].repeat(cap, axis=0)])
        if self.vectors is not None:
            self.vectors = np.concatenate([self.vectors, self._pristine_vec[None, :].repeat(cap, axis=0)])
