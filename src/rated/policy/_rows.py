"""Keyed rows of float64 state, grown on demand, so that a policy gathers K candidates' state in one go.

Row 0 is a pristine row that every unknown key maps to: scoring needs no branch for tools that never
received feedback, and state is only allocated for keys that did.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

__all__ = ["KeyedRows"]


class KeyedRows:
    """A ``(capacity, width)`` scalar table plus optional ``(capacity, dim)`` vector tables, by key."""

    def __init__(self, pristine: np.ndarray, n_vectors: int = 0):
        self._pristine = np.asarray(pristine, dtype=np.float64).copy()
        self.scalars = self._pristine[None, :].repeat(8, axis=0)
        self.n_vectors = int(n_vectors)
        self.vectors: list[np.ndarray] = []  # allocated once the dimension is known
        self.index: dict[str, int] = {}
        self._free: list[int] = []
        self._next = 1

    @property
    def dim(self) -> int | None:
        return self.vectors[0].shape[1] if self.vectors else None

    def set_dim(self, dim: int) -> None:
        cap = len(self.scalars)
        self.vectors = [np.zeros((cap, int(dim))) for _ in range(self.n_vectors)]

    def __contains__(self, key: str) -> bool:
        return key in self.index

    def __iter__(self) -> Iterator[str]:
        return iter(self.index)

    def __len__(self) -> int:
        return len(self.index)

    def row(self, key: str) -> int:
        """The row of ``key``, allocated (pristine) on first use."""
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
        self.scalars[r] = self._pristine
        for v in self.vectors:
            v[r] = 0.0
        self.index[key] = r
        return r

    def drop(self, key: str) -> None:
        r = self.index.pop(key, None)
        if r is not None:
            self.scalars[r] = self._pristine
            for v in self.vectors:
                v[r] = 0.0
            self._free.append(r)

    def _grow(self) -> None:
        cap = len(self.scalars)
        self.scalars = np.concatenate([self.scalars, self._pristine[None, :].repeat(cap, axis=0)])
        self.vectors = [np.concatenate([v, np.zeros_like(v)]) for v in self.vectors]
