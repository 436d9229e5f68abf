"""Which tools a query may return: an agent's enabled tools, its platforms, tags, providers and auth kinds.

An agent rarely may call every tool of a shared catalog: it has credentials for some providers, runs on
one platform, or has just watched a tool fail and wants the next best one. ``retrieve(query, where=...)``
ranks only the tools a ``ToolFilter`` allows, so the semantic top-K (what the policy re-ranks) is the
top-K *of those tools*, not a post-filtered slice of the global one, which could come back short.

Keys (all optional; a tool must pass every key given, and within a key any of the listed values):

- ``tools``: only these tool ids (an unknown id is an error); ``exclude``: never these ids (an unknown
  id is skipped: an agent excluding a tool that another process removed meanwhile still gets its answer);
- ``source``: the platforms (``langchain``, ``n8n``, ``mcp``, ...), ``tags``: any of these tags,
  ``auth``: the auth kinds (``none``, ``api_key``, ``oauth2``, ``basic``, ``other``, ``unknown``) -
  compared case-insensitively;
- ``provider``: the providers (a tool without one is its own provider, under its id).

S_sem of a tool does not depend on the filter (with a flat dense index whatever the fusion; with an
HNSW one, with the default convex fusion: RRF then ranks the candidates scored), so a filtered answer is
the unfiltered ranking of the allowed tools. A tool whose stored record is damaged matches no platform,
tag, provider or auth kind (its record cannot say; nor could it be returned); ids need no record.

>>> f = ToolFilter.parse({"source": "LangChain", "exclude": ["tavily_search"]})
>>> sorted(f.source), sorted(f.exclude)
(['langchain'], ['tavily_search'])
>>> ToolFilter.parse({}) is None  # no constraint: the plain search path
True
"""

from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, fields
from typing import Any

import numpy as np

from rated.catalog.schema import AuthType
from rated.errors import IndexFormatError, QueryError, UnknownToolError
from rated.shown import shown
from rated.store.rows import IdSpellings

__all__ = ["FILTER_KEYS", "PoolFilter", "ToolFilter"]

FILTER_KEYS = ("tools", "exclude", "source", "tags", "provider", "auth")
_FOLDED = ("source", "tags", "auth")  # compared case-insensitively
_FACETS = ("source", "tags", "provider", "auth")  # read from each tool's record
_AUTH_KINDS = frozenset(a.value for a in AuthType)
_RECENT = 16  # filters whose positions a pool keeps
# tools a facet pass reads between two offers of the GIL (about 1 ms of record parsing): a thread whose
# store read or numpy call released the GIL waits this long for it again, instead of the interpreter's
# 5 ms switch interval, so queries of other threads go on at near their usual speed meanwhile
_YIELD_EVERY = 64
log = logging.getLogger("rated.tool_filter")


