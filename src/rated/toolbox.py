"""The tools an agent holds as live objects, indexed and called through one ``Retriever``.

``Toolbox(objects)`` reads each object (a function, a LangChain, LlamaIndex or CrewAI tool, an MCP
``Tool``, a ``Tool`` or a catalog dict: ``rated.catalog.objects``) and indexes their tools; with ``db``
it opens the index saved there and syncs it to the objects (only new or changed tools are encoded; the
others keep what they learned), or builds it there the first time. ``select`` retrieves the best tools
for a query with their objects, and ``run`` calls one the way its framework does, reporting the
outcome through ``Retriever.track``: success when it returns, the classified exception when it raises
(``rated.classify``; arguments that do not fit are the caller's error, and the tool does not run).

A tool set that changes while the agent runs: ``add_tools(objects)`` reads and indexes more objects
(only they are encoded), ``remove_tools(ids)`` drops tools from the toolbox and the index with what they
learned (as ``Retriever.remove_tools``); ``select``, ``run`` and ``definitions`` follow at once, also in
other threads, and a refused change (an id held already or unknown, an unreadable object) changes
nothing. A tool that another process sharing ``db`` removed from the index is never selected, and
running it raises ``RemovedToolError`` (an ``UnknownToolError`` naming the database) before it runs.

``rated.object_calls`` says how each kind of object is called and what is checked before it runs (a
caller error, where the framework does not check it): a function with keyword arguments, converted to its
parameters' types; a LangChain, LlamaIndex or CrewAI tool as its framework calls it. An MCP tool or a
definition has no callable here: call it through your client inside
``toolbox.retriever.track(tool_id, query)``. The arguments may be the JSON text a model wrote.

>>> from rated.encode.testing import HashEncoder
>>> def get_weather(city: str) -> str:
...     '''Current weather for a city.'''
...     return f"sunny in {city}"
>>> def send_email(to: str, body: str) -> str:
...     '''Send an email message.'''
...     return "sent"
>>> box = Toolbox([get_weather, send_email], encoder=HashEncoder(64))
>>> [best] = box.select("weather in a city", k=1)
>>> best.id, best.run({"city": "Oslo"})
('get_weather', 'sunny in Oslo')
>>> box.retriever.outcomes("get_weather")[-1].outcome
'success'
"""

from __future__ import annotations

import asyncio
import dataclasses
import threading
from collections.abc import AsyncIterator, Iterable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, Self

from rated import object_calls
from rated import retriever_setup as setup
from rated.catalog.export import ExportFormat, ToolDefinitions, tool_definitions
from rated.catalog.objects import ToolObject, read_objects
from rated.encode.base import Encoder
from rated.errors import ConfigError, RemovedToolError, ToolExistsError, UnknownToolError
from rated.hits import Hit
from rated.retriever import Retriever, SyncReport
from rated.shown import shown
from rated.store.base import LastToolError, Store
from rated.store.meta import IndexMeta
from rated.store.open import open_store
from rated.store.rows import IdSpellings
from rated.tool_filter import ToolFilter
from rated.tracking import AsyncTrackedCall, TrackedCall

__all__ = ["Selected", "Toolbox"]

_STORE_OPTIONS = ("durability", "busy_timeout", "namespace", "max_outcomes")
_OPEN_OPTIONS = ("clock", "query_cache")
_BUILD_OPTIONS = (
    "policy",
    "policy_params",
    "semantic",
    "candidates",
    "max_query_chars",
    "overwrite",
    "progress",
)
_FILTERS_KEPT = 16  # filters limited to a toolbox's tools, kept for reuse (one for each ``where``)


@dataclass(frozen=True)
class Selected:
    """A retrieved tool with its live object: ``hit`` (as ``Retriever.retrieve`` returns it: ``hit.tool`` is
    the ``Tool`` record), ``obj`` (your object), and ``run`` / ``arun`` to call it, reported for the query it
    was selected for."""

    hit: Hit
    obj: Any
    query: str
    _toolbox: Toolbox = field(repr=False, compare=False)

    @property
    def id(self) -> str:
        return self.hit.id

    def run(self, arguments: Mapping[str, Any] | str | None = None) -> Any:
        return self._toolbox.run(self.hit.id, arguments, query=self.query)

    async def arun(self, arguments: Mapping[str, Any] | str | None = None) -> Any:
        return await self._toolbox.arun(self.hit.id, arguments, query=self.query)


