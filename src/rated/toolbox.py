"""The tools an agent holds as live objects, indexed and called through one ``Retriever``.

``Toolbox(objects)`` reads each object (a function, a LangChain, LlamaIndex or CrewAI tool, an MCP
``Tool``, a ``Tool`` or a catalog dict: ``rated.catalog.objects``) and indexes their tools; with ``db``
it opens the index saved there and syncs it to the objects (only new or changed tools are encoded; the
others keep what they learned), or builds it there the first time. ``select`` retrieves the best tools
for a query with their objects, and ``run`` calls one the way its framework does, reporting the
outcome through ``Retriever.track``: success when it returns, the classified exception when it raises
(``rated.classify``; arguments that do not fit are the caller's error, and the tool does not run).

How each kind is called: a function ``fn(**arguments)``; a LangChain tool ``invoke(arguments)``
(``ainvoke``); a LlamaIndex tool ``call(**arguments)`` (``acall``), after checking the arguments
against its ``fn_schema``, which LlamaIndex itself does not, and a ``ToolOutput`` with ``is_error``
set reports its exception's outcome; a CrewAI tool ``run(**arguments)`` (``arun`` runs it in a worker
thread), whose ``ToolFailure`` results report a failure. ``arun`` awaits coroutine functions and runs
other functions in a worker thread. An MCP tool or a definition has no callable here: call it through
your client inside ``toolbox.retriever.track(tool_id, query)``.

The arguments may be the JSON text a model wrote (``call.function.arguments``): text that is not a JSON
object is a caller error, reported before anything runs.

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
import inspect
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, Self

from rated import retriever_setup as setup
from rated.catalog.export import ExportFormat, ToolDefinitions, tool_definitions
from rated.catalog.objects import ToolObject, read_objects
from rated.classify import outcome_from_exception
from rated.errors import ConfigError, UnknownToolError
from rated.hits import Hit
from rated.outcome import OutcomeKind
from rated.retriever import Retriever, SyncReport
from rated.shown import shown
from rated.store.base import Store
from rated.store.meta import IndexMeta
from rated.store.open import open_store
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
_NOT_CALLABLE = ("mcp", "definition")
# CrewAI's ToolFailure reasons that are no fault of the tool (crewai.tools.tool_failure.ToolFailureReason)
_CREWAI_NOT_THE_TOOL = frozenset({"usage_limit", "unknown_tool", "invalid_input", "repeated_call"})


@dataclass(frozen=True)
class Selected:
    """A retrieved tool with its live object: ``hit`` (as ``Retriever.retrieve`` returns it), ``tool`` (the
    object), and ``run`` / ``arun`` to call it, reported for the query it was selected for."""

    hit: Hit
    tool: Any
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
    state). ``source`` and ``provider`` are those of ``rated.catalog.objects.tools_from_objects``.
    """

    def __init__(
        self,
        objects: Iterable[Any],
        db: str | Path | Store | None = None,
        *,
        encoder: Any = None,
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
        self._by_id: dict[str, ToolObject] = {r.tool.id: r for r in read}
        retriever, synced = _index([r.tool for r in read], db, encoder, dict(config), prune)
        self._retriever = retriever
        self.synced: SyncReport | None = synced  # what opening ``db`` changed in it (None: built anew)
        # indexed tools that no object here is (left by an earlier run, added by another process): found
        # when they come up in a ranking, then excluded from it
        self._foreign: frozenset[str] = frozenset()
        self._plain_where: tuple[frozenset[str], ToolFilter] | None = None

    # ---- retrieval ---------------------------------------------------------------------------------
    def select(
        self, query: str, k: int = 5, where: ToolFilter | Mapping[str, Any] | None = None
    ) -> list[Selected]:
        """The best ``k`` tools of this toolbox for ``query`` (``Retriever.retrieve`` with ``where``),
        each with its object."""
        while True:
            foreign = self._foreign
            hits = self._retriever.retrieve(query, k, where=self._where(where, foreign))
            strays = [h.id for h in hits if h.id not in self._by_id]
            if not strays:
                return [Selected(h, self._by_id[h.id].obj, query, self) for h in hits]
            # another process indexed tools that are not ours: exclude them, and rank again
            self._foreign = foreign | frozenset(strays)

    async def aselect(
        self, query: str, k: int = 5, where: ToolFilter | Mapping[str, Any] | None = None
    ) -> list[Selected]:
        """``select`` in a worker thread, so the encoder and the store never block the event loop."""
        return await asyncio.to_thread(self.select, query, k, where)

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
        hits = [s.hit for s in self.select(query, k, where)]
        return tool_definitions(hits, format, max_description=max_description)

    def _where(self, where: ToolFilter | Mapping[str, Any] | None, foreign: frozenset[str]) -> Any:
        if not foreign:
            return where
        parsed = ToolFilter.parse(where)
        if parsed is not None:
            return dataclasses.replace(parsed, exclude=parsed.exclude | foreign)
        cached = self._plain_where
        if cached is None or cached[0] is not foreign:  # one filter object: the retriever caches its answer
            cached = self._plain_where = (foreign, ToolFilter(exclude=foreign))
        return cached[1]

    # ---- calls -------------------------------------------------------------------------------------
    def run(
        self, tool_id: str, arguments: Mapping[str, Any] | str | None = None, *, query: str | None = None
    ) -> Any:
        """Call the tool ``tool_id`` with ``arguments`` (a mapping, or the JSON text of one) the way its
        framework does, and report the outcome (``query``: what it was called for). Returns what the
        tool returned; an exception it raised propagates after it is reported."""
        entry = self._callable(tool_id)
        if entry.kind == "python" and _is_async(entry.obj):
            raise ConfigError(f"tool {entry.tool.id!r} is a coroutine function: use Toolbox.arun")
        if (
            entry.kind == "langchain"
            and _get(entry.obj, "func", ...) is None
            and _get(entry.obj, "coroutine")
        ):
            raise ConfigError(f"tool {entry.tool.id!r} is a LangChain tool with only a coroutine: use arun")
        with self._retriever.track(entry.tool.id, query) as call:
            kwargs = _arguments(call, entry.tool.id, arguments)
            obj = entry.obj
            if entry.kind == "python":
                return call.run(obj, kwargs)
            if entry.kind == "langchain":
                return obj.invoke(kwargs)
            if entry.kind == "llamaindex":
                _check_llamaindex(obj, kwargs)
                return _reported(call, obj.call(**kwargs))
            return _reported(call, obj.run(**kwargs))  # crewai

    async def arun(
        self, tool_id: str, arguments: Mapping[str, Any] | str | None = None, *, query: str | None = None
    ) -> Any:
        """``run`` for asyncio: coroutine functions are awaited, LangChain tools ``ainvoke``d, LlamaIndex
        tools ``acall``ed; plain functions and CrewAI tools run in a worker thread."""
        entry = self._callable(tool_id)
        obj, kind = entry.obj, entry.kind
        if not (kind in ("langchain", "llamaindex") or (kind == "python" and _is_async(obj))):
            return await asyncio.to_thread(partial(self.run, tool_id, arguments, query=query))
        async with self._retriever.atrack(entry.tool.id, query) as call:
            kwargs = _arguments(call, entry.tool.id, arguments)
            if kind == "python":
                return await call.run(obj, kwargs)
            if kind == "langchain":
                return await obj.ainvoke(kwargs)
            _check_llamaindex(obj, kwargs)
            return _reported(call, await obj.acall(**kwargs))

    def _callable(self, tool_id: object) -> ToolObject:
        entry = self._by_id.get(tool_id) if isinstance(tool_id, str) else None
        if entry is None:
            raise UnknownToolError(tool_id)  # type: ignore[arg-type]
        if entry.kind in _NOT_CALLABLE:
            what = "an MCP tool" if entry.kind == "mcp" else "a tool definition"
            raise ConfigError(
                f"tool {entry.tool.id!r} is {what}, not a callable: call it through your client (an MCP "
                f"session's call_tool) inside toolbox.retriever.track({entry.tool.id!r}, query)"
            )
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

    def tool(self, tool_id: str) -> Any:
        """The object of the tool ``tool_id``; ``UnknownToolError`` if no object here is it."""
        entry = self._by_id.get(tool_id) if isinstance(tool_id, str) else None
        if entry is None:
            raise UnknownToolError(tool_id)
        return entry.obj

    def __contains__(self, tool_id: object) -> bool:
        return isinstance(tool_id, str) and tool_id in self._by_id

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
    tools: list[Any], db: Any, encoder: Any, config: dict[str, Any], prune: bool
) -> tuple[Retriever, SyncReport | None]:
    """A new index of ``tools`` in ``db``, or the one ``db`` holds, synced to them (and its report)."""
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


