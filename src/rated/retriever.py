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
>>> r.feedback("mail.a", "tool_error", query="send an email")
>>> [h.tool.id for h in r.retrieve("send an email", k=2)]
['mail.b', 'mail.a']
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import partial
from pathlib import Path
from typing import Any, Self, TypeVar

import numpy as np

from rated import retriever_setup as setup
from rated.catalog.schema import Tool
from rated.catalog_sync import SyncPlan, SyncReport, plan_sync
from rated.encode.base import Encoder
from rated.encode.query_cache import DEFAULT_QUERY_CACHE, QueryCache
from rated.errors import (
    ConfigError,
    IndexFormatError,
    QueryError,
    StoreError,
    ToolExistsError,
    UnknownToolError,
)
from rated.hits import Hit, ToolHealth
from rated.index.semantic import SemanticIndex, dense_kind
from rated.outcome import Outcome, OutcomeKind, finite_seconds
from rated.policy.base import BasePolicy, Candidates, Feedback, Policy, Ranking, all_finite
from rated.retired import STATUSES, RetiredRule, weigh
from rated.shown import shown
from rated.store.base import (
    CatalogChangedError,
    IndexExistsError,
    LastToolError,
    OutcomeRecord,
    OutcomeStats,
    Store,
)
from rated.store.codec import decode_state, encode_state
from rated.store.memory import MemoryStore
from rated.store.meta import EncoderIdentity, IndexMeta
from rated.store.open import open_store
from rated.store.rows import IdSpellings
from rated.stored_tool import StoredTool, record_digest
from rated.tool_filter import FacetTable, PoolFilter, ToolFilter
from rated.tracking import AsyncTrackedCall, TrackedCall

__all__ = ["DEFAULT_POLICY", "Hit", "Retriever", "SyncReport", "ToolHealth"]

DEFAULT_POLICY = "rated"
_STORE_OPTIONS = ("durability", "busy_timeout", "namespace", "max_outcomes")
_BANDIT_NAMES = ("bandit", "mab", "health")  # what policies call their feedback-learned component
# how retrieve makes a hit: its __dict__ set in one call, not the frozen __init__'s setattr per field (about
# 2 us less per hit, k of them on the latency-critical path); Hit is a plain frozen dataclass otherwise
_new, _set_attr = object.__new__, object.__setattr__
_NO_LIMIT = 2**62  # an outcomes() limit above this is no limit
_SYNC_TRIES = 4  # encodings in one sync while other writers keep changing the tools it syncs
_RELOAD_TRIES = 3  # catalog reloads in one refresh while rebuilds keep landing mid-way (then: next refresh)
T = TypeVar("T")


