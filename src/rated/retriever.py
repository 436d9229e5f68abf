"""The one object an agent developer uses: retrieve tools for a query, report how each call went.

Pipeline: encode the query -> semantic top-K (``SemanticIndex``, K = ``candidates``, default 10) ->
``Candidates`` -> ``policy.rank`` -> the top ``k`` as ``Hit`` objects. ``feedback`` turns an outcome into a
``Feedback`` (context = the query's embedding when the query is given) and applies it through
``store.update_states``, an atomic read-modify-write, so processes sharing one database lose no update;
before every ranking the retriever polls ``store.version()`` and reloads only the states that changed.

>>> from rated import Tool
>>> from rated.encode.testing import HashEncoder
>>> from rated.policy.global_mab import GlobalMABPolicy
>>> tools = [Tool(id="mail.a", name="send_email", description="Send an email message"),
...          Tool(id="mail.b", name="email_send", description="Send an email message"),
...          Tool(id="weather", name="weather", description="Weather forecast for a city")]
>>> r = Retriever.from_catalog(tools, encoder=HashEncoder(64), policy=GlobalMABPolicy(), clock=lambda: 0)
>>> [h.tool.id for h in r.retrieve("send an email", k=2)]
['mail.a', 'mail.b']
>>> r.feedback("mail.a", "tool_error", query="send an email").kind.value  # the outcome, as recorded
'tool_error'
>>> [h.tool.id for h in r.retrieve("send an email", k=2)]
['mail.b', 'mail.a']
"""

from __future__ import annotations

import asyncio
import dataclasses
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import partial
from pathlib import Path
from typing import Any, Self

import numpy as np

from rated import retriever_setup as setup
from rated.catalog.schema import Tool
from rated.catalog_sync import SyncReport
from rated.encode.base import Encoder
from rated.encode.query_cache import DEFAULT_QUERY_CACHE, QueryCache
from rated.errors import ConfigError, IndexFormatError, QueryError
from rated.hits import Hit, ToolHealth
from rated.index.semantic import SemanticIndex
from rated.policy.base import BasePolicy, Candidates, Policy, Ranking, all_finite
from rated.retired import RetiredRule
from rated.retriever_changes import CatalogChanges
from rated.retriever_feedback import OutcomeReports
from rated.shown import shown
from rated.store.base import IndexExistsError, OutcomeRecord, OutcomeStats, Store
from rated.store.memory import MemoryStore
from rated.store.meta import EncoderIdentity, IndexMeta
from rated.store.open import open_store
from rated.tool_filter import PoolFilter, ToolFilter

__all__ = ["DEFAULT_POLICY", "Hit", "Retriever", "SyncReport", "ToolHealth"]

DEFAULT_POLICY = "rated"
_STORE_OPTIONS = ("durability", "busy_timeout", "namespace", "max_outcomes")
_BANDIT_NAMES = ("bandit", "mab", "health")  # what policies call their feedback-learned component
# how retrieve makes a hit: its __dict__ set in one call, not the frozen __init__'s setattr per field (about
# 2 us less per hit, k of them on the latency-critical path); Hit is a plain frozen dataclass otherwise
_new, _set_attr = object.__new__, object.__setattr__
_NO_LIMIT = 2**62  # an outcomes() limit above this is no limit


