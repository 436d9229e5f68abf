"""Keyed rows of state, grown on demand: a key's scalars as one plain list of floats, its vector as a row.

Row 0 is a pristine row that every unknown key maps to: scoring needs no branch for keys that never
received feedback, and state is only allocated for keys that did. The scalars of a row are a Python list,
not a row of a NumPy table: scoring reads a handful of rows per ranking, field by field, and a list
costs one index where a table costs a gather and a ``tolist`` (several microseconds per ranking). An
optional float32 vector table (one row per key, allocated once its width is known) sits beside them.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = ["KeyedRows"]


class KeyedRows:
    """Per-key scalar rows (``scalars[row]``, a list of floats) and an optional float32 vector table."""

    def __init__(self, pristine: Sequence[float]):
        self._pristine = [float(v) for v in pristine]
        self.scalars: list[list[float]] = [list(self._pristine)]  # row 0: every unknown key; never written
        self.vectors: np.ndarray | None = None
        self._pristine_vec: np.ndarray | None = None
        self.index: dict[str, int] = {}
        self._free: list[int] = []

    @property
    def vector_width(self) -> int | None:
        return None if self.vectors is None else int(self.vectors.shape[1])

    def set_vector_width(self, pristine: np.ndarray) -> None:
        """Allocate the vector table; every row (and unknown keys) starts as ``pristine``."""
        self._pristine_vec = np.asarray(pristine, dtype=np.float32).copy()
        self.vectors = self._pristine_vec[None, :].repeat(max(8, len(self.scalars)), axis=0)

    def row(self, key: str) -> int:
        """The row of ``key``, allocated (pristine) on first use. May grow the vector table: index after."""
        r = self.index.get(key)
        if r is not None:
            return r
        if self._free:
            r = self._free.pop()
            self._reset(r)
        else:
            r = len(self.scalars)
            self.scalars.append(list(self._pristine))
            if self.vectors is not None and r >= len(self.vectors):
                self._grow()
        self.index[key] = r
        return r

    def write(self, r: int, values: Sequence[float]) -> None:
        """Set the scalars of row ``r`` (> 0), as plain floats (a NumPy scalar in the list would turn the
        arithmetic that reads it into its own precision)."""
        self.scalars[r] = list(map(float, values))

    def drop(self, key: str) -> None:
        r = self.index.pop(key, None)
        if r is not None:
            self._reset(r)
            self._free.append(r)

    def _reset(self, r: int) -> None:
        self.scalars[r] = list(self._pristine)
        if self.vectors is not None:
            self.vectors[r] = self._pristine_vec

    def _grow(self) -> None:
        vectors, pristine = self.vectors, self._pristine_vec
        if vectors is None or pristine is None:  # no vector table yet: nothing to grow
            return
        self.vectors = np.concatenate([vectors, pristine[None, :].repeat(len(vectors), axis=0)])