# ---- calling ---------------------------------------------------------------------------------------
def _arguments(call: TrackedCall | AsyncTrackedCall, tool_id: str, arguments: object) -> dict[str, Any]:
    """The arguments as a dict; JSON text is parsed. What is not an object is the caller's error: it is
    reported (``caller_error``) and raised, and the tool does not run."""
    if arguments is None:
        return {}
    if isinstance(arguments, (str, bytes)):
        try:
            arguments = json.loads(arguments)
        except (ValueError, RecursionError) as exc:
            call.report(OutcomeKind.CALLER_ERROR)
            raise ValueError(f"arguments for tool {tool_id!r} are not valid JSON: {exc}") from None
    if not isinstance(arguments, Mapping) or not all(isinstance(k, str) for k in arguments):
        call.report(OutcomeKind.CALLER_ERROR)
        raise TypeError(
            f"arguments for tool {tool_id!r} must be an object of named arguments, got {shown(arguments)}"
        )
    return dict(arguments)


def _check_llamaindex(obj: Any, arguments: Mapping[str, Any]) -> None:
    """Validate against the tool's ``fn_schema`` (a pydantic ``ValidationError`` is a caller error): a
    LlamaIndex ``FunctionTool`` passes arguments on unchecked, so a missing one fails inside it."""
    schema = _get(_get(obj, "metadata"), "fn_schema")
    validate = _get(schema, "model_validate")
    if callable(validate):
        validate(dict(arguments))


