"""The state-store seam: where tools, embeddings, policy state and the outcome log live.

SQLite is the embedded default, Redis serves many replicas, and an in-memory store ships for tests.
Policy state is a set of keyed ``State`` blobs (see ``rated.policy.base``); ``update_states`` is an
atomic read-modify-write so that concurrent writers (threads, processes, replicas) lose no update.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

__all__ = ["OutcomeRecord", "StateStore"]


@dataclass(frozen=True)
class OutcomeRecord:
    """One line of the append-only outcome log."""

    time: float  # unix seconds
    tool_id: str
    outcome: str  # OutcomeKind value
    query_hash: str | None = None
    retry_after: float | None = None


@runtime_checkable
class StateStore(Protocol):
    def load_states(self, keys: Iterable[str] | None = None) -> dict[str, bytes]:
        """Serialized states for ``keys`` (all when None); missing keys are absent from the result."""
        ...

    def update_states(
        self,
        keys: Sequence[str],
        update: Callable[[Mapping[str, bytes]], Mapping[str, bytes]],
        record: OutcomeRecord | None = None,
    ) -> None:
        """Atomically: read ``keys``, call ``update`` with what exists, write what it returns, log ``record``."""
        ...

    def outcomes(self, tool_id: str | None = None, limit: int = 100) -> list[OutcomeRecord]: ...

    def version(self) -> int:
        """A number that changes whenever any writer changed policy state (cheap to poll)."""
        ...

    def close(self) -> None: ...