@dataclass(frozen=True)
class ToolFilter:
    """Constraints on the tools a query may return; ``None`` for a key means "any" (see the module doc).

    Each field takes a string or an iterable of strings and holds a frozenset; ``exclude`` defaults to
    the empty set. An empty set for another key allows no tool (an agent with no enabled tools).
    """

    tools: frozenset[str] | None = None
    exclude: frozenset[str] = frozenset()
    source: frozenset[str] | None = None
    tags: frozenset[str] | None = None
    provider: frozenset[str] | None = None
    auth: frozenset[str] | None = None

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if value is None and f.name != "exclude":
                continue
            values = _strings(f.name, () if value is None else value)
            if f.name in _FOLDED:
                values = frozenset(v.casefold() for v in values)
            object.__setattr__(self, f.name, values)
        unknown = sorted(self.auth - _AUTH_KINDS) if self.auth is not None else []
        if unknown:
            raise QueryError(
                f"filter 'auth': unknown auth kind(s) {shown(unknown)}; expected any of "
                f"{', '.join(sorted(_AUTH_KINDS))}"
            )

    @classmethod
    def parse(cls, value: ToolFilter | Mapping[str, Any] | None) -> ToolFilter | None:
        """A filter from a ``ToolFilter``, a mapping of the keys above (JSON), or ``None``; ``None`` when
        it constrains nothing, so that an empty filter costs nothing."""
        if value is None:
            return None
        if not isinstance(value, ToolFilter):
            if not isinstance(value, Mapping):
                raise QueryError(
                    f"a filter must be a mapping of {', '.join(FILTER_KEYS)}, got {type(value).__name__}"
                )
            unknown = [k for k in value if k not in FILTER_KEYS]
            if unknown:
                raise QueryError(
                    f"unknown filter key(s) {shown(unknown)}; expected any of {', '.join(FILTER_KEYS)}"
                )
            value = cls(**{k: v for k, v in value.items() if v is not None})
        return None if value.is_empty else value

    @property
    def is_empty(self) -> bool:
        """True when every tool passes."""
        return not self.exclude and all(
            getattr(self, k) is None for k in ("tools", "source", "tags", "provider", "auth")
        )

    def as_dict(self) -> dict[str, list[str]]:
        """The constraints given, as sorted lists (JSON; what ``parse`` reads back)."""
        out = {
            f.name: sorted(getattr(self, f.name)) for f in fields(self) if getattr(self, f.name) is not None
        }
        if not self.exclude:
            out.pop("exclude")
        return out


def _strings(key: str, value: object) -> frozenset[str]:
    if isinstance(value, str):
        return frozenset((value,))
    if isinstance(value, Mapping) or not isinstance(value, Iterable):
        raise QueryError(f"filter {key!r} must be a string or a list of strings, got {type(value).__name__}")
    items = list(value)
    bad = [v for v in items if not isinstance(v, str)]
    if bad:
        raise QueryError(f"filter {key!r} must hold strings only, got {type(bad[0]).__name__} {bad[0]!r}")
    return frozenset(items)