class Toolbox:
    """Tool objects indexed for retrieval, and called with their outcomes reported (see the module doc).

    ``db``: None (in memory), a path, a ``redis://`` URL or a ``Store``. An index already there is opened
    and synced to ``objects``: ``prune=True`` also removes the indexed tools no object is (with what they
    learned); by default they stay, and ``select`` never returns them. Options of ``Retriever.from_catalog``
    (``policy``, ``candidates``, ``clock``, store options ...) build a new index; opening one, the options
    it was built with must match or be left out (``overwrite=True`` rebuilds it, losing its learned
    state). ``encoder``: an ``Encoder`` or a name (``"default"``, ``"hash-64"``, an ONNX model folder), as
    ``Retriever.from_catalog`` takes it; None is the default model for a new index and the index's own
    encoder for one ``db`` holds. ``source`` and ``provider`` are those of
    ``rated.catalog.objects.tools_from_objects``.

    ``add_tools`` and ``remove_tools`` change the tools while the agent runs; ``select``, ``run`` and
    ``definitions`` follow at once, and may be called from other threads meanwhile. A tool id may be typed
    in any Unicode spelling ("é" composed or decomposed), as the retriever takes it: ``run``, ``obj``,
    ``in``, ``remove_tools`` and ``where``'s ``tools`` find the tool as this toolbox spells it.
    """

    def __init__(
        self,
        objects: Iterable[Any],
        db: str | Path | Store | None = None,
        *,
        encoder: Encoder | str | Path | None = None,
        source: str | None = None,
        provider: str | None = None,
        prune: bool = False,
        **config: Any,
    ) -> None:
        if not isinstance(prune, bool):
            raise ConfigError(f"prune must be True or False, got {shown(prune)}")
        unknown = sorted(set(config) - {*_STORE_OPTIONS, *_OPEN_OPTIONS, *_BUILD_OPTIONS})
        if unknown:
            raise ConfigError(f"unknown Toolbox option(s): {', '.join(unknown)}")
        read = read_objects(objects, source=source, provider=provider)
        # replaced whole, never changed in place (add_tools, remove_tools): readers take it as it is
        self._by_id: dict[str, ToolObject] = {r.tool.id: r for r in read}
        retriever, synced = _index([r.tool for r in read], db, encoder, dict(config), prune)
        self._retriever = retriever
        self.synced: SyncReport | None = synced  # what opening ``db`` changed in it (None: built anew)
        self._read_options = {"source": source, "provider": provider}  # add_tools reads as the first ones
        self._db = setup.describe_db(db)  # named by RemovedToolError
        # the index holds tools that no object here is (left by an earlier run, added by another process):
        # searched among this toolbox's tools only, which the filters name (set again when one ranks)
        self._only_own = len(retriever) > len(self._by_id)
        self._indexed: frozenset[str] = frozenset(self._by_id)  # ours in the index (unless removed since)
        self._filters: dict[ToolFilter | None, ToolFilter] = {}  # where -> it limited to ours
        self._made = 0  # changes of what the filters are made from (_by_id, _indexed)
        self._lock = threading.Lock()  # changes to the four above
        self._adding: dict[str, ToolObject] = {}  # being indexed by add_tools, not yet in ``_by_id``
        self._removing: frozenset[str] = frozenset()  # being removed by remove_tools, still in ``_by_id``
        self._changing = threading.Lock()  # one add_tools or remove_tools at a time
        self._spellings: tuple[Mapping[str, ToolObject], IdSpellings] | None = None  # of a ``_by_id``
        self._parsers: object_calls.Parsers = {}  # the function tools' typed-argument parsers, by id

    # ---- retrieval ---------------------------------------------------------------------------------
    def select(
        self, query: str, k: int = 5, *, where: ToolFilter | Mapping[str, Any] | None = None
    ) -> list[Selected]:
        """The best ``k`` tools of this toolbox for ``query`` (``Retriever.retrieve`` with ``where``; a
        ``tools`` key naming a tool this toolbox does not hold is an ``UnknownToolError``, one that another
        process removed from the index allows nothing), each with its object."""
        parsed = ToolFilter.parse(where)
        reread = 0
        while True:
            own = self._own(parsed)
            by_id = self._by_id  # read before the search: a tool removed here meanwhile still has its object
            try:
                hits = self._retriever.retrieve(query, k, where=own)
            except UnknownToolError as exc:
                if own is parsed or reread == 3 or not exc.where.startswith("filter 'tools'"):
                    raise
                reread += 1  # another process removed some of ours from the index: name those it holds
                with self._lock:  # read under it: add_tools may add to it meanwhile
                    self._indexed = frozenset(h.tool.id for h in self._retriever.tools(stats=False))
                    self._forget_filters()
                continue
            selected = []
            for h in hits:
                # the object now (being added or added again since ``by_id`` was read: the hit is the new
                # tool's), else the one a tool removed here meanwhile had when the search began
                entry = self._entry(h.id) or by_id.get(h.id)
                if entry is None:
                    break
                selected.append(Selected(h, entry.obj, query, self))
            else:
                return selected
            self._only_own = True  # another process indexed tools that are not ours: rank among ours only

    async def aselect(
        self, query: str, k: int = 5, *, where: ToolFilter | Mapping[str, Any] | None = None
    ) -> list[Selected]:
        """``select`` in a worker thread, so the encoder and the store never block the event loop."""
        return await asyncio.to_thread(partial(self.select, query, k, where=where))

    def definitions(
        self,
        query: str,
        k: int = 5,
        format: ExportFormat = "openai",
        *,
        where: ToolFilter | Mapping[str, Any] | None = None,
        max_description: int | None = None,
    ) -> ToolDefinitions:
        """The selected tools as definitions for a model API (``rated.tool_definitions``): pass
        ``.definitions`` as the request's tools, then ``run(defs.tool_id(call.name), call.arguments)``."""
        hits = [s.hit for s in self.select(query, k, where=where)]
        return tool_definitions(hits, format, max_description=max_description)

    def _own(self, where: ToolFilter | None) -> ToolFilter | None:
        """``where``, limited to this toolbox's tools when the index holds others, or when it names tools (of
        which another process may have removed some from the index): one filter object for each ``where``
        (the retriever keeps the positions of the last filters it was given)."""
        if not self._only_own and (where is None or where.tools is None):
            return where
        own = self._filters.get(where)
        if own is None:
            made = self._made
            own = self._allowlist(where)
            with self._lock:
                if made == self._made:  # not made from what a change since replaced
                    if len(self._filters) >= _FILTERS_KEPT:
                        del self._filters[next(iter(self._filters))]
                    self._filters[where] = own
        return own

    def _forget_filters(self) -> None:
        """Call with ``_lock`` held, after changing ``_by_id`` or ``_indexed``."""
        self._filters.clear()
        self._made += 1

    def _allowlist(self, where: ToolFilter | None) -> ToolFilter:
        by_id = self._by_id
        ours = frozenset(by_id) & self._indexed
        if where is None:
            return ToolFilter(tools=ours)
        if where.tools is not None:  # in any Unicode spelling, as the retriever's filters take them
            named = {tool_id: self._held_id(tool_id, by_id) for tool_id in where.tools}
            unknown = sorted(tool_id for tool_id, held in named.items() if held is None)
            if unknown:
                more = f" (and {len(unknown) - 1} more)" if len(unknown) > 1 else ""
                raise UnknownToolError(unknown[0], f"filter 'tools'{more}")
            ours &= frozenset(named.values())
        return dataclasses.replace(where, tools=ours)

    def _held_id(self, tool_id: object, by_id: Mapping[str, ToolObject] | None = None) -> str | None:
        """The id of this toolbox's tool (in ``by_id``, by default ``_by_id``) that ``tool_id`` names, typed
        in any Unicode spelling as the retriever finds it (``IdSpellings``), or None."""
        held = self._by_id if by_id is None else by_id
        if not isinstance(tool_id, str):
            return None
        if tool_id in held:
            return tool_id
        spellings = self._spellings
        if spellings is None or spellings[0] is not held:  # made once for each ``_by_id``
            spellings = self._spellings = (held, IdSpellings(held))
        return spellings[1].find(tool_id)

    # ---- changing the tools ------------------------------------------------------------------------
    def add_tools(
        self,
        objects: Iterable[Any],
        *,
        source: str | None = None,
        provider: str | None = None,
        progress: bool = False,
    ) -> SyncReport:
        """Add tool objects, read as the toolbox's first ones were (with its ``source`` and ``provider``,
        unless given here), and index them: only they are encoded, and ``select``, ``run`` and
        ``definitions`` have them when it returns. A tool the index already holds without an object here
        (left by an earlier run, or another process's) is taken as opening ``db`` takes it: updated in
        place if it changed, keeping what it learned. A tool this toolbox holds that the index no longer
        does (another process removed it: ``RemovedToolError``) is indexed again, with the object given
        here. An id this toolbox holds and the index too (``ToolExistsError``, in any Unicode spelling) or
        an object that cannot be read (``CatalogError``, each problem listed) changes nothing. Returns what
        changed in the index (``added``, ``updated``, ``unchanged``). It encodes in the calling thread
        (``asyncio.to_thread`` for an event loop); ``select`` and ``run`` go on meanwhile."""
        options = {
            "source": self._read_options["source"] if source is None else source,
            "provider": self._read_options["provider"] if provider is None else provider,
        }
        read = read_objects(objects, **options)
        with self._changing:
            by_id = self._by_id
            replaced = self._removed_elsewhere(read, by_id)  # held here, gone from the index: added again
            new = {r.tool.id: r for r in read}
            self._adding = new  # a select finding them once indexed, before _by_id has them, takes these
            try:
                report = self._index_new([r.tool for r in read], progress)
                with self._lock:
                    kept = by_id  # the others in order, less those indexed again (only then copied: ms)
                    if replaced:
                        kept = {t: entry for t, entry in by_id.items() if t not in replaced}
                    self._by_id = {**kept, **new}
                    self._indexed = (self._indexed - replaced) | frozenset(new)  # not an old spelling
                    self._forget_filters()
            finally:
                self._adding = {}
        return report

    def _index_new(self, tools: list[Any], progress: bool) -> SyncReport:
        """Index ``tools`` as ``Retriever.add_tools`` does while the index holds none of them (only they are
        encoded, and the index takes them in place); else as opening ``db`` syncs them (``sync_tools``: one
        kept from an earlier run, or that another process added meanwhile, is re-encoded if it changed and
        keeps what it learned; one in another Unicode spelling is refused). The sync compares the whole
        catalog and reloads it, which cost 4-8x the add for 5 new tools among 5,000
        (benchmarks/toolbox_add.py); a refused add changed nothing, so the sync starts from the same index."""
        try:
            self._retriever.add_tools(tools, progress=progress)
        except ToolExistsError:
            return self._retriever.sync_tools(tools, progress=progress)
        return SyncReport(added=[t.id for t in tools])

    def _removed_elsewhere(self, read: list[ToolObject], by_id: Mapping[str, ToolObject]) -> frozenset[str]:
        """The ids (as this toolbox spells them) of the tools in ``read`` that it holds but the index no
        longer does (another process removed them): ``add_tools`` indexes them again with their new objects,
        as ``RemovedToolError`` advises; ``remove_tools`` cannot drop the last one first. One that the index
        still holds is a ``ToolExistsError``."""
        held = {r.tool.id: found for r in read if (found := self._held_id(r.tool.id, by_id)) is not None}
        if not held:
            return frozenset()
        still = [tool_id for tool_id, found in held.items() if self._in_index(found)]
        if still:
            raise ToolExistsError(still)
        return frozenset(held.values())

    def _in_index(self, tool_id: str) -> bool:
        """Whether the index holds ``tool_id`` now (in any Unicode spelling; changes by other processes
        read)."""
        try:
            self._retriever.tool(tool_id)
        except UnknownToolError:
            return False
        return True

    def remove_tools(self, tool_ids: str | Iterable[str]) -> list[str]:
        """Drop tools from this toolbox and from the index, with what they learned (as
        ``Retriever.remove_tools``): ``select`` and ``definitions`` no longer give them, and ``run`` no
        longer knows them. An id this toolbox does not hold (``UnknownToolError``), or removing every tool
        of it (``LastToolError``, a ``ConfigError``: add the new ones first), changes nothing. A tool that
        another process removed from the index already is dropped here only. Returns the ids removed, as
        this toolbox spells them (an id may be typed in any Unicode spelling)."""
        if not isinstance(tool_ids, (str, Iterable)):
            raise ConfigError(
                f"remove_tools takes a tool id or a list of them, got {type(tool_ids).__name__}"
            )
        given = [tool_ids] if isinstance(tool_ids, str) else list(tool_ids)
        with self._changing:
            by_id = self._by_id
            held = [self._held_id(tool_id, by_id) for tool_id in given]  # any Unicode spelling
            for tool_id, found in zip(given, held, strict=True):
                if found is None:
                    raise UnknownToolError(tool_id)
            ids: list[str] = list(dict.fromkeys(held))  # type: ignore[arg-type]
            if not ids:
                return []
            if len(ids) == len(by_id):
                raise LastToolError(
                    f"cannot remove every tool of this toolbox ({len(ids)}): add the new ones first"
                )
            gone = frozenset(ids)
            self._removing = gone  # a call that finds them gone from the index meanwhile: unknown here
            try:
                self._unindex(ids)
                with self._lock:
                    self._by_id = {tool_id: entry for tool_id, entry in by_id.items() if tool_id not in gone}
                    self._indexed -= gone
                    self._forget_filters()
            finally:
                self._removing = frozenset()
            return ids

    def _unindex(self, ids: list[str]) -> None:
        """``retriever.remove_tools(ids)``, less those another process removed from the index already."""
        left = list(ids)
        while left:
            try:
                self._retriever.remove_tools(left)
                return
            except UnknownToolError as exc:
                if exc.tool_id not in left:
                    raise
                left.remove(exc.tool_id)

    # ---- calls -------------------------------------------------------------------------------------
    def run(
        self, tool_id: str, arguments: Mapping[str, Any] | str | None = None, *, query: str | None = None
    ) -> Any:
        """Call the tool ``tool_id`` with ``arguments`` (a mapping, or the JSON text of one) the way its
        framework does, and report the outcome (``query``: what it was called for). Returns what the
        tool returned; an exception it raised propagates after it is reported."""
        entry = self._callable(tool_id, awaited=False)
        with self._track(entry.tool.id, query) as call:
            return object_calls.run(call, entry, arguments, self._parsers)

    async def arun(
        self, tool_id: str, arguments: Mapping[str, Any] | str | None = None, *, query: str | None = None
    ) -> Any:
        """``run`` for asyncio: coroutine functions are awaited, LangChain tools ``ainvoke``d, LlamaIndex
        tools ``acall``ed; plain functions and CrewAI tools run in a worker thread."""
        entry = self._callable(tool_id, awaited=True)
        if object_calls.in_worker_thread(entry):
            return await asyncio.to_thread(partial(self.run, tool_id, arguments, query=query))
        async with self._atrack(entry.tool.id, query) as call:
            return await object_calls.arun(call, entry, arguments, self._parsers)

    def _track(self, tool_id: str, query: str | None) -> TrackedCall:
        """``retriever.track``; one of this toolbox's tools that the index no longer holds is a
        ``RemovedToolError``."""
        try:
            return self._retriever.track(tool_id, query)
        except UnknownToolError:
            raise self._gone(tool_id) from None

    @asynccontextmanager
    async def _atrack(self, tool_id: str, query: str | None) -> AsyncIterator[AsyncTrackedCall]:
        """``retriever.atrack``, as ``_track``: an ``UnknownToolError`` raised in the block is the tool's."""
        entered = False
        try:
            async with self._retriever.atrack(tool_id, query) as call:
                entered = True
                yield call
        except UnknownToolError:
            if entered:
                raise
            raise self._gone(tool_id) from None

    def _gone(self, tool_id: str) -> UnknownToolError:
        """The error for a tool of this toolbox that the index does not hold (one ``add_tools`` is still
        indexing, or being removed or removed here meanwhile: unknown to the toolbox as it is now)."""
        if tool_id in self._removing or tool_id not in self._by_id:  # read first: cleared after _by_id
            return UnknownToolError(tool_id)
        return RemovedToolError(tool_id, self._db)

    def _entry(self, tool_id: str) -> ToolObject | None:
        """This toolbox's entry for ``tool_id`` (in any Unicode spelling), or the one ``add_tools`` is
        indexing (read first: it is cleared once ``_by_id`` holds it)."""
        entry = self._adding.get(tool_id) or self._by_id.get(tool_id)
        if entry is None and (held := self._held_id(tool_id)) is not None:
            entry = self._by_id.get(held)
        return entry

    def _callable(self, tool_id: object, *, awaited: bool) -> ToolObject:
        """The entry of ``tool_id``, if this toolbox can call it (``run`` or, ``awaited``, ``arun``)."""
        entry = self._entry(tool_id) if isinstance(tool_id, str) else None
        if entry is None:
            raise UnknownToolError(tool_id)  # type: ignore[arg-type]
        object_calls.check_callable(entry, awaited=awaited)
        return entry

    # ---- inspection --------------------------------------------------------------------------------
    @property
    def retriever(self) -> Retriever:
        """The retriever underneath: feedback, health, outcomes, catalog changes."""
        return self._retriever

    @property
    def ids(self) -> list[str]:
        """The tool ids of this toolbox, in the order of its objects."""
        return list(self._by_id)

    def obj(self, tool_id: str) -> Any:
        """Your object for the tool ``tool_id`` (``retriever.tool(tool_id)`` is its ``Tool`` record);
        ``UnknownToolError`` if no object here is it."""
        by_id = self._by_id
        held = self._held_id(tool_id, by_id)
        if held is None:
            raise UnknownToolError(tool_id)
        return by_id[held].obj

    def __contains__(self, tool_id: object) -> bool:
        return self._held_id(tool_id) is not None

    def __len__(self) -> int:
        return len(self._by_id)

    def close(self) -> None:
        self._retriever.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Toolbox({len(self._by_id)} tools, {self._retriever!r})"


