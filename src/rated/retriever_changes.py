"""Catalog changes made through the retriever: ``add_tools``, ``remove_tools`` and ``sync_tools``.

``CatalogChanges`` is a part of ``rated.retriever.Retriever``, not a class to use alone. Additions and syncs
encode outside the lock (``_lock``, set by the facade with ``_store``, ``_encoder`` and ``_meta``), check
again under it and store in one write refused if the index was rebuilt meanwhile (``_check_meta``). Every
change then applies itself to the mirrored pool, index and states (``StoreMirror``: through its methods,
and ``_unindexed``, ``_states_stale`` and ``_catalog_version`` directly).
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, cast

import numpy as np

from rated import retriever_setup as setup
from rated.catalog.schema import Tool
from rated.catalog_sync import SyncPlan, SyncReport, plan_sync
from rated.encode.base import Encoder
from rated.errors import ConfigError, StoreError, ToolExistsError
from rated.index.semantic import SemanticIndex, dense_kind
from rated.retriever_mirror import StoreMirror
from rated.shown import shown
from rated.store.base import CatalogChangedError, LastToolError, Store
from rated.stored_tool import StoredTool, record_digest

__all__ = ["CatalogChanges"]

_SYNC_TRIES = 4  # encodings in one sync while other writers keep changing the tools it syncs


class CatalogChanges(StoreMirror):
    """Tools added, removed or synced in place, without a rebuild; the other tools keep their state."""

    # set by the facade (Retriever.__init__)
    _lock: threading.RLock
    _encoder: Encoder

    def add_tools(
        self, tools: str | Path | Sequence[Tool | Mapping[str, Any]], *, progress: bool = False
    ) -> None:
        """Encode and add tools; the others are not re-encoded and keep their prior and learned state.

        ``ToolExistsError`` (a ``CatalogError``) names every id the index holds already, and nothing is
        added. The new tools are encoded without holding up this retriever's ``retrieve`` and ``feedback``
        calls (seconds for hundreds of tools with a real model), then checked again before they are stored.
        """
        from rated.catalog.prior import PriorStats, score_new

        new = setup.as_tools(tools)
        # served as stored (put_tools writes model_dump_json), as a process that opens the store parses them:
        # a caller's Tool may hold what JSON does not (a tuple, NaN); a later reload keeps these objects
        records = [t.model_dump_json() for t in new]
        new = [setup.parse_record(r, t.id, "the tools to add") for r, t in zip(records, new, strict=True)]
        entries = [StoredTool.of(t, r) for t, r in zip(new, records, strict=True)]
        with self._lock:
            self._refresh()
            self._check_new(new)  # before the encoding: a clash is refused at once
            stats = self._meta.prior_stats
        embeddings = setup.encode_tools(self._encoder, new, progress)
        prior = score_new(new, self._encoder, PriorStats.from_dict(stats))
        with self._lock:
            for _ in range(_SYNC_TRIES):
                self._refresh()  # another writer may have added one of them (or rebuilt the index) meanwhile
                self._check_new(new)
                if self._meta.prior_stats != stats:  # rebuilt meanwhile with the same encoder and policy
                    stats = self._meta.prior_stats
                    prior = score_new(new, self._encoder, PriorStats.from_dict(stats))
                try:  # refused if the index was rebuilt since this refresh (perhaps with another encoder)
                    version = setup.put_tools(self._store, new, embeddings, prior, self._check_meta)
                    break
                except CatalogChangedError:
                    continue
            else:
                raise _kept_changing(self._store, "add")
            # the store dropped what a feedback racing an earlier removal left under their ids (put_tools),
            # which a reload may have read: they start with none, as new_only found none of them held
            self._forget_states([t.id for t in new])
            index = self._search_index()
            had_graph = index.dense.kind == "hnsw"
            self._change_index(index.add, entries, embeddings)
            self._set_pool(
                _entries(index),
                {**self._prior_by_id, **dict(zip(prior.tool_ids, prior.r_static, strict=True))},
            )
            self._own_catalog_change(version)
            self._settle_graph(version, had_graph)

    def _check_new(self, tools: Sequence[Tool]) -> None:
        clash = [t.id for t in tools if t.id in self._by_id or self._other_form_indexed(t.id)]
        if clash:
            raise ToolExistsError(clash)

    def _other_form_indexed(self, tool_id: str) -> bool:
        """Whether the index holds ``tool_id`` in another Unicode spelling: feedback, health and remove
        find any, so a second tool spelled so would make one of the two unreachable by that id. Compared by
        NFC form (either id may be in neither normal form), as the catalog loader compares them."""
        return self._spellings.other(tool_id) is not None

    def remove_tools(self, tool_ids: Iterable[str]) -> list[str]:
        """Drop tools (and their learned state); ``UnknownToolError`` if one is not indexed, ``LastToolError``
        (a ``ConfigError``) if none would remain, and nothing is removed then. Returns the ids removed, as
        the catalog spells them (an id is found in either Unicode normal form, as ``feedback`` finds it).
        By id: the records of the tools removed are not read, so a tool whose stored record no longer
        validates (a rule added since it was indexed) can be removed."""
        if not isinstance(tool_ids, (str, Iterable)):
            raise ConfigError(
                f"remove_tools takes a tool id or a list of them, got {type(tool_ids).__name__}"
            )
        given = list([tool_ids] if isinstance(tool_ids, str) else tool_ids)
        if not given:
            return []  # nothing to do: no catalog change for other retrievers to reload
        with self._lock:
            self._refresh()
            ids = list(dict.fromkeys(self._known_id(i) for i in given))
            if len(ids) >= len(self._by_id):
                raise LastToolError("cannot remove every tool: an index needs at least one")
            # an index not built yet is built from the tools that stay, below: building it first would parse
            # every record, and a tool whose record no longer validates could not be removed (the repair)
            index = self._index
            had_graph = dense_kind(setup.semantic_config(self._meta.semantic), len(self._ids)) == "hnsw"
            version = self._store.delete_tools(ids, keep_one=True)  # re-checked inside the change
            pool: list[StoredTool]
            if index is not None:
                self._change_index(index.remove, ids)
                pool = _entries(index)
            else:
                self._unindexed = self._unindexed_without(ids)
                pool = self._unindexed[0]
            self._forget_states(ids)
            self._states_stale = True  # reload the remaining states into a fresh copy at the next refresh:
            # what the policy learned from these tools beyond their states goes with them (_load_states)
            self._set_pool(pool, self._prior_by_id)
            self._own_catalog_change(version)
            if index is not None:
                self._settle_graph(version, had_graph)
            elif self._catalog_version == version:  # built as a process opening the store now builds it
                if self._search_index().dense.kind == "flat" and had_graph:  # (an HNSW one: its graph saved)
                    setup.drop_graph(self._store, version)
            return ids

    def _unindexed_without(self, tool_ids: Sequence[str]) -> tuple[list[StoredTool], np.ndarray]:
        """The pool the index is not built from yet, less ``tool_ids``: entries and embeddings."""
        assert self._unindexed is not None
        entries, embeddings = self._unindexed
        drop = set(tool_ids)
        keep = [p for p, entry in enumerate(entries) if entry.id not in drop]
        return [entries[p] for p in keep], embeddings[keep]

    def sync_tools(
        self,
        tools: str | Path | Sequence[Tool | Mapping[str, Any]],
        *,
        prune: bool = False,
        progress: bool = False,
    ) -> SyncReport:
        """Make the index hold ``tools`` as given, without a rebuild: new ids are added, tools whose record
        changed (description, parameters, anything) are re-encoded and replaced in place, keeping their
        learned state, and tools as stored cost nothing. ``prune``: indexed tools not in ``tools`` are
        removed with their state (``LastToolError``, nothing changed, when that would be every one).

        The changed tools are encoded without holding up ``retrieve`` and ``feedback``, then the index
        is compared again (another writer may have changed it meanwhile) before the store takes them, in
        one change (added, updated and pruned tools together) that the store refuses if the index was
        rebuilt after that comparison (then it is planned again, or refused for another encoder). Nothing
        to do: no change at all, so other retrievers do not reload."""
        if not isinstance(prune, bool):
            raise ConfigError(f"prune must be True or False, got {shown(prune)}")
        given = setup.as_tools(tools)
        records = [t.model_dump_json() for t in given]  # compared with, and stored as, what the store keeps
        given = [
            setup.parse_record(r, t.id, "the tools to sync") for r, t in zip(records, given, strict=True)
        ]
        ids, digests = [t.id for t in given], [record_digest(r) for r in records]
        embeddings: dict[int, np.ndarray] = {}  # position in ``given`` -> its embedding (encoded once)
        priors: dict[int, tuple[float, dict[str, Any]]] = {}  # -> its prior, scored with ``stats``
        stats: Mapping[str, Any] | None = None
        for _ in range(_SYNC_TRIES):
            with self._lock:
                self._refresh()
                clash = [i for i in ids if i not in self._by_id and self._other_form_indexed(i)]
                if clash:  # as add refuses it: not a new tool, nor this one's update
                    raise ToolExistsError(clash)
                held = {tool_id: entry.digest for tool_id, entry in self._by_id.items()}
                plan = plan_sync(ids, digests, held, self._ids, prune)
                if stats != self._meta.prior_stats:  # first pass, or rebuilt meanwhile (same encoder, policy)
                    stats, priors = self._meta.prior_stats, {}
                todo = [i for i in plan.changed if i not in embeddings]
                unscored = [i for i in plan.changed if i not in priors]
                if not todo:
                    priors.update(self._score_prior(given, unscored, stats))  # nothing, unless rebuilt
                    try:
                        self._apply_sync(plan, ids, records, embeddings, priors)
                    except CatalogChangedError:
                        continue  # rebuilt since this plan: plan again (another encoder: refused)
                    return plan.report
            vectors = setup.encode_tools(self._encoder, [given[i] for i in todo], progress)
            embeddings.update(zip(todo, vectors, strict=True))
            priors.update(self._score_prior(given, unscored, stats))
        raise _kept_changing(self._store, "sync")

    def _score_prior(
        self, tools: Sequence[Tool], positions: Sequence[int], stats: Mapping[str, Any]
    ) -> dict[int, tuple[float, dict[str, Any]]]:
        """The prior of ``tools[positions]`` (r_static and its detail), with the index's statistics."""
        from rated.catalog.prior import PriorStats, score_new

        if not positions:
            return {}
        prior = score_new([tools[i] for i in positions], self._encoder, PriorStats.from_dict(stats))
        return {i: (float(prior.r_static[j]), prior.record(j)) for j, i in enumerate(positions)}

    def _apply_sync(
        self,
        plan: SyncPlan,
        ids: Sequence[str],
        records: Sequence[str],
        embeddings: Mapping[int, np.ndarray],
        priors: Mapping[int, tuple[float, dict[str, Any]]],
    ) -> None:
        """Store what ``plan`` changes (call with the lock held), then reload the pool from the store: a tool
        changed in place cannot be followed (``SemanticIndex.follow``), so the index is built again, as a
        process opening the store now builds it, and its lexical snapshot saved for the others."""
        report, changed = plan.report, plan.changed
        if not report.changed:
            return
        dim = self._meta.encoder.dim
        had_graph = dense_kind(setup.semantic_config(self._meta.semantic), len(self._ids)) == "hnsw"
        # one change, refused if the catalog is no longer the one planned for (another writer, a rebuild
        # with another encoder): new ids appended, known ones replaced in place, the pruned ones removed
        version = self._store.put_tools(
            [ids[i] for i in changed],
            [records[i] for i in changed],
            np.stack([embeddings[i] for i in changed]) if changed else np.empty((0, dim), np.float32),
            np.array([priors[i][0] for i in changed], dtype=np.float32),
            [priors[i][1] for i in changed],
            check_meta=self._check_meta,
            delete=report.removed,
        )
        self._catalog_version = -1  # reloaded from the store, here or (should this fail) at the next refresh
        if report.added:  # as the store holds them: it dropped what was left under an id it inserted
            self._set_states(report.added, self._store.load_states(report.added))
        if report.removed:
            self._states_stale = True  # the remaining states, into a fresh copy (as remove_tools)
        self._load_catalog()
        if self._search_index().dense.kind == "flat" and had_graph and self._catalog_version == version:
            setup.drop_graph(self._store, version)  # a pruned pool below hnsw_threshold (an HNSW one:
            # build_index saved the graph it built, or attached the saved one that still fits)


def _kept_changing(store: Store, what: str) -> StoreError:
    return StoreError(
        f"{setup.describe_db(store)}: the catalog kept changing while the {what} was being stored; "
        f"nothing was stored: try again"
    )


def _entries(index: SemanticIndex) -> list[StoredTool]:
    """The pool entries ``index`` holds: the ``StoredTool``s it was built from (it types them as ``Tool``s,
    whose fields they read through to)."""
    return cast("list[StoredTool]", index.tools)