class PoolFilter:
    """A pool's tools by id, platform, tag, provider and auth kind, to turn a ``ToolFilter`` into positions.

    Built for one pool (the retriever drops it when the pool changes). Ids are read from the stored
    entries; platforms, tags, providers and auth kinds (the facets) need each tool's record parsed
    (0.5 s at 20,000 tools opened from a store), so all four are indexed in one pass the first time a
    filter asks for one. ``build_facets`` does that pass and may run in any thread, outside the
    retriever's lock (``Retriever`` calls it before taking the lock, so that other queries go on
    meanwhile); ``positions`` is not thread-safe: the retriever calls it under its lock (it builds the
    facets itself there if they are still missing).
    """

    def __init__(self, tools: Sequence[Any], position: Mapping[str, int]):
        self._tools = tools
        self._position = position
        self._spellings = IdSpellings(position)  # any Unicode spelling of an id, as feedback finds it
        self._facets: dict[str, dict[str, np.ndarray]] | None = None  # key -> value -> positions
        self._building = threading.Lock()  # one pass at a time: a second caller waits for the first's
        self._recent: OrderedDict[ToolFilter, np.ndarray] = OrderedDict()

    def needs_facets(self, where: ToolFilter) -> bool:
        """Whether ``where`` filters by a platform, tag, provider or auth kind that is not indexed yet."""
        return self._facets is None and any(getattr(where, key) is not None for key in _FACETS)

    def build_facets(self) -> None:
        """Index every tool's platform, tags, provider and auth kind, parsing the records not parsed yet
        (kept: a hit or ``tools()`` later costs nothing more). Thread-safe; does nothing once done."""
        with self._building:
            if self._facets is None:
                self._facets = _facets(self._tools)

    def positions(self, where: ToolFilter) -> np.ndarray:
        """Sorted positions of the tools ``where`` allows (int64, read-only; may be empty).

        The last ``_RECENT`` filters' answers are kept: an agent sends the same enabled tools with every
        query, and looking up thousands of ids costs milliseconds, hashing the filter microseconds (its
        sets keep their hash, so reusing one ``ToolFilter`` object costs nearly nothing)."""
        found = self._recent.get(where)
        if found is not None:
            self._recent.move_to_end(where)
            return found
        found = self._positions(where)
        found.flags.writeable = False
        self._recent[where] = found
        if len(self._recent) > _RECENT:
            self._recent.popitem(last=False)
        return found

    def _positions(self, where: ToolFilter) -> np.ndarray:
        n = len(self._tools)
        keep = np.ones(n, dtype=bool)
        if where.tools is not None:
            keep[:] = False
            keep[self._ids_positions("tools", where.tools)] = True
        if where.exclude:
            keep[self._ids_positions("exclude", where.exclude, strict=False)] = False
        for key in ("source", "tags", "provider", "auth"):
            wanted = getattr(where, key)
            if wanted is None:
                continue
            facet = self._facet(key)
            allowed = np.zeros(n, dtype=bool)
            for value in wanted:
                hit = facet.get(value)
                if hit is not None:
                    allowed[hit] = True
            keep &= allowed
        return np.flatnonzero(keep).astype(np.int64)

    def _ids_positions(self, key: str, ids: frozenset[str], strict: bool = True) -> list[int]:
        position = self._position
        found = [position.get(i) for i in ids]
        if None in found:  # any Unicode spelling names a tool, as for feedback
            found = [self._spelled(i) if p is None else p for i, p in zip(ids, found, strict=True)]
            unknown = sorted(i for i, p in zip(ids, found, strict=True) if p is None)
            if unknown and not strict:
                return [p for p in found if p is not None]
            if unknown:
                more = f" (and {len(unknown) - 1} more)" if len(unknown) > 1 else ""
                raise UnknownToolError(unknown[0], f"filter {key!r}{more}")
        return found  # type: ignore[return-value]

    def _spelled(self, tool_id: str) -> int | None:
        """The position of the tool ``tool_id`` names in another Unicode spelling (``IdSpellings``)."""
        held = self._spellings.find(tool_id)
        return None if held is None else self._position[held]

    def _facet(self, key: str) -> dict[str, np.ndarray]:
        if self._facets is None:
            self.build_facets()
        assert self._facets is not None
        return self._facets[key]


def _facets(tools: Sequence[Any]) -> dict[str, dict[str, np.ndarray]]:
    """For each facet key, each value (folded) -> the positions of the tools that have it, in one pass; a
    tool whose stored record is damaged has no value (its record cannot say; nor can it be returned)."""
    groups: dict[str, dict[str, list[int]]] = {key: {} for key in _FACETS}
    sources, tags, providers, auths = (groups[key] for key in _FACETS)
    damaged = []
    for p, tool in enumerate(tools):
        if p % _YIELD_EVERY == 0:
            time.sleep(0)  # let other threads run: see _YIELD_EVERY
        try:
            source, tool_tags = tool.source.casefold(), {t.casefold() for t in tool.tags}
            provider, auth = tool.provider_key, tool.auth.type.value
        except IndexFormatError:
            damaged.append(tool.id)
            continue
        sources.setdefault(source, []).append(p)
        providers.setdefault(provider, []).append(p)
        auths.setdefault(auth, []).append(p)
        for tag in tool_tags:
            tags.setdefault(tag, []).append(p)
    if damaged:
        log.warning(
            "filter: %d tool(s) whose stored record is damaged match no platform, tag, provider or auth "
            "kind: %s",
            len(damaged),
            ", ".join(shown(i, 80) for i in damaged[:5]) + (" ..." if len(damaged) > 5 else ""),
        )
    return {
        key: {v: np.array(ps, dtype=np.int64) for v, ps in values.items()} for key, values in groups.items()
    }