class Retriever:
    """Semantic retrieval re-ranked by a policy that learns from execution outcomes.

    Build with ``Retriever.from_catalog`` (encode and index a catalog) or ``Retriever.open`` (reopen a
    database without re-encoding). Thread-safe; processes may share one SQLite file or Redis database.
    Calls of one retriever are serialised: a ``feedback`` waiting for another process's write (at most
    ``busy_timeout``, normally milliseconds) delays this retriever's ``retrieve`` calls meanwhile.
    """

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
        self._version: int | None = None
        self._seq = 0
        self._states_stale = False  # memory may hold learning the store never confirmed: reload all
        self._catalog_version = -1
        self._index: SemanticIndex | None = None
        self._by_id: dict[str, StoredTool] = {}  # id -> its entry: record digest, Tool once parsed
        self._load_catalog()
        self._load_states()

    # ---- construction ------------------------------------------------------------------------------
    @classmethod
    def from_catalog(
        cls,
        path_or_tools: str | Path | Sequence[Tool | Mapping[str, Any]],
        db: str | Path | Store | None = None,
        encoder: Encoder | None = None,
        **config: Any,
    ) -> Retriever:
        """Encode and index a catalog into ``db`` (None: in memory; a path: SQLite; ``redis://...``).

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
            encoder if encoder is not None else setup.default_encoder(progress)
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
        encoder: Encoder | None = None,
        *,
        policy: Policy | None = None,
        clock: Callable[[], float] = time.time,
        query_cache: int = DEFAULT_QUERY_CACHE,
        retired: RetiredRule | Mapping[str, Any] | bool | None = None,
        **store_options: Any,
    ) -> Retriever:
        """Reopen an index: stored embeddings, prior, policy and learned state; nothing is re-encoded.

        The encoder defaults to the one the index was built with (checked by name, size and weights);
        ``policy`` is needed only for a custom policy that rated's registry does not know. ``retired``
        replaces, in this process only, the rule for retired endpoints saved with the index (``False``
        switches it off here; the evidence other processes gather is shared all the same). Store options
        as for ``from_catalog``.

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
        providers = tuple(map(self._provider_at.__getitem__, where))
        if None in providers:  # a candidate not read since the pool was set: parse its record
            providers = self._read_entries(where)
        prior_arr = self._prior[pos]
        candidates = Candidates._trusted(  # arrays of this retriever's own making: see _trusted
            tuple(map(self._ids.__getitem__, where)), sem, prior_arr, providers, vec, float(self._clock())
        )
        policy = self._policy
        checked = isinstance(policy, BasePolicy) and type(policy).rank is BasePolicy.rank
        if checked:
            # the ranking in plain Python values (checked there, components' lengths too): no arrays made
            # only to be taken apart here
            order, scores, components, healthy, degraded = policy._ranked(candidates)
        else:
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
        return tuple(map(provider_at.__getitem__, where))

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

    async def afeedback(
        self,
        tool_id: str,
        outcome: Outcome | OutcomeKind | str | bool,
        query: str | None = None,
        retry_after: float | None = None,
    ) -> Outcome:
        """``feedback``, awaitable: runs in a worker thread; returns once the outcome is persisted."""
        return await asyncio.to_thread(self.feedback, tool_id, outcome, query, retry_after)

    # ---- feedback ----------------------------------------------------------------------------------
    def feedback(
        self,
        tool_id: str,
        outcome: Outcome | OutcomeKind | str | bool,
        query: str | None = None,
        retry_after: float | None = None,
        *,
        probe: bool = False,
    ) -> Outcome:
        """Report how a call of ``tool_id`` went; persisted (and shared) before this returns, which gives
        what the policy learned: the outcome reported, or a ``tool_error`` for a 404/410 the rule below
        counted.

        ``outcome``: ``"success"``, ``"tool_error"``, ``"timeout"``, ``"rate_limited"``, ``"auth_error"``,
        ``"caller_error"`` (never counts against the tool), an ``Outcome``, or a bool. ``query`` (the
        request the tool was called for) lets the policy learn query-specific failures; ``retry_after``
        (seconds) is a rate-limit hint. ``probe``: a health check no agent paid for (``rated.probing``):
        it moves the policy's belief but is not written to the outcome log, whose counts are calls.

        A ``caller_error`` that came from a 404 or 410 (an ``Outcome`` whose ``status`` says so, as
        ``outcome_from_status`` and ``track`` make them) is weighed as evidence of a retired endpoint
        (``rated.retired``): once the tool has answered so to enough different queries since its last
        success, the policy learns it as a ``tool_error``; the outcome log still records ``caller_error``.
        """
        if not isinstance(tool_id, str) or not tool_id:
            raise UnknownToolError(tool_id)  # as passed: the message quotes it (short), str() may fail
        retry_after = _check_retry_after(retry_after)
        if isinstance(outcome, Outcome) and retry_after is not None:
            outcome = Outcome(outcome.kind, retry_after, outcome.status)
        result = Outcome.of(outcome, retry_after)
        context = None
        query_hash = None
        if query is not None:
            self._check_query(query)
            context = self._encode_queries([query])[0]
            query_hash = hashlib.sha256(query.encode("utf-8")).hexdigest()[:16]
        with self._lock:
            self._refresh()  # the tool may have been added or removed by another process since
            tool_id = self._known_id(tool_id)  # as the catalog spells it, whichever Unicode form was typed
            entry = self._by_id[tool_id]
            now = float(self._clock())
            learned, learned_context = result, context
            # the rule is read only for a 404/410 (what it weighs), not on every feedback
            rule = None if probe or result.status not in STATUSES else self._retired_rule()
            if (
                rule is not None
                and rule.applies(result)
                and weigh(self._store, rule, tool_id, query_hash, now).counts
            ):
                # the evidence is about the tool (many queries, all answered "gone"), not about this query
                learned, learned_context = Outcome(OutcomeKind.TOOL_ERROR, None, result.status), None
            fb = Feedback(
                tool_id=tool_id,
                outcome=learned,
                now=now,
                context=learned_context,
                provider=entry.tool.provider_key,
                probe=bool(probe),
            )
            record = (
                None
                if probe
                else OutcomeRecord(now, tool_id, result.kind.value, query_hash, result.retry_after)
            )
            counts = learned.is_success or learned.counts_against_tool
            keys = list(self._policy.state_keys(fb)) if counts else []

            def update(current: Mapping[str, bytes]) -> dict[str, bytes]:
                self._set_states(keys, current)
                self._policy.learn(fb)
                out = {}
                for key in keys:
                    state = self._policy.get_state(key)
                    if state is not None:
                        out[key] = encode_state(state)
                return out

            try:
                self._store.update_states(keys, update, record)
            except BaseException:
                self._undo_local(keys)  # the policy may hold a change the store refused
                raise
        return learned

    @property
    def retired_rule(self) -> RetiredRule:
        """The rule for retired endpoints that ``feedback`` applies: this process's own (``open(...,
        retired=...)``), else the one saved with the index."""
        return self._retired_rule()

    def now(self) -> float:
        """The time on this retriever's clock (``clock=``), at which it judges health and evidence."""
        return float(self._clock())

    def _retired_rule(self) -> RetiredRule:
        """The rule for retired endpoints: this process's own, else the one saved with the index."""
        if self._retired is not None:
            return self._retired
        try:
            return RetiredRule.parse(self._meta.retired)
        except ConfigError as exc:
            raise IndexFormatError(
                f"{setup.describe_db(self._store)}: the saved rule for retired endpoints is damaged ({exc})"
            ) from None

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

    # ---- tracked calls: the outcome reported and classified by itself (rated.tracking, rated.classify) --
    def track(self, tool_id: str, query: str | None = None) -> TrackedCall:
        """``with r.track(tool_id, query=...) as call:`` reports the call made in the block, once: success
        when it returns, ``outcome_from_exception`` when it raises (the exception propagates), or what
        ``call.report(...)`` / ``call.report_status(status, headers)`` said. An unknown tool id or a bad
        query fails here, before the tool runs; a report that fails is logged, never raised over the call.
        """
        return TrackedCall(self._check_call(tool_id, query), query, self.feedback)

    def atrack(self, tool_id: str, query: str | None = None) -> AsyncTrackedCall:
        """``track`` for ``async with``: entering checks the id off the event loop; ``afeedback`` reports."""
        start = partial(asyncio.to_thread, self._check_call, tool_id, query)
        return AsyncTrackedCall(tool_id, query, self.afeedback, start)

    def call(
        self,
        tool_id: str,
        fn: Callable[..., T],
        arguments: Mapping[str, Any] | None = None,
        *,
        query: str | None = None,
    ) -> T:
        """``fn(**arguments)``, tracked as ``track`` does; arguments that do not fit ``fn`` are reported as
        a caller error and raise ``TypeError`` without running it."""
        with self.track(tool_id, query) as tracked:
            return tracked.run(fn, arguments)

    async def acall(
        self,
        tool_id: str,
        fn: Callable[..., Any],
        arguments: Mapping[str, Any] | None = None,
        *,
        query: str | None = None,
    ) -> Any:
        """``call`` for coroutine functions (a plain function's result is returned as it is)."""
        async with self.atrack(tool_id, query) as tracked:
            return await tracked.run(fn, arguments)

    def _check_call(self, tool_id: object, query: object) -> str:
        """The catalog's spelling of ``tool_id`` (``UnknownToolError`` if none), the query checked too."""
        if query is not None:
            self._check_query(query)
        with self._lock:
            self._refresh()
            return self._known_id(tool_id)

    # ---- catalog changes ---------------------------------------------------------------------------
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
                index.tools,
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
            if index is not None:
                self._change_index(index.remove, ids)
            else:
                self._unindexed = self._unindexed_without(ids)
            self._forget_states(ids)
            self._states_stale = True  # reload the remaining states into a fresh copy at the next refresh:
            # what the policy learned from these tools beyond their states goes with them (_load_states)
            self._set_pool(index.tools if index is not None else self._unindexed[0], self._prior_by_id)
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

    def _known_id(self, tool_id: object) -> str:
        """``tool_id`` as the catalog spells it (typed in any Unicode spelling: ``IdSpellings``)."""
        found = self._spellings.find(tool_id)
        if found is None:
            raise UnknownToolError(tool_id)  # type: ignore[arg-type]
        return found

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

    # ---- inspection --------------------------------------------------------------------------------
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
        self._last_facets: FacetTable | None = (
            previous.latest_facets if previous is not None else getattr(self, "_last_facets", None)
        )
        self._pool_filter: PoolFilter | None = None  # built by the first filtered query of this pool
        self._ids = [t.id for t in self._tools]
        self._by_id = dict(zip(self._ids, self._tools, strict=True))
        self._position = dict(zip(self._ids, range(len(self._ids)), strict=True))
        self._spellings = IdSpellings(self._position)
        self._prior_by_id = {i: float(prior_by_id[i]) for i in self._ids}  # in pool order
        self._prior = np.fromiter(self._prior_by_id.values(), np.float32, len(self._ids))
        # each tool and its provider once a ranking has read them (None before): the candidates' providers
        # and the hits' tools without StoredTool's attribute hook and property (about 2 us a ranking)
        self._tool_at: list[Tool | None] = [None] * len(self._ids)
        self._provider_at: list[str | None] = [None] * len(self._ids)

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


# ---- helpers -----------------------------------------------------------------------------------------
def _kept_changing(store: Store, what: str) -> StoreError:
    return StoreError(
        f"{setup.describe_db(store)}: the catalog kept changing while the {what} was being stored; "
        f"nothing was stored: try again"
    )


def _index_exists(db: object) -> ConfigError:
    return ConfigError(
        f"{setup.describe_db(db)} already holds an index; replace it with `rated index --force` "
        "(overwrite=True), or open it with Retriever.open"
    )


def _positive_int(value: Any, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ConfigError(f"{name} must be an integer >= 1, got {shown(value)}")
    return int(value)


def _check_k(k: Any) -> int:
    return _positive_int(k, "k")


def _check_retry_after(value: Any) -> float | None:
    if value is None:
        return None
    seconds = finite_seconds(value)  # numpy scalars too: a retry-after is often computed
    if seconds is None:
        raise ConfigError(f"retry_after must be a finite number of seconds >= 0, got {shown(value)}")
    return seconds


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