def _reported(call: TrackedCall | AsyncTrackedCall, result: Any) -> Any:
    """A result that says the call failed reports that: a LlamaIndex ``ToolOutput`` with ``is_error`` (the
    outcome of its exception), a CrewAI ``ToolFailure`` (``tool_error``, or ``caller_error`` for a
    reason that is no fault of the tool: spent usage limit, invalid input, ...)."""
    if _get(result, "is_error") is True:
        exc = _get(result, "exception")
        outcome = outcome_from_exception(exc) if isinstance(exc, BaseException) else None
        call.report(outcome or OutcomeKind.TOOL_ERROR)
    elif type(result).__name__ == "ToolFailure" and _get(result, "reason") is not None:
        reason = str(_get(result.reason, "value") or result.reason)
        call.report(OutcomeKind.CALLER_ERROR if reason in _CREWAI_NOT_THE_TOOL else OutcomeKind.TOOL_ERROR)
    return result


def _is_async(fn: Any) -> bool:
    try:
        return inspect.iscoroutinefunction(fn) or (
            not inspect.isroutine(fn) and inspect.iscoroutinefunction(type(fn).__call__)
        )
    except Exception:
        return False


def _get(obj: Any, name: str, default: Any = None) -> Any:
    try:
        return getattr(obj, name, default)
    except Exception:
        return default