class Retriever(OutcomeReports, CatalogChanges):
    """Semantic retrieval re-ranked by a policy that learns from execution outcomes.

    Build with ``Retriever.from_catalog`` (encode and index a catalog) or ``Retriever.open`` (reopen a
    database without re-encoding). Thread-safe; processes may share one SQLite file or Redis database.
    Calls of one retriever are serialised: a ``feedback`` waiting for another process's write (at most
    ``busy_timeout``, normally milliseconds) delays this retriever's ``retrieve`` calls meanwhile.
    """

    # Its parts, one module each, sharing this object's attributes: feedback, track and call
    # (retriever_feedback.OutcomeReports), add/remove/sync_tools (retriever_changes.CatalogChanges), and
    # the pool, index and states mirrored from the store (retriever_mirror.StoreMirror, the base of both).
    # Here: construction, retrieval (the hot path), inspection.

    def __init__(
        self,
        store: Store,
        encoder: Encoder,
        policy: Policy,
        meta: IndexMeta,
        *,
        clock: Callable[[], float] = time.time,
        query_cache: int = DEFAULT_QUERY_CACHE,
        retired: RetiredRule | Mapping[str, Any] | bool | None = None,
    ) -> None:
        if not callable(clock):
            raise ConfigError(f"clock must be a callable returning seconds, got {clock!r}")
        # this process's own rule for retired endpoints; None: the one saved with the index (meta.retired)
        self._retired = None if retired is None else RetiredRule.parse(retired)
        self._store = store
        self._encoder = encoder
        # an own untrained copy: a Policy instance passed to two retrievers would otherwise share (and
        # each reload would wipe) the other's learned state
        self._policy = policy.clone()
        self._meta = meta
        self._clock = clock
        self._query_cache = QueryCache(query_cache)
        self._retired_rule()  # a saved rule that is damaged fails here, not at the first 404
        self._lock = threading.RLock()
        self._version = None
        self._seq = 0
        self._states_stale = False  # memory may hold learning the store never confirmed: reload all
        self._catalog_version = -1
        self._index = None
        self._by_id = {}  # id -> its entry: record digest, Tool once parsed
        self._load_catalog()
        self._load_states()

    # ---- construction ------------------------------------------------------------------------------
    @classmethod
    def from_catalog(
        cls,
        path_or_tools: str | Path | Sequence[Tool | Mapping[str, Any]],
        db: str | Path | Store | None = None,
        encoder: Encoder | str | Path | None = None,
        **config: Any,
    ) -> Retriever:
        """Encode and index a catalog into ``db`` (None: in memory; a path: SQLite; ``redis://...``).

        ``encoder``: an ``Encoder``, or a name as ``rated index --encoder`` takes it (``"default"``, the
        embedded MiniLM, also used when None; ``"hash"`` / ``"hash-DIM"``, a fast fake for tests; or an ONNX
        model folder: ``rated.encode.encoder_from_spec``).

        ``config``: ``policy`` (a name or a Policy instance, default ``"rated"``; an instance is a template:
        the retriever learns in its own copy, ``retriever.policy``), ``policy_params``,
        ``candidates`` (K, default 10), ``max_query_chars`` (10,000), ``semantic`` (a SemanticConfig or
        dict), ``overwrite`` (replace an existing index in ``db``), ``progress``, ``clock``, ``query_cache``
        (recent query embeddings kept in memory, default 1024; 0 turns it off), ``retired`` (when 404/410
        answers to many different queries count against a tool, ``rated.retired``: a ``RetiredRule``, a
        mapping of its fields such as ``{"after": 5, "window": 3600}``, or False to switch it off; saved
        with the index, so every process that opens it follows it), and store
        options ``durability`` / ``busy_timeout`` / ``namespace`` / ``max_outcomes`` (keep only the newest
        outcome records; per-tool counts stay exact). A ``redis://`` URL can carry the last two itself:
        ``?rated_max_outcomes=N`` (or ``none``) and ``?rated_namespace=NAME`` (or ``#NAME``).
        """
        from rated.catalog.prior import compute_prior

        overwrite = bool(config.pop("overwrite", False))
        progress = bool(config.pop("progress", False))
        clock = config.pop("clock", time.time)
        query_cache = config.pop("query_cache", DEFAULT_QUERY_CACHE)
        store_options = {k: config.pop(k) for k in _STORE_OPTIONS if k in config}
        policy_arg = config.pop("policy", DEFAULT_POLICY)
        policy_params = dict(config.pop("policy_params", {}) or {})
        semantic = config.pop("semantic", None)
        candidates = _positive_int(config.pop("candidates", 10), "candidates")
        max_query_chars = _positive_int(config.pop("max_query_chars", 10_000), "max_query_chars")
        retired = RetiredRule.parse(config.pop("retired", None))
        if config:
            raise ConfigError(f"unknown Retriever option(s): {', '.join(sorted(config))}")
        semantic = setup.semantic_config(semantic)
        policy = setup.build_policy(policy_arg, policy_params)
        tools = setup.as_tools(path_or_tools)
        encoder = setup.check_encoder_object(
            encoder if encoder is not None else setup.default_encoder(progress), progress=progress
        )

        store = open_store(db, create=True, **store_options)
        with setup.closing_on_error(store, db):
            if not overwrite and (store.get_meta() or store.load_catalog().ids):
                raise _index_exists(db)
            # encode first, then swap in one change: an interrupted rebuild leaves the old index in place
            embeddings = setup.encode_tools(encoder, tools, progress)
            prior = compute_prior(tools, encoder, progress=progress)
            meta = IndexMeta(
                encoder=EncoderIdentity.of(encoder),
                policy=str(getattr(policy, "name", type(policy).__name__)),
                policy_params=setup.policy_params(policy),
                semantic=dataclasses.asdict(semantic),
                candidates=candidates,
                max_query_chars=max_query_chars,
                prior_stats=prior.stats.to_dict(),
                rated_version=setup.rated_version(),
                retired=retired.to_dict(),
            )
            try:  # re-checked inside the write: another writer may have built an index while we encoded
                version = setup.replace_catalog(
                    store, tools, embeddings, prior, meta.to_dict(), expect_empty=not overwrite
                )
            except IndexExistsError:
                raise _index_exists(db) from None
            retriever = cls(store, encoder, policy, meta, clock=clock, query_cache=query_cache)
            with retriever._lock, setup.progress_status(progress, f"indexing {len(tools):,} tools"):
                # built now, its lexical snapshot (and HNSW graph) saved: the next open restores them
                flat = retriever._search_index().dense.kind == "flat"
                if flat and retriever._catalog_version == version:
                    setup.drop_graph(store, version)  # the graph of the catalog this one replaced
                if not isinstance(store, MemoryStore):  # its facet snapshot too: no process then parses
                    retriever._current_pool_filter().build_facets()  # records for its first filter
            return retriever

    @classmethod
    def open(
        cls,
        db: str | Path | Store,
        encoder: Encoder | str | Path | None = None,
        *,
        policy: Policy | None = None,
        clock: Callable[[], float] = time.time,
        query_cache: int = DEFAULT_QUERY_CACHE,
        retired: RetiredRule | Mapping[str, Any] | bool | None = None,
        **store_options: Any,
    ) -> Retriever:
        """Reopen an index: stored embeddings, prior, policy and learned state; nothing is re-encoded.

        The encoder (an ``Encoder`` or a name, as for ``from_catalog``) defaults to the one the index was
        built with (checked by name, size and weights); ``policy`` is needed only for a custom policy that
        rated's registry does not know. ``retired`` replaces, in this process only, the rule for retired
        endpoints saved with the index (``False`` switches it off here; the evidence other processes gather
        is shared all the same). Store options as for ``from_catalog``.

        Stored tool records are not validated here but each when its tool is first needed (then kept):
        when it is among a query's candidates, named by ``feedback``/``track``/``health``/``tool``, listed
        by ``tools``, or when the in-memory index (built by the first search or ``index``) needs its text,
        which is when no lexical snapshot covers its record (a record edited outside rated never is). A
        damaged record raises ``IndexFormatError`` naming the tool at that moment, and again each time;
        calls that do not need it go on working, and ``sync_tools`` with the right tool replaces it.
        """
        unknown = set(store_options) - set(_STORE_OPTIONS)
        if unknown:
            raise ConfigError(f"unknown Retriever.open option(s): {', '.join(sorted(unknown))}")
        if db is None:  # a new in-memory store is always empty
            raise ConfigError("Retriever.open needs the database (a path, a redis:// URL or a Store)")
        store = open_store(db, create=False, **store_options)
        with setup.closing_on_error(store, db):
            raw = store.get_meta()
            if not raw:
                raise ConfigError(
                    f"{setup.describe_db(db)} holds no index yet (build one with `rated index`)"
                )
            meta = IndexMeta.from_dict(raw, setup.describe_db(db))
            encoder = setup.check_encoder(encoder, meta.encoder, setup.describe_db(db))
            if policy is None:
                policy = setup.build_policy(meta.policy, meta.policy_params)
            return cls(store, encoder, policy, meta, clock=clock, query_cache=query_cache, retired=retired)

    def reopen(self) -> Retriever:
        """A new retriever over this one's store, for the index saved there now: the way on after a rebuild
        with another encoder or policy, which this one refuses. It keeps this retriever's clock,
        query-cache size and own rule for retired endpoints (if it was given one), and its encoder and
        policy where the rebuilt index still uses them (a custom encoder survives a policy-only rebuild, a
        custom policy an encoder-only one). The store is shared: close one of the two retrievers, not
        both."""
        raw = self._store.get_meta()
        saved = IndexMeta.from_dict(raw, setup.describe_db(self._store)) if raw else None
        same_encoder = saved is not None and saved.encoder.same_embeddings(self._meta.encoder)
        same_policy = saved is not None and (saved.policy, saved.policy_params) == (
            self._meta.policy,
            self._meta.policy_params,
        )
        return type(self).open(
            self._store,
            self._encoder if same_encoder else None,
            policy=self._policy if same_policy else None,
            clock=self._clock,
            query_cache=self._query_cache.size,
            retired=self._retired,
        )

    # ---- retrieval ---------------------------------------------------------------------------------
    def retrieve(
        self, query: str, k: int = 5, *, where: ToolFilter | Mapping[str, Any] | None = None
    ) -> list[Hit]:
        """The best ``k`` tools for ``query``, re-ranked by the policy (never empty for a non-empty pool).

        ``where`` (a ``ToolFilter`` or a mapping of its keys: ``tools``, ``exclude``, ``source``, ``tags``,
        ``provider``, ``auth``) ranks only the tools it allows: empty when it allows none."""
        self._check_query(query)
        k = _check_k(k)
        where = ToolFilter.parse(where)
        vec = self._encode_queries([query])[0]
        self._prepare_filter(where)
        with self._lock:
            self._refresh()
            allowed = self._allowed(where)
            pos, sem = self._search_index().search(query, vec, max(self._meta.candidates, k), allowed)
            return self._rank(pos, sem, vec, k)

    def retrieve_many(
        self, queries: Sequence[str], k: int = 5, *, where: ToolFilter | Mapping[str, Any] | None = None
    ) -> list[list[Hit]]:
        """``retrieve`` for a batch of queries (encoded together), each under the same ``where``."""
        if isinstance(queries, str) or not isinstance(queries, Iterable):
            raise QueryError(f"retrieve_many takes a list of queries, got {type(queries).__name__}")
        try:
            queries = list(queries)
        except TypeError:  # iterable by type only: a 0-d numpy array raises when iterated
            raise QueryError(f"retrieve_many takes a list of queries, got {type(queries).__name__}") from None
        for i, q in enumerate(queries):
            try:
                self._check_query(q)
            except QueryError as exc:  # name the culprit: the batch may hold thousands
                raise QueryError(f"queries[{i}]: {exc}") from None
        k = _check_k(k)
        where = ToolFilter.parse(where)
        if not queries:
            return []
        vecs = self._encode_queries(queries)
        self._prepare_filter(where)
        with self._lock:
            self._refresh()
            allowed = self._allowed(where)
            pos, sem = self._search_index().search_many(queries, vecs, max(self._meta.candidates, k), allowed)
            return [self._rank(pos[i], sem[i], vecs[i], k) for i in range(len(queries))]

    def _prepare_filter(self, where: ToolFilter | None) -> None:
        """Index the current pool's platforms, tags, providers and auth kinds for ``where`` before the
        query takes the lock: the first such filter parses every record not parsed yet (0.5 s at 20,000
        tools just opened from a store), and other calls (unfiltered queries, feedback) go on meanwhile.
        The index belongs to its pool (``PoolFilter``): should tools be added or removed before the query
        runs, the query indexes the new pool under the lock (its records mostly parsed by then)."""
        if where is None:
            return
        pool_filter = self._pool_filter  # read without the lock: a hint, checked again below
        if pool_filter is not None and not pool_filter.needs_facets(where):
            return
        with self._lock:
            self._refresh()
            pool_filter = self._current_pool_filter()
            if not pool_filter.needs_facets(where):
                return
        pool_filter.build_facets()

    def _current_pool_filter(self) -> PoolFilter:
        """The current pool's ``PoolFilter``, made on first use (call with the lock held)."""
        if self._pool_filter is None:
            # facets come from the last pool's table and the store's snapshot where their records match
            self._pool_filter = PoolFilter(self._tools, self._position, self._store, self._last_facets)
            self._last_facets = None  # held by the new one now
        return self._pool_filter

    def _allowed(self, where: ToolFilter | None) -> np.ndarray | None:
        """The sorted positions ``where`` allows in the current pool (call with the lock held)."""
        if where is None:
            return None
        return self._current_pool_filter().positions(where)

    def _rank(self, pos: np.ndarray, sem: np.ndarray, vec: np.ndarray, k: int) -> list[Hit]:
        if len(pos) == 0:
            return []
        where = pos.tolist()
        # None for a candidate not read since the pool was set (replaced below: no cast on this path)
        providers: tuple[str, ...] = tuple(map(self._provider_at.__getitem__, where))  # type: ignore[arg-type]
        if None in providers:  # a candidate not read since the pool was set: parse its record
            providers = self._read_entries(where)
        prior_arr = self._prior[pos]
        candidates = Candidates._trusted(  # arrays of this retriever's own making: see _trusted
            tuple(map(self._ids.__getitem__, where)), sem, prior_arr, providers, vec, float(self._clock())
        )
        policy = self._policy
        if isinstance(policy, BasePolicy) and type(policy).rank is BasePolicy.rank:
            checked = True
            # the ranking in plain Python values (checked there, components' lengths too): no arrays made
            # only to be taken apart here
            order, scores, components, healthy, degraded = policy._ranked(candidates)
        else:
            checked = False
            ranking = policy.rank(candidates)
            _check_ranking(ranking, len(candidates))
            order = np.asarray(ranking.order).tolist()
            scores = np.asarray(ranking.scores, dtype=np.float64).tolist()
            healthy = (
                [True] * len(where) if ranking.healthy is None else np.asarray(ranking.healthy, bool).tolist()
            )
            components, degraded = ranking.components, bool(ranking.degraded)
        # plain Python lists once, then cheap indexing per hit: a policy's lists as they are, the candidates'
        # own arrays (RATED's semantic and prior components) converted once
        semantic, prior = sem.tolist(), prior_arr.tolist()
        names = tuple(components)
        converted = {id(sem): semantic, id(prior_arr): prior}
        columns = []
        for v in components.values():
            columns.append(v if type(v) is list else converted.get(id(v)) or _plain_floats(v))
        for name in _BANDIT_NAMES:
            if name in components:
                bandit = columns[names.index(name)]
                break
        else:
            bandit = [None] * len(where)
        top = order[:k]
        if columns:  # each hit's components: its row of the columns, by name
            per_hit = list(zip(*columns) if checked else zip(*columns, strict=True))  # noqa: B905
            parts = [dict(zip(names, per_hit[i])) for i in top]  # noqa: B905 (same length)
        else:
            parts = [{} for _ in top]
        tool_at = self._tool_at
        # a loop, not a comprehension: one would make cells of the locals it reads (Python 3.11)
        hits = []
        for rank, i, part in zip(range(1, len(top) + 1), top, parts):  # noqa: B905 (same length)
            hit = _new(Hit)  # the fields, unchecked, as its __dict__ (see _new)
            _set_attr(
                hit,
                "__dict__",
                {
                    "tool": tool_at[where[i]],
                    "score": scores[i],
                    "semantic": semantic[i],
                    "prior": prior[i],
                    "bandit": bandit[i],
                    "healthy": healthy[i],
                    "degraded": degraded,
                    "rank": rank,
                    "components": part,
                },
            )
            hits.append(hit)
        return hits

    def _read_entries(self, where: list[int]) -> tuple[str, ...]:
        """The providers of the pool's tools at ``where``, each tool and provider read once (its record
        parsed: ``IndexFormatError`` for a damaged one, at every read) and kept for the next rankings."""
        tool_at, provider_at = self._tool_at, self._provider_at
        for p in where:
            if provider_at[p] is None:
                entry = self._tools[p]
                tool_at[p] = entry.tool
                provider_at[p] = entry.provider_key
        return tuple(map(provider_at.__getitem__, where))  # type: ignore[arg-type]  # none None: read above

    # ---- asyncio -----------------------------------------------------------------------------------
    # Agents built on asyncio must not block their event loop on the encoder (milliseconds) or on a store
    # write (a lock wait): these run the same calls in a worker thread (the retriever is thread-safe).
    async def aretrieve(
        self, query: str, k: int = 5, *, where: ToolFilter | Mapping[str, Any] | None = None
    ) -> list[Hit]:
        """``retrieve``, awaitable: runs in a worker thread."""
        return await asyncio.to_thread(partial(self.retrieve, query, k, where=where))

    async def aretrieve_many(
        self, queries: Sequence[str], k: int = 5, *, where: ToolFilter | Mapping[str, Any] | None = None
    ) -> list[list[Hit]]:
        """``retrieve_many``, awaitable: runs in a worker thread."""
        return await asyncio.to_thread(partial(self.retrieve_many, queries, k, where=where))

    # ---- inspection --------------------------------------------------------------------------------
    def now(self) -> float:
        """The time on this retriever's clock (``clock=``), at which it judges health and evidence."""
        return float(self._clock())

    def probe_targets(self, budget: int = 3) -> list[str]:
        """Up to ``budget`` tool ids the policy wants health-checked now, most useful first: tools seen
        failing whose belief has not relaxed yet (``rated.probing`` runs the checks; empty for a policy
        without probes)."""
        budget = _positive_int(budget, "budget")
        with self._lock:
            self._refresh()  # failures other processes saw count too
            targets = getattr(self._policy, "probe_targets", None)
            if targets is None:
                return []
            return [t for t in targets(float(self._clock()), budget) if t in self._by_id]

    def refresh(self) -> None:
        """Pick up what other writers changed, now (``retrieve`` and ``feedback`` do it themselves).

        For health checks: raises ``StoreError`` when the store is gone, or was re-indexed in a way this
        process cannot serve, exactly when ``retrieve`` would.
        """
        with self._lock:
            self._refresh()

    def tools(self, *, stats: bool = True) -> list[ToolHealth]:
        """Every tool with its prior, the policy's health view at this moment, and its outcome counts.

        ``stats=False`` skips the counts: health only, for callers that poll often and summarise a bounded
        slice of the log themselves (the service dashboard).
        """
        counts = self._store.outcome_stats() if stats else {}  # a store read: no need to hold up retrieval
        with self._lock:
            self._refresh()
            return self._health(list(range(len(self._ids))), counts)

    def health(self, tool_id: str, *, stats: bool = True) -> ToolHealth:
        """One tool's current health (``stats=False`` skips reading its outcome counts)."""
        with self._lock:
            self._refresh()
            position = self._position[self._known_id(tool_id)]  # any Unicode spelling, as feedback
            counts = self._store.outcome_stats([self._ids[position]]) if stats else {}
            return self._health([position], counts)[0]

    def _health(self, positions: list[int], stats: Mapping[str, OutcomeStats]) -> list[ToolHealth]:
        """The policy's context-free view (no query) of the tools at ``positions``, at this moment."""
        if not positions:
            return []
        pos = np.asarray(positions, dtype=np.int64)
        ranking = self._policy.rank(
            Candidates(
                tool_ids=tuple(self._ids[p] for p in positions),
                semantic=np.zeros(len(positions), np.float32),
                prior=self._prior[pos],
                providers=tuple([self._tools[p].provider_key for p in positions]),
                context=None,
                now=float(self._clock()),
            )
        )
        healthy = (
            np.ones(len(positions), bool) if ranking.healthy is None else np.asarray(ranking.healthy, bool)
        )
        components = {n: np.asarray(v) for n, v in ranking.components.items() if n != "semantic"}
        return [
            ToolHealth(
                tool=self._tools[p].tool,
                prior=float(self._prior[p]),
                healthy=bool(healthy[j]),
                stats=stats.get(self._ids[p]),
                components={n: float(v[j]) for n, v in components.items()},
            )
            for j, p in enumerate(positions)
        ]

    def parse_tools(self, stop: threading.Event | None = None) -> int:
        """Validate every stored tool record now (``open`` leaves each until its tool is first needed), a
        record at a time and outside the lock: a service runs it in the background after start-up so
        that its first full listing (``GET /tools``, the dashboard, a metrics scrape, all under the lock)
        does not pay for every record at once (2.3 s at 50,000 tools). Stops early once ``stop`` is set.
        Returns how many records are damaged (each raises ``IndexFormatError`` when its tool is needed)."""
        with self._lock:
            entries = self._tools
        damaged = 0
        for entry in entries:
            if stop is not None and stop.is_set():
                break
            try:
                entry.tool  # noqa: B018 - parses and keeps it (an entry parsed already costs nothing)
            except IndexFormatError:
                damaged += 1
        return damaged

    def tool(self, tool_id: str) -> Tool:
        with self._lock:
            self._refresh()  # a tool another process removed is unknown here too
            return self._by_id[self._known_id(tool_id)].tool  # any Unicode spelling, as feedback

    def outcomes(self, tool_id: str | None = None, limit: int | None = 100) -> list[OutcomeRecord]:
        """The most recent ``limit`` outcome records (all when None), oldest first."""
        if limit is not None and (
            isinstance(limit, bool) or not isinstance(limit, (int, np.integer)) or limit < 0
        ):
            raise ConfigError(f"limit must be None or an integer >= 0, got {shown(limit)}")
        if limit is not None:  # more than any log holds is all of it: stores take 64-bit limits only
            limit = None if limit > _NO_LIMIT else int(limit)
        if tool_id is not None:
            with self._lock:
                self._refresh()
                tool_id = self._known_id(tool_id)  # as the catalog spells it: the log's spelling
        return self._store.outcomes(tool_id, limit)

    @property
    def store(self) -> Store:
        return self._store

    @property
    def index(self) -> SemanticIndex:
        """The in-memory ``SemanticIndex`` (positions refer to ``[t.tool for t in tools()]`` order), of the
        catalog stored now: a reload that failed half-way (its index dropped) is tried again first. Its
        ``tools`` are the pool's ``StoredTool`` entries (``.tool`` is the ``Tool``; other attributes read
        through to it, parsing the record on first use)."""
        with self._lock:
            self._refresh()
            return self._search_index()

    @property
    def policy(self) -> Policy:
        return self._policy

    @property
    def encoder(self) -> Encoder:
        return self._encoder

    @property
    def meta(self) -> IndexMeta:
        return self._meta

    def __len__(self) -> int:
        """The number of tools in the index now (including tools other processes added or removed)."""
        with self._lock:
            self._refresh()
            return len(self._ids)

    def close(self) -> None:
        self._store.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        n = len(self._ids)
        return f"Retriever({n} tools, encoder={self._meta.encoder}, policy={self._meta.policy!r})"

    # ---- internals ---------------------------------------------------------------------------------
    def _check_query(self, query: object) -> None:
        if not isinstance(query, str):
            raise QueryError(f"query must be a string, got {type(query).__name__}")
        if not query.strip():
            raise QueryError("query is empty")
        if len(query) > self._meta.max_query_chars:
            raise QueryError(
                f"query is {len(query):,} characters long; the limit is {self._meta.max_query_chars:,} "
                "(max_query_chars)"
            )
        if not query.isascii():
            try:
                query.encode("utf-8")
            except UnicodeEncodeError as exc:  # lone surrogates: JSON "\ud800", argv bytes that are not UTF-8
                raise QueryError(f"query is not valid Unicode text (character {exc.start})") from None

    def _encode_queries(self, queries: Sequence[str]) -> np.ndarray:
        return self._query_cache.encode(queries, self._encode_checked)

    def _encode_checked(self, queries: list[str]) -> np.ndarray:
        vecs = self._encoder.encode_queries(queries)
        return setup.unit_rows(
            vecs, len(queries), self._meta.encoder.dim, f"encoder {self._meta.encoder.name}", "query"
        )


