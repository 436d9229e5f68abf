"""A small in-process LRU of query embeddings.

Agents repeat requests (a planner re-asks for the same sub-task, retries re-send the same query), and the
query encoder is most of a retrieval's time, so a repeated query should not pay it again. Keys are the
exact query text; values are read-only float32 rows. Thread-safe: the HTTP service calls ``retrieve``
from several threads.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence

import numpy as np

from rated.errors import ConfigError

__all__ = ["DEFAULT_QUERY_CACHE", "QueryCache"]

DEFAULT_QUERY_CACHE = 1024  # embeddings kept (1.5 MB at 384 dimensions)


class QueryCache:
    """Up to ``size`` recently used query embeddings; ``size=0`` turns caching off."""

    def __init__(self, size: int = DEFAULT_QUERY_CACHE):
        if isinstance(size, bool) or not isinstance(size, int) or size < 0:
            raise ConfigError(f"query_cache must be a non-negative integer, got {size!r}")
        self.size = size
        self.hits = 0
        self.misses = 0
        self._rows: OrderedDict[str, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()

    def encode(self, queries: Sequence[str], encode: Callable[[list[str]], np.ndarray]) -> np.ndarray:
        """Embeddings of ``queries`` in order; only those not cached go through ``encode``, in one call."""
        if self.size == 0:
            return encode(list(queries))
        with self._lock:
            distinct = dict.fromkeys(queries)
            found = {q: self._touch(q) for q in distinct if q in self._rows}
            missing = [q for q in distinct if q not in found]
            self.hits += len(found)
            self.misses += len(missing)
        if missing:
            fresh = encode(missing)
            with self._lock:
                for q, row in zip(missing, fresh, strict=True):
                    row = np.array(row, dtype=np.float32)  # a copy the caller cannot alter
                    row.setflags(write=False)
                    found[q] = self._rows[q] = row
                while len(self._rows) > self.size:
                    self._rows.popitem(last=False)
        return np.stack([found[q] for q in queries])

    def _touch(self, query: str) -> np.ndarray:
        self._rows.move_to_end(query)
        return self._rows[query]

    def clear(self) -> None:
        with self._lock:
            self._rows.clear()

    def __len__(self) -> int:
        return len(self._rows)