# ---- building or opening the index -------------------------------------------------------------------
def _index(
    tools: list[Any], db: Any, encoder: Encoder | str | Path | None, config: dict[str, Any], prune: bool
) -> tuple[Retriever, SyncReport | None]:
    """A new index of ``tools`` in ``db``, or the one ``db`` holds, synced to them (and its report)."""
    if encoder is not None:  # a name resolved (a model folder loaded) once, and refused before ``db`` opens
        encoder = setup.check_encoder_object(encoder, progress=bool(config.get("progress")))
    if db is None or config.get("overwrite"):
        return Retriever.from_catalog(tools, db, encoder, **config), None
    store_options = {k: config.pop(k) for k in _STORE_OPTIONS if k in config}
    store = open_store(db, create=True, **store_options)
    with setup.closing_on_error(store, db):
        if not store.get_meta():
            try:
                return Retriever.from_catalog(tools, store, encoder, **config), None
            except ConfigError:
                if not store.get_meta():
                    raise
                # another process built it meanwhile: open theirs
        where = setup.describe_db(db)
        meta = IndexMeta.from_dict(store.get_meta(), where)
        _check_as_built(meta, config, where)
        policy = config.get("policy")
        retriever = Retriever.open(
            store,
            encoder,
            policy=None if policy is None or isinstance(policy, str) else policy,
            **{k: config[k] for k in _OPEN_OPTIONS if k in config},
        )
        return retriever, retriever.sync_tools(tools, prune=prune, progress=bool(config.get("progress")))


def _check_as_built(meta: IndexMeta, config: Mapping[str, Any], where: str) -> None:
    """Options that only building uses must say what the index was built with (or be left out)."""
    given: dict[str, tuple[Any, Any]] = {}
    policy = config.get("policy")
    if policy is not None:
        name = policy if isinstance(policy, str) else str(getattr(policy, "name", type(policy).__name__))
        given["policy"] = (name, meta.policy)
    if config.get("policy_params"):
        built = setup.build_policy(meta.policy, config["policy_params"])
        given["policy_params"] = (setup.policy_params(built), meta.policy_params)
    if config.get("semantic") is not None:
        given["semantic"] = (setup.semantic_config(config["semantic"]), setup.semantic_config(meta.semantic))
    for key in ("candidates", "max_query_chars"):
        if key in config:
            given[key] = (config[key], getattr(meta, key))
    for key, (wanted, built) in given.items():
        if wanted != built:
            raise ConfigError(
                f"{where} was built with {key}={shown(built)}, not {shown(wanted)}: leave {key} out to use "
                "the index as built, or pass overwrite=True to rebuild it (its learned state is lost)"
            )