# ---- helpers -----------------------------------------------------------------------------------------
def _index_exists(db: object) -> IndexExistsError:
    """Refusing to index into ``db`` (``rated index`` says it in its own words: ``rated.cli.index_cmds``)."""
    return IndexExistsError(
        f"{setup.describe_db(db)} already holds an index: open it with Retriever.open (sync_tools updates "
        "it, keeping the learned state), or pass overwrite=True to replace it (the learned state is lost)"
    )


def _positive_int(value: Any, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ConfigError(f"{name} must be an integer >= 1, got {shown(value)}")
    return int(value)


def _check_k(k: Any) -> int:
    return _positive_int(k, "k")


def _plain_floats(values: Any) -> list[float]:
    """A score column as plain floats (a float32 or float64 array's ``tolist``: no float64 copy first)."""
    arr = np.asarray(values)
    return (arr if arr.dtype.char in "fd" else arr.astype(np.float64)).tolist()


def _check_ranking(ranking: Ranking, n: int) -> None:
    scores = np.asarray(ranking.scores, dtype=np.float64)
    if scores.shape != (n,) or not all_finite(scores):
        raise ConfigError("the policy returned NaN, infinite or misshaped scores")
    if sorted(np.asarray(ranking.order).tolist()) != list(range(n)):
        raise ConfigError("the policy returned an order that is not a permutation of the candidates")
