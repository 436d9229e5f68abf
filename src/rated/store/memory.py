"""An in-process store: the reference implementation of ``Store``, for tests and throwaway retrievers.

Nothing survives the process; everything else (atomic read-modify-write, versions, the outcome log)
behaves like the persistent stores, so code tested against it runs unchanged on SQLite or Redis.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from rated.store.base import (
    IndexExistsError,
    LastToolError,
    OutcomeRecord,
    OutcomeStats,
    StoredCatalog,
)
from rated.store.rows import check_tool_rows, empty_catalog_dim, evidence_of, refuse_clashes
from rated.store.stats import recent_outcomes, summarise_outcomes

__all__ = ["MemoryStore"]


class MemoryStore:
    """``Store`` backed by dicts and one lock."""

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._meta: dict[str, Any] = {}
        self._tools: dict[str, tuple[str, np.ndarray, float, dict[str, Any]]] = {}  # insertion-ordered
        self._states: dict[str, bytes] = {}
        self._state_seq: dict[str, int] = {}
        self._seq = 0
        self._catalog_version = 0
        self._log: list[OutcomeRecord] = []
        self._evidence: dict[str, bytes] = {}

    # ---- meta and catalog --------------------------------------------------------------------------
    def get_meta(self) -> dict[str, Any]:
        with self._lock:
            return dict(self._meta)

    def set_meta(self, meta: Mapping[str, Any]) -> None:
        with self._lock:
            self._meta = dict(meta)

    def load_catalog(self) -> StoredCatalog:
        with self._lock:
            ids = tuple(self._tools)
            rows = list(self._tools.values())
        dim = empty_catalog_dim(self._meta) if not rows else rows[0][1].shape[0]
        return StoredCatalog(
            ids=ids,
            records=tuple(r[0] for r in rows),
            embeddings=np.stack([r[1] for r in rows]) if rows else np.zeros((0, dim), np.float32),
            prior=np.array([r[2] for r in rows], dtype=np.float32),
            prior_detail=tuple(r[3] for r in rows),
        )

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
        emb, details = check_tool_rows(ids, records, embeddings, prior, prior_detail)
        with self._lock:
            if check_meta is not None:
                check_meta(dict(self._meta))
            refuse_clashes(
                ids,
                lambda keys: self._tools.keys() & keys,
                new_only=new_only,
                delete=delete,
                not_ascii=lambda: [i for i in self._tools if not i.isascii()],
            )
            if delete and (self._tools.keys() | set(ids)) <= set(delete):
                raise LastToolError("cannot remove every tool: an index needs at least one")
            added = [tool_id for tool_id in ids if tool_id not in self._tools]
            self._put_rows(ids, records, emb, prior, details)
            # what a late writer left under an id not held (a feedback that found the tool before another
            # retriever removed it): a tool added under it starts with none
            self._drop_learned(added)
            self._drop_tools(delete)
            self._catalog_version += 1
            return self._catalog_version

    def _put_rows(
        self,
        ids: Sequence[str],
        records: Sequence[str],
        emb: np.ndarray,
        prior: np.ndarray,
        details: Sequence[Mapping[str, Any]],
    ) -> None:
        for i, tool_id in enumerate(ids):
            self._tools[tool_id] = (records[i], emb[i].copy(), float(prior[i]), dict(details[i]))

    def delete_tools(self, ids: Sequence[str], *, keep_one: bool = False) -> int:
        with self._lock:
            if not ids:
                return self._catalog_version
            if keep_one and self._tools.keys() <= set(ids):
                raise LastToolError("cannot remove every tool: an index needs at least one")
            self._drop_tools(ids)
            self._catalog_version += 1
            return self._catalog_version

    def _drop_tools(self, ids: Sequence[str]) -> None:
        for tool_id in ids:
            self._tools.pop(tool_id, None)
        self._drop_learned(ids)  # a tool added again later starts with none

    def _drop_learned(self, ids: Sequence[str]) -> None:
        """Drop the policy state and the evidence kept under ``ids``."""
        for tool_id in ids:
            if self._states.pop(tool_id, None) is not None:
                self._seq += 1
                self._state_seq.pop(tool_id, None)
        for key in evidence_of(self._evidence, set(ids)):
            del self._evidence[key]

    def clear(self) -> None:
        with self._lock:
            self._drop_all()
            self._catalog_version += 1

    def _drop_all(self) -> None:
        self._meta.clear()
        self._tools.clear()
        self._states.clear()
        self._state_seq.clear()
        self._evidence.clear()
        self._seq += 1

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
        emb, details = check_tool_rows(ids, records, embeddings, prior, prior_detail)  # before any drop
        with self._lock:  # one change for other threads
            if expect_empty and (self._meta or self._tools):
                raise IndexExistsError("the in-memory store already holds an index")
            self._drop_all()
            self._meta = dict(meta)
            self._put_rows(ids, records, emb, prior, details)
            self._catalog_version += 1
            return self._catalog_version

    def catalog_version(self) -> int:
        return self._catalog_version

    def load_cached(self, name: str) -> bytes | None:
        return None  # nothing outlives this process's retrievers: no process opens this store later

    def save_cached(self, name: str, data: bytes, *, catalog_version: int | None = None) -> bool:
        return False

    def delete_cached(self, name: str, *, catalog_version: int | None = None) -> bool:
        return False  # nothing was kept

    # ---- policy state ------------------------------------------------------------------------------
    def load_states(self, keys: Iterable[str] | None = None) -> dict[str, bytes]:
        with self._lock:
            if keys is None:
                return dict(self._states)
            return {k: self._states[k] for k in keys if k in self._states}

    def update_states(
        self,
        keys: Sequence[str],
        update: Callable[[Mapping[str, bytes]], Mapping[str, bytes]],
        record: OutcomeRecord | None = None,
    ) -> None:
        with self._lock:
            current = {k: self._states[k] for k in keys if k in self._states}
            new = update(current)
            for key, blob in new.items():
                self._seq += 1
                self._states[key] = bytes(blob)
                self._state_seq[key] = self._seq
            if record is not None:
                self._log.append(record)

    def states_since(self, seq: int) -> tuple[dict[str, bytes], int]:
        with self._lock:
            seq = seq if seq <= self._seq else 0  # a number from another history: everything
            changed = {k: self._states[k] for k, s in self._state_seq.items() if s > seq}
            return changed, self._seq

    def version(self) -> int:
        return self._seq + self._catalog_version

    # ---- outcome log -------------------------------------------------------------------------------
    def outcomes(self, tool_id: str | None = None, limit: int | None = 100) -> list[OutcomeRecord]:
        """The most recent ``limit`` records (all when None), oldest first."""
        with self._lock:
            return recent_outcomes(self._log, tool_id, limit)

    def outcome_stats(self, tool_ids: Sequence[str] | None = None) -> dict[str, OutcomeStats]:
        with self._lock:
            return summarise_outcomes(self._log, tool_ids)

    # ---- evidence across calls (``EvidenceStore``) ---------------------------------------------------
    def load_evidence(self, key: str) -> bytes | None:
        with self._lock:
            return self._evidence.get(key)

    def load_evidence_many(self, keys: Iterable[str]) -> dict[str, bytes]:
        """``load_evidence`` of many keys: those that have a blob."""
        with self._lock:
            return {k: blob for k in keys if (blob := self._evidence.get(k)) is not None}

    def update_evidence(self, key: str, update: Callable[[bytes | None], bytes | None]) -> None:
        with self._lock:
            new = update(self._evidence.get(key))
            if new is None:
                self._evidence.pop(key, None)
            else:
                self._evidence[key] = bytes(new)

    def close(self) -> None:
        return None
