"""The state-store seam: where tools, embeddings, policy state and the outcome log live.

SQLite is the embedded default, Redis serves many replicas, and an in-memory store ships for tests.
Policy state is a set of keyed ``State`` blobs (see ``rated.policy.base``); ``update_states`` is an
atomic read-modify-write so that concurrent writers (threads, processes, replicas) lose no update.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import numpy as np

from rated.errors import ConfigError, StoreError

__all__ = [
    "CatalogChangedError",
    "CatalogStore",
    "EvidenceStore",
    "IndexExistsError",
    "LastToolError",
    "OutcomeRecord",
    "OutcomeStats",
    "StateStore",
    "Store",
    "StoreTimeoutError",
    "StoredCatalog",
]

FORMAT_VERSION = 1  # bump when the layout of a store changes; stores refuse other versions


class IndexExistsError(ConfigError):
    """``replace_catalog(..., expect_empty=True)`` found an index there already (another writer built one)."""


class LastToolError(ConfigError):
    """``delete_tools(..., keep_one=True)`` would have left the index without any tool."""


class CatalogChangedError(StoreError):
    """The index was rebuilt (other settings: encoder, prior statistics) after the caller planned a change
    for it; raised by a ``put_tools`` ``check_meta``, the change is not stored."""


class StoreTimeoutError(StoreError):
    """The store gave no reply within its timeout (a stalled Redis): asking it anything else at once,
    such as whether the index was rebuilt, would only wait that long again."""


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
        """Atomically: read ``keys``, call ``update`` with what exists, write what it returns, log ``record``.

        ``update`` may be called more than once (optimistic stores retry): it must depend only on its input.
        """
        ...

    def outcomes(self, tool_id: str | None = None, limit: int | None = 100) -> list[OutcomeRecord]:
        """The last ``limit`` outcomes (None: all of them), of ``tool_id`` or of every tool, oldest first."""
        ...

    def version(self) -> int:
        """A number that changes whenever any writer changed policy state (cheap to poll)."""
        ...

    def close(self) -> None: ...


# ---- additions (engineer S): the catalog half of a store, so a retriever can be re-opened ----------------


@dataclass(frozen=True)
class StoredCatalog:
    """What ``Retriever.open`` needs to rebuild without re-encoding, aligned by position.

    ``records`` are JSON texts of ``Tool`` records (the store does not interpret them: ``Retriever``
    validates each when the tool is first needed); ``prior`` holds r_static per tool and
    ``prior_detail`` its components (JSON-able dicts) for display, which a store may decode only when
    one is read (SQLite: ``rows.PriorDetails``, a damaged one raising ``IndexFormatError`` then).
    """

    ids: tuple[str, ...]
    records: tuple[str, ...]
    embeddings: np.ndarray  # (n, dim) float32
    prior: np.ndarray  # (n,) float32
    prior_detail: Sequence[dict[str, Any]] = field(default=())


@dataclass(frozen=True)
class OutcomeStats:
    """Per-tool counts from the outcome log (for ``rated tools``)."""

    tool_id: str
    successes: int
    failures: int  # every failed call but caller errors, as logged (a rate limit too: the log is history;
    # what a rate limit with a retry-after costs a tool is the policy's to weigh, and it does not hold it)
    caller_errors: int
    last_outcome: str | None
    last_time: float | None


@runtime_checkable
class CatalogStore(Protocol):
    def get_meta(self) -> dict[str, Any]:
        """The JSON-able settings saved with the catalog (encoder identity, policy, limits)."""
        ...

    def set_meta(self, meta: Mapping[str, Any]) -> None: ...

    def load_catalog(self) -> StoredCatalog: ...

    def put_tools(
        self,
        ids: Sequence[str],
        records: Sequence[str],
        embeddings: np.ndarray,
        prior: np.ndarray,
        prior_detail: Sequence[Mapping[str, Any]] | None = None,
        *,
        new_only: bool = False,
        check_meta: Callable[[dict[str, Any]], None] | None = None,
        delete: Sequence[str] = (),
    ) -> int:
        """Insert (at the end) or replace (in place) tools with embeddings and prior, atomically.

        Returns the catalog version after the change (so the writer can tell its own change from others').
        ``new_only``: raise ``ToolExistsError`` (and change nothing) when the store holds one of the ids,
        checked inside the change, so that of two writers adding the same id the second is refused instead
        of replacing the first's tool. ``check_meta``: called with the stored settings inside the change;
        what it raises refuses the change (nothing stored), so that tools encoded for one index never land
        in another rebuilt meanwhile (another encoder). ``delete``: ids (not among ``ids``) to
        remove with their policy state and evidence in the same change, as
        ``delete_tools(delete, keep_one=True)``. An id inserted (not held before) starts with no policy
        state and no evidence under it: what a writer that found the tool before another one removed it
        wrote after the removal (a feedback racing ``delete_tools``) is dropped in the same change, so a
        tool added again does not inherit it; a tool replaced in place keeps its own.
        """
        ...

    def delete_tools(self, ids: Sequence[str], *, keep_one: bool = False) -> int:
        """Remove tools, any policy state stored under their ids and their evidence (``EvidenceStore``);
        returns the new catalog version.

        No ids: nothing changes (the version stays). ``keep_one``: raise ``LastToolError`` (and change
        nothing) when no tool would remain, checked inside the change, so that two writers removing
        different tools at once cannot empty an index between them.
        """
        ...

    def clear(self) -> None:
        """Drop the catalog, the config, every policy state and all evidence (the outcome log is kept: it
        is history)."""
        ...

    def replace_catalog(
        self,
        ids: Sequence[str],
        records: Sequence[str],
        embeddings: np.ndarray,
        prior: np.ndarray,
        prior_detail: Sequence[Mapping[str, Any]] | None,
        meta: Mapping[str, Any],
        *,
        expect_empty: bool = False,
    ) -> int:
        """``clear`` + ``put_tools`` + ``set_meta`` as one change (a rebuilt index): readers see the old
        index or the new one, never none, and a failure leaves the old one in place. Returns the version.

        ``expect_empty``: raise ``IndexExistsError`` (and change nothing) when the store already holds an
        index (a non-empty config or any tool), checked inside the change, so that of two writers creating
        an index at once the second fails instead of silently replacing the first's."""
        ...

    def catalog_version(self) -> int:
        """Changes whenever tools were added, replaced or removed."""
        ...

    def load_cached(self, name: str) -> bytes | None:
        """Derived data saved under ``name`` (a snapshot of the lexical index), or ``None``. A cache that
        any process can recompute, checked by whoever reads it: a store may lose it at any time."""
        ...

    def save_cached(self, name: str, data: bytes, *, catalog_version: int | None = None) -> bool:
        """Save derived data under ``name``, replacing what was there; whether it was kept (a store that
        keeps no cache says ``False``). ``catalog_version``: save only while the catalog version is still
        that one (checked inside the write), so that data derived from a catalog another writer has
        changed since never replaces what was derived from the catalog stored now."""
        ...

    def delete_cached(self, name: str, *, catalog_version: int | None = None) -> bool:
        """Drop what was saved under ``name`` (derived from a catalog it no longer fits); whether there
        was something to drop. ``catalog_version`` as for ``save_cached``: nothing is dropped once another
        writer has changed the catalog (what it saved since fits the catalog stored now)."""
        ...


@runtime_checkable
class Store(StateStore, CatalogStore, Protocol):
    """Everything a ``Retriever`` persists: catalog, embeddings, prior, policy state, outcome log."""

    def states_since(self, seq: int) -> tuple[dict[str, bytes], int]:
        """States written after change number ``seq`` and the latest change number (for cheap refresh).

        A ``seq`` above the latest (the store was restored from an older copy) returns every state, with the
        lower latest number: the caller must then reload rather than merge."""
        ...

    def outcome_stats(self, tool_ids: Sequence[str] | None = None) -> dict[str, OutcomeStats]:
        """Per-tool counts for ``tool_ids`` (every logged tool when None); tools never logged are absent."""
        ...


@runtime_checkable
class EvidenceStore(Protocol):
    """Evidence a retriever gathers across calls (``rated.retired``: a tool answering 404 to query after
    query), kept apart from policy state: policies never see it, and an older rated reading the same store
    never meets it. Blobs are the retriever's own (JSON); the memory, SQLite and Redis stores implement it.
    A store without these methods gathers no evidence (the rules that need it stay off).

    Keys are ``KIND:TOOL_ID`` (``retired:weather``): evidence is about one tool and goes with it, in the
    change that removes the tool (``delete_tools``, ``put_tools(delete=...)``), rebuilds the index
    (``replace_catalog``) or clears it (``clear``). A tool removed and added again under its id starts
    with none, also when a writer that found it before the removal saved some after it (``put_tools``
    drops what an id it inserts has).

    Optional, not part of the protocol: ``load_evidence_many(keys) -> dict[str, bytes]``, the blobs of
    those of ``keys`` that have one, in one read; ``rated.retired`` reads a whole catalog's runs with it
    (the memory, SQLite and Redis stores have it), and one ``load_evidence`` per key without it."""

    def load_evidence(self, key: str) -> bytes | None:
        """The blob saved under ``key``, or None."""
        ...

    def update_evidence(self, key: str, update: Callable[[bytes | None], bytes | None]) -> None:
        """Atomically: read the blob under ``key`` (None when there is none), call ``update`` with it and
        save what it returns (None: drop the blob). Concurrent updates of one key lose nothing.

        ``update`` may be called more than once (optimistic stores retry): it must depend only on its
        input; the call whose result was saved is the last one."""
        ...
