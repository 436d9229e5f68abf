"""The retriever's copy of its store: the pool of tools, the index built from it and the policy's learned
states, kept current with what other writers (threads, processes, replicas) store.

``StoreMirror`` is a part of ``rated.retriever.Retriever``, not a class to use alone. It owns the pool
(``_tools``, ``_ids``, ``_by_id``, ``_position``, ``_spellings``, ``_prior_by_id``, ``_prior``, ``_tool_at``,
``_provider_at``), the index (``_index``, ``_unindexed``, ``_pool_filter``, ``_last_facets``), the versions
it last read (``_catalog_version``, ``_version``, ``_seq``, ``_states_stale``) and replaces ``_policy`` (an
untrained copy, then the stored states) and ``_meta`` (the settings after another writer's change), and
finds an id typed in any Unicode spelling (``_known_id``). The facade sets ``_store``, ``_meta`` and
``_policy`` first; after construction every method here runs with its lock held (``Retriever._lock``).
The retrieval hot path reads the pool's attributes directly, as the retriever's own.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from rated import retriever_setup as setup
from rated.catalog.schema import Tool
from rated.errors import StoreError, UnknownToolError
from rated.index.semantic import SemanticIndex
from rated.policy.base import Policy
from rated.store.base import CatalogChangedError, Store
from rated.store.codec import decode_state
from rated.store.meta import IndexMeta
from rated.store.rows import IdSpellings
from rated.stored_tool import StoredTool, record_digest
from rated.tool_filter import FacetTable, PoolFilter

__all__ = ["StoreMirror"]

_RELOAD_TRIES = 3  # catalog reloads in one refresh while rebuilds keep landing mid-way (then: next refresh)


class StoreMirror:
    """The pool, index and learned states as stored, reloaded only where the store changed."""

    # set by the facade (Retriever.__init__)
    _store: Store
    # replaced here: the settings when another writer rebuilt the index, the policy at every full reload
    _meta: IndexMeta
    _policy: Policy
    # the pool in index order (_set_pool)
    _tools: list[StoredTool]
    _ids: list[str]
    _by_id: dict[str, StoredTool]
    _position: dict[str, int]
    _spellings: IdSpellings
    _prior_by_id: dict[str, float]
    _prior: np.ndarray
    _tool_at: list[Tool | None]
    _provider_at: list[str | None]
    # its index, built on first search from what _unindexed holds, and the filters' facets
    _index: SemanticIndex | None
    _unindexed: tuple[list[StoredTool], np.ndarray] | None
    _pool_filter: PoolFilter | None
    _last_facets: FacetTable | None
    # what was last read: -1 (unknown) makes the next refresh reload the catalog
    _catalog_version: int
    _version: int | None
    _seq: int
    _states_stale: bool

    def _load_catalog(self) -> None:
        """(Re)load the pool from the store; the index is built from the stored embeddings when first
        searched (nothing is re-encoded), so ``feedback`` and ``tools`` never pay for fitting it.

        No record is parsed here: each tool is a ``StoredTool`` whose ``Tool`` is validated from its
        record when first needed (a hit, a candidate's provider, feedback, ``tools``, a text the index
        builds), so opening a large catalog costs its ids, digests, prior and embeddings only. After
        another writer's change, a tool whose stored record is unchanged keeps its entry (and its parsed
        ``Tool``), and a built index follows removals and appends in place (``SemanticIndex.follow``): a
        replica of a large catalog does not re-index everything because one tool was added."""
        version = self._store.catalog_version()
        stored = self._store.load_catalog()
        where = setup.describe_db(self._store)
        known, entries = self._by_id, []
        for tool_id, record in zip(stored.ids, stored.records, strict=True):
            digest = record_digest(record)
            entry = known.get(tool_id)
            if entry is None or entry.digest != digest:
                entry = StoredTool(tool_id, record, where, digest)
            entries.append(entry)
        index, self._index = self._index, None  # an index that fails half-way through follow is dropped
        if index is not None and (
            index.config != setup.semantic_config(self._meta.semantic)
            # an HNSW graph is not followed (removals would rebuild it here): the next search attaches
            # the graph the writer saved for the new pool, as a process opening the store does
            or (index.dense.kind == "hnsw" and index.tool_ids != list(stored.ids))
            or not index.follow(entries, stored.embeddings)  # type: ignore[arg-type]
        ):
            index = None
        self._index = index
        self._unindexed = None if index is not None else (entries, stored.embeddings)
        self._set_pool(entries, dict(zip(stored.ids, stored.prior.tolist(), strict=True)))
        # the settings were read before (by open or _adopt_meta): if a rebuild landed in between, this
        # catalog may be the new one under the old settings; -1 (unknown) makes the refresh reload both
        raw = self._store.get_meta()
        self._catalog_version = version if raw and IndexMeta.from_dict(raw, where) == self._meta else -1

    def _search_index(self) -> SemanticIndex:
        """The semantic index of the current pool, built on first use (call with the lock held), its
        lexical part restored from the store's snapshot where one fits (``rated.index.snapshot``)."""
        if self._index is None:
            assert self._unindexed is not None
            tools, embeddings = self._unindexed
            config = setup.semantic_config(self._meta.semantic)
            version = self._catalog_version if self._catalog_version >= 0 else None  # of this pool
            self._index = setup.build_index(self._store, tools, embeddings, config, version)
            self._unindexed = None
        return self._index

    def _change_index(self, change: Callable[..., None], *args: Any) -> None:
        """Apply this retriever's own change, already stored, to its index; an index that fails half-way
        is dropped, and the next refresh (the catalog version is not recorded as ours) rebuilds it."""
        try:
            change(*args)
        except BaseException:
            self._index = None
            raise

    def _set_pool(self, tools: Sequence[StoredTool], prior_by_id: Mapping[str, float]) -> None:
        """The pool in index order: entries (``StoredTool``: what is returned is their ``.tool``), ids,
        positions and priors; no record is parsed."""
        self._tools = list(tools)
        # the last pool's facet table (or the one before, if no filtered query came in between): it covers
        # the tools this change kept, so the next table parses only the new ones. The table alone, not the
        # last pool's PoolFilter: that holds the old pool's entries (tools removed, a whole catalog
        # replaced) until the next filtered query, which may never come
        previous = getattr(self, "_pool_filter", None)
        self._last_facets = (
            previous.latest_facets if previous is not None else getattr(self, "_last_facets", None)
        )
        self._pool_filter = None  # built by the first filtered query of this pool
        self._ids = [t.id for t in self._tools]
        self._by_id = dict(zip(self._ids, self._tools, strict=True))
        self._position = dict(zip(self._ids, range(len(self._ids)), strict=True))
        self._spellings = IdSpellings(self._position)
        self._prior_by_id = {i: float(prior_by_id[i]) for i in self._ids}  # in pool order
        self._prior = np.fromiter(self._prior_by_id.values(), np.float32, len(self._ids))
        # each tool and its provider once a ranking has read them (None before): the candidates' providers
        # and the hits' tools without StoredTool's attribute hook and property (about 2 us a ranking)
        self._tool_at = [None] * len(self._ids)
        self._provider_at = [None] * len(self._ids)

    def _load_states(self) -> None:
        """Apply every stored state to an untrained copy of the policy (the store is the source of truth).

        A copy, not the old policy with its states unset: a policy may remember more than its states
        (RATED its context dimension, learned from a query's feedback), and that must not outlive the
        states it came from (their tools removed, the index rebuilt), or this process would score
        otherwise than one that opens the store now."""
        self._states_stale = True  # until done: a store failure half-way is retried at the next refresh
        policy = self._policy.clone()
        version = self._store.version()
        states, seq = self._store.states_since(0)
        for key, blob in states.items():
            policy.set_state(key, decode_state(blob))
        self._policy, self._version, self._seq = policy, version, seq
        self._states_stale = False

    def _undo_local(self, keys: Sequence[str]) -> None:
        """Drop what ``feedback`` learned in memory but the store did not confirm: reread those keys, or,
        when the store cannot be read either (it went away), reread every state at the next refresh."""
        try:
            self._set_states(keys, self._store.load_states(keys))
        except Exception:
            self._states_stale = True
            raise

    def _forget_states(self, tool_ids: Sequence[str]) -> None:
        """Drop the policy's states of tools whose states the store has just dropped (removed or added)."""
        for tool_id in tool_ids:
            self._policy.set_state(tool_id, None)

    def _set_states(self, keys: Sequence[str], blobs: Mapping[str, bytes]) -> None:
        """Give the policy each key's state from ``blobs`` (none, for a key that has no blob)."""
        for key in keys:
            blob = blobs.get(key)
            self._policy.set_state(key, None if blob is None else decode_state(blob))

    def _refresh(self) -> None:
        """Pick up what other retrievers (threads, processes, replicas) wrote since we last looked."""
        version = self._store.version()
        if version == self._version and not self._states_stale and self._catalog_version != -1:
            return
        if self._store.catalog_version() != self._catalog_version:
            for _ in range(_RELOAD_TRIES):  # again while rebuilds land between reading settings and catalog
                self._adopt_meta()
                self._load_catalog()
                if self._catalog_version != -1:
                    break
            self._load_states()
            return
        if self._states_stale:
            self._load_states()
            return
        changed, seq = self._store.states_since(self._seq)
        if seq < self._seq:  # the store's counter went back (restored from an older copy): start over
            self._load_states()
            return
        self._version, self._seq = version, seq
        for key, blob in changed.items():
            self._policy.set_state(key, decode_state(blob))

    def _adopt_meta(self) -> None:
        """The catalog changed under us: take the stored settings, unless the index was rebuilt with another
        encoder or policy, which this process cannot serve (its embeddings or state would not match)."""
        where = setup.describe_db(self._store)
        raw = self._store.get_meta()
        if not raw:
            raise StoreError(f"{where} holds no index any more (cleared or being rebuilt): reopen it later")
        meta = IndexMeta.from_dict(raw, where)
        if not meta.encoder.same_embeddings(self._meta.encoder):
            raise StoreError(
                f"{where} was re-indexed with encoder {meta.encoder}, not {self._meta.encoder}: reopen it"
            )
        if (meta.policy, meta.policy_params) != (self._meta.policy, self._meta.policy_params):
            raise StoreError(  # the store changed under us, as with the encoder: not the caller's input
                f"{where} was re-indexed with policy {meta.policy!r} and other settings: reopen it"
            )
        self._meta = meta

    def _check_meta(self, raw: dict[str, Any]) -> None:
        """Called by the store inside a catalog change planned under our settings: refuse the change when
        the index was rebuilt (other encoder, prior statistics) since, as our embeddings would not fit."""
        if not raw or IndexMeta.from_dict(raw, setup.describe_db(self._store)) != self._meta:
            raise CatalogChangedError(f"{setup.describe_db(self._store)} was re-indexed meanwhile")

    def _own_catalog_change(self, version: int) -> None:
        """Our own write moved the catalog version by one: no reload needed (else someone else wrote too)."""
        if version == self._catalog_version + 1:
            self._catalog_version = version

    def _settle_graph(self, version: int, had_graph: bool) -> None:
        """After our own add or removal (stored as catalog ``version``, applied to the index): the index
        takes the dense kind the new size calls for, and its HNSW graph is saved for the next process to
        open the store, or a graph no longer used is dropped (``setup.settle_graph``). Only when no other
        writer's change came in between: then the index holds exactly the stored catalog (otherwise the
        next refresh reloads it, and whoever builds that catalog's graph saves it)."""
        if self._catalog_version == version and self._index is not None:
            self._index = setup.settle_graph(self._store, self._index, version, had_graph)

    def _known_id(self, tool_id: object) -> str:
        """``tool_id`` as the catalog spells it (typed in any Unicode spelling: ``IdSpellings``)."""
        found = self._spellings.find(tool_id)
        if found is None:
            raise UnknownToolError(tool_id)  # type: ignore[arg-type]
        return found
