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

Platforms, tags, providers and auth kinds (the facets) come from each tool's stored record: the pool's
``FacetTable`` is made from the last pool's table and the snapshot saved in the store
(``rated.index.snapshot.FACETS_NAME``), matched tool by tool on the id and the record digest, and only
the records these do not cover are parsed (``PoolFilter``): a process opening a store whose snapshot
covers its pool parses none.

>>> f = ToolFilter.parse({"source": "LangChain", "exclude": ["tavily_search"]})
>>> sorted(f.source), sorted(f.exclude)
(['langchain'], ['tavily_search'])
>>> ToolFilter.parse({}) is None  # no constraint: the plain search path
True
"""

from __future__ import annotations

import itertools
import logging
import operator
import threading
import time
from collections import OrderedDict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, fields
from typing import Any

import numpy as np

from rated.catalog.schema import AuthType
from rated.errors import IndexFormatError, QueryError, StoreError, UnknownToolError
from rated.shown import shown
from rated.store.rows import IdSpellings

__all__ = ["FILTER_KEYS", "FacetTable", "PoolFilter", "ToolFilter", "tool_facets"]

FILTER_KEYS = ("tools", "exclude", "source", "tags", "provider", "auth")
_FOLDED = ("source", "tags", "auth")  # compared case-insensitively
_FACETS = ("source", "tags", "provider", "auth")  # read from each tool's record
_AUTH_KINDS = frozenset(a.value for a in AuthType)
_RECENT = 16  # filters whose positions a pool keeps
# tools a facet pass reads between two offers of the GIL (about 1 ms of record parsing): a thread whose
# store read or numpy call released the GIL waits this long for it again, instead of the interpreter's
# 5 ms switch interval, so queries of other threads go on at near their usual speed meanwhile
_YIELD_EVERY = 64
# reading the store's facet snapshot costs about what parsing a 64th of its tools does (10 ms at 20,000):
# for fewer tools than that missing from the last pool's table (this process's own add, a replica
# following one), they are parsed instead
_PARSE_RATHER = 64
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

    Built for one pool (the retriever makes another when the pool changes). Ids are read from the stored
    entries; platforms, tags, providers and auth kinds (the facets) come from each tool's record, all four
    in one ``FacetTable`` the first time a filter asks for one. ``build_facets`` makes it from what is
    known already, parsing only the records it does not cover: the ``previous`` pool's table (this
    process's pool before tools were added or removed: its ``PoolFilter``, or that one's
    ``latest_facets``) and the snapshot saved in ``store`` (``rated.index.snapshot``; another process's
    table), both matched tool by tool on the id and the record digest. Parsing every record instead costs
    0.5-0.8 s at 20,000 tools just opened from a store; a table that parsed a tenth of its pool or more is
    saved to ``store`` for the next process.
    ``build_facets`` may run in any thread, outside the retriever's lock (``Retriever`` calls it before
    taking the lock, so that other queries go on meanwhile); ``positions`` is not thread-safe: the
    retriever calls it under its lock (it builds the facets itself there if they are still missing).
    """

    def __init__(
        self,
        tools: Sequence[Any],
        position: Mapping[str, int],
        store: Any = None,
        previous: PoolFilter | FacetTable | None = None,
    ):
        self._tools = tools
        self._position = position
        self._spellings = IdSpellings(position)  # any Unicode spelling of an id, as feedback finds it
        self._store = store  # a Store (load_cached / save_cached), or None: no snapshot read or saved
        # the latest table of an earlier pool (not the PoolFilter itself: no chain of old pools is kept)
        self._inherited = previous.latest_facets if isinstance(previous, PoolFilter) else previous
        self._facets: FacetTable | None = None
        self._building = threading.Lock()  # one pass at a time: a second caller waits for the first's
        self._recent: OrderedDict[ToolFilter, np.ndarray] = OrderedDict()

    @property
    def facets(self) -> FacetTable | None:
        """The pool's table of facets, once built."""
        return self._facets

    @property
    def latest_facets(self) -> FacetTable | None:
        """The pool's table once built, else the one it inherited: what the next pool's filter starts from
        (hold this, not the ``PoolFilter``, which holds its whole pool)."""
        return self._facets if self._facets is not None else self._inherited

    def needs_facets(self, where: ToolFilter) -> bool:
        """Whether ``where`` filters by a platform, tag, provider or auth kind that is not indexed yet."""
        return self._facets is None and any(getattr(where, key) is not None for key in _FACETS)

    def build_facets(self) -> None:
        """Index every tool's platform, tags, provider and auth kind (see the class doc). Thread-safe;
        does nothing once done."""
        with self._building:
            if self._facets is None:
                self._facets = self._built()
                self._inherited = None

    def _built(self) -> FacetTable:
        tools = self._tools
        ids = list(map(operator.attrgetter("id"), tools))
        digests = _digests(tools)
        todo = np.arange(len(tools), dtype=np.int64)  # the positions no table covers yet
        parts: list[tuple[FacetTable, np.ndarray, np.ndarray]] = []

        def take(table: FacetTable | None) -> None:
            nonlocal todo
            if table is not None and digests is not None:
                rows = table.rows_of(ids, digests, todo)
                parts.append((table, rows[rows >= 0], todo[rows >= 0]))
                todo = todo[rows < 0]

        take(self._inherited)
        if digests is not None and (not parts or len(todo) * _PARSE_RATHER >= len(tools)):
            take(self._saved())  # else parsing what is left costs less than reading the snapshot
        if len(todo) or not parts:
            parsed = FacetTable.parse([tools[p] for p in todo.tolist()])
            parts.append((parsed, np.arange(len(todo), dtype=np.int64), todo))
        facets = FacetTable.assemble(ids, digests, parts)
        if self._store is not None and digests is not None and facets.fresh.sum() * 10 >= max(len(ids), 1):
            self._save(facets)
        facets.index_all()  # here, outside the retriever's lock
        damaged = facets.damaged()
        if len(damaged):
            log.warning(
                "filter: %d tool(s) whose stored record is damaged match no platform, tag, provider or "
                "auth kind: %s",
                len(damaged),
                ", ".join(shown(ids[p], 80) for p in damaged[:5]) + (" ..." if len(damaged) > 5 else ""),
            )
        return facets

    def _saved(self) -> FacetTable | None:
        """The table another process saved in the store (``None``: none, unreadable or not this code's)."""
        from rated.index import snapshot

        if self._store is None:
            return None
        try:
            blob = self._store.load_cached(snapshot.FACETS_NAME)
        except StoreError as exc:  # a cache: read as none
            log.debug("%s not read: %s", snapshot.FACETS_NAME, exc)
            return None
        return None if blob is None else snapshot.restore_facets(blob)

    def _save(self, facets: FacetTable) -> None:
        """Best effort, as the lexical snapshot: a store that cannot save it now (busy, read-only) is asked
        again by the next pool's table (its rows stay fresh); one that keeps no cache (memory) is not asked
        again for these rows."""
        from rated.index import snapshot

        try:
            self._store.save_cached(snapshot.FACETS_NAME, snapshot.dump_facets(facets))
        except StoreError as exc:
            log.debug("%s not saved: %s", snapshot.FACETS_NAME, exc)
            return
        facets.fresh[:] = False

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
        for key in _FACETS:
            wanted = getattr(where, key)
            if wanted is None:
                continue
            if self._facets is None:
                self.build_facets()
            assert self._facets is not None
            allowed = np.zeros(n, dtype=bool)
            for value in wanted:
                allowed[self._facets.positions(key, value)] = True
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


def tool_facets(tool: Any) -> tuple[str, set[str], str, str]:
    """A tool's platform and tags (folded; the tags as a set), provider and auth kind, as filters compare
    them; ``IndexFormatError`` from a ``StoredTool`` whose record is damaged."""
    return tool.source.casefold(), {t.casefold() for t in tool.tags}, tool.provider_key, tool.auth.type.value


class FacetTable:
    """The platform, tags, provider and auth kind (``tool_facets``) of each tool of a pool, as arrays.

    Per facet key: ``values`` (each value once) and each tool's codes into them, row ``i`` (the pool's
    position ``i``) holding ``codes[key][starts[key][i]:starts[key][i + 1]]``: one code for a platform,
    provider or auth kind, any number for tags, none at all for a tool whose stored record is damaged.
    ``ids`` and ``digests`` (record digests, one row a tool; ``None`` for tools that have none) say which
    records the rows were read from, so that a table made for one pool serves another tool by tool
    (``rows_of``); ``fresh`` marks the rows parsed since the store's snapshot was last saved or read.
    """

    def __init__(
        self,
        ids: list[str],
        digests: np.ndarray | None,
        values: Mapping[str, list[str]],
        starts: Mapping[str, np.ndarray],
        codes: Mapping[str, np.ndarray],
        fresh: np.ndarray | None = None,
    ):
        self.ids, self.digests = ids, digests
        self.values, self.starts, self.codes = dict(values), dict(starts), dict(codes)
        self.fresh = np.zeros(len(ids), dtype=bool) if fresh is None else fresh
        self._lookup: dict[str, tuple[dict[str, int], np.ndarray, np.ndarray]] = {}
        self._row_of: dict[str, int] | None = None

    def __len__(self) -> int:
        return len(self.ids)

    @classmethod
    def parse(cls, tools: Sequence[Any]) -> FacetTable:
        """The table of ``tools``, reading each one's facets (a ``StoredTool`` parses its record: about 30 us;
        a damaged one gets no value); all rows fresh."""
        sources: dict[str, int] = {}
        tags: dict[str, int] = {}
        providers: dict[str, int] = {}
        auths: dict[str, int] = {}
        source_codes: list[int] = []
        tag_codes: list[int] = []
        provider_codes: list[int] = []
        auth_codes: list[int] = []
        tag_counts: list[int] = []  # per tool; the other keys have one value (none: a damaged record)
        damaged: list[int] = []
        for p, tool in enumerate(tools):
            if p % _YIELD_EVERY == 0:
                time.sleep(0)  # let other threads run: see _YIELD_EVERY
            try:
                source, tool_tags, provider, auth = tool_facets(tool)
            except IndexFormatError:
                damaged.append(p)
                tag_counts.append(0)
                continue
            source_codes.append(sources.setdefault(source, len(sources)))
            provider_codes.append(providers.setdefault(provider, len(providers)))
            auth_codes.append(auths.setdefault(auth, len(auths)))
            tag_codes.extend([tags.setdefault(tag, len(tags)) for tag in tool_tags])
            tag_counts.append(len(tool_tags))
        n = len(tools)
        one = np.ones(n, dtype=np.int64)
        one[damaged] = 0
        single = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(one, out=single[1:])
        tag_starts = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(tag_counts, out=tag_starts[1:])
        codes = (source_codes, tag_codes, provider_codes, auth_codes)
        return cls(
            list(map(operator.attrgetter("id"), tools)),
            _digests(tools),
            {key: list(v) for key, v in zip(_FACETS, (sources, tags, providers, auths), strict=True)},
            {key: single if key != "tags" else tag_starts for key in _FACETS},
            {key: np.array(c, dtype=np.int32) for key, c in zip(_FACETS, codes, strict=True)},
            np.ones(n, dtype=bool),
        )

    @classmethod
    def assemble(
        cls,
        ids: list[str],
        digests: np.ndarray | None,
        parts: Sequence[tuple[FacetTable, np.ndarray, np.ndarray]],
    ) -> FacetTable:
        """The table of the pool ``ids`` (whose records have ``digests``) from ``parts``: each a table, some
        of its rows and the positions they go to (together, every position once). Values no row uses any
        more (their tools removed) are dropped once they are half of a key's."""
        n = len(ids)
        whole = [t for t, rows, at in parts if len(rows) == n and _is_range(rows) and _is_range(at)]
        if whole:  # the common case: one table (a snapshot, the last pool's) covers the pool, or its start
            t = whole[0]
            starts = {key: t.starts[key][: n + 1] for key in _FACETS}
            codes = {key: t.codes[key][: starts[key][-1]] for key in _FACETS}
            return cls(ids, digests, t.values, starts, codes, t.fresh[:n].copy())
        fresh = np.zeros(n, dtype=bool)
        for t, rows, at in parts:
            fresh[at] = t.fresh[rows]
        base = max(range(len(parts)), key=lambda i: len(parts[i][1]))  # its codes are kept as they are
        values, starts, codes = {}, {}, {}
        for key in _FACETS:
            seen = dict(zip(parts[base][0].values[key], itertools.count()))
            counts = np.zeros(n, dtype=np.int64)
            pieces = []
            for i, (t, rows, at) in enumerate(parts):
                part_counts, entries = _entries(t.starts[key], rows)
                counts[at] = part_counts
                part_codes = t.codes[key][entries]
                if i != base:
                    used = np.unique(part_codes)
                    remap = np.zeros(len(t.values[key]), dtype=np.int32)
                    remap[used] = [seen.setdefault(t.values[key][u], len(seen)) for u in used.tolist()]
                    part_codes = remap[part_codes]
                pieces.append((at, part_codes))
            starts[key] = np.zeros(n + 1, dtype=np.int64)
            np.cumsum(counts, out=starts[key][1:])
            codes[key] = np.empty(int(starts[key][-1]), dtype=np.int32)
            for at, part_codes in pieces:
                codes[key][_entries(starts[key], at)[1]] = part_codes
            values[key], codes[key] = _compact(list(seen), codes[key])
        return cls(ids, digests, values, starts, codes, fresh)

    def rows_of(self, ids: Sequence[str], digests: np.ndarray, positions: np.ndarray) -> np.ndarray:
        """For each of ``positions`` of the pool ``ids`` (records ``digests``), this table's row of that tool
        read from that very record, or -1."""
        mine = self.digests
        if mine is None or mine.shape[1] != digests.shape[1]:
            return np.full(len(positions), -1, dtype=np.int64)
        m = len(self.ids)
        if len(positions) == len(ids) >= m and ids[:m] == self.ids and np.array_equal(digests[:m], mine):
            rows = np.full(len(ids), -1, dtype=np.int64)  # this very pool, maybe with tools appended
            rows[:m] = np.arange(m)
            return rows
        if self._row_of is None:
            self._row_of = dict(zip(self.ids, range(len(self.ids)), strict=True))
        wanted = ids if len(positions) == len(ids) else [ids[p] for p in positions.tolist()]
        rows = np.fromiter(map(self._row_of.get, wanted, itertools.repeat(-1)), np.int64, len(wanted))
        known = np.flatnonzero(rows >= 0)
        same = np.all(mine[rows[known]] == digests[positions[known]], axis=1)
        rows[known[~same]] = -1
        return rows

    def positions(self, key: str, value: str) -> np.ndarray:
        """The sorted positions of the tools that have ``value`` (folded as filters fold it) for ``key``."""
        lookup = self._lookup.get(key)
        if lookup is None:  # one sort of the key's codes: each value's tools are then a slice
            codes = self.codes[key]
            tool_of = np.repeat(np.arange(len(self), dtype=np.int64), np.diff(self.starts[key]))
            by_value = tool_of[np.argsort(codes, kind="stable")]
            bounds = np.zeros(len(self.values[key]) + 1, dtype=np.int64)
            np.cumsum(np.bincount(codes, minlength=len(self.values[key])), out=bounds[1:])
            lookup = (dict(zip(self.values[key], itertools.count())), by_value, bounds)
            self._lookup[key] = lookup
        code_of, by_value, bounds = lookup
        code = code_of.get(value)
        return by_value[:0] if code is None else by_value[bounds[code] : bounds[code + 1]]

    def index_all(self) -> None:
        """Make each key's lookup now (``positions`` makes it on first use: the retriever builds the table
        outside its lock, and asks for positions under it)."""
        for key in _FACETS:
            self.positions(key, "")

    def damaged(self) -> list[int]:
        """Positions of the tools whose stored record is damaged (no platform: no facet at all)."""
        return np.flatnonzero(np.diff(self.starts["source"]) == 0).tolist()

    def export(self) -> dict[str, np.ndarray]:
        """The table's arrays, for a snapshot (``restore`` reads them back): the values of each key (JSON),
        each key's row bounds (one row a key) and codes (key after key)."""
        from rated.index.npzblob import json_array

        return {
            "values": json_array({key: self.values[key] for key in _FACETS}),
            "starts": np.stack([self.starts[key] for key in _FACETS]),
            "codes": np.concatenate([self.codes[key] for key in _FACETS]),
        }

    @classmethod
    def restore(cls, ids: list[str], digests: np.ndarray, arrays: Mapping[str, np.ndarray]) -> FacetTable:
        """A table from ``export``'s arrays (rows not fresh); ``ValueError`` for any that does not fit."""
        from rated.index.npzblob import from_json

        n = len(ids)
        if digests.dtype != np.uint8 or digests.ndim != 2 or len(digests) != n:
            raise ValueError("digests do not fit the ids")
        all_values = from_json(arrays["values"])
        all_starts, all_codes = np.asarray(arrays["starts"]), np.asarray(arrays["codes"])
        if not isinstance(all_values, dict) or sorted(all_values) != sorted(_FACETS):
            raise ValueError("values of other keys")
        if all_starts.dtype != np.int64 or all_starts.shape != (len(_FACETS), n + 1):
            raise ValueError("row bounds of the wrong kind")
        if all_codes.dtype != np.int32 or all_codes.ndim != 1:
            raise ValueError("codes of the wrong kind")
        values, starts, codes = {}, {}, {}
        begin = 0
        for key, s in zip(_FACETS, all_starts, strict=True):
            v = all_values[key]
            if not isinstance(v, list) or not set(map(type, v)) <= {str}:
                raise ValueError(f"{key}: values are not strings")
            if s[0] != 0 or np.any(np.diff(s) < 0) or begin + s[-1] > len(all_codes):
                raise ValueError(f"{key}: row bounds do not fit")
            c = all_codes[begin : begin + s[-1]]
            if len(c) and (c.min() < 0 or c.max() >= len(v)):
                raise ValueError(f"{key}: codes out of range")
            values[key], starts[key], codes[key] = v, s, c
            begin += int(s[-1])
        if begin != len(all_codes):
            raise ValueError("codes left over")
        has = np.diff(starts["source"])
        for key in ("source", "provider", "auth"):  # one value each, or none (a damaged record)
            if np.any(has > 1) or not np.array_equal(np.diff(starts[key]), has):
                raise ValueError(f"{key}: not one value a tool")
        if np.any(np.diff(starts["tags"])[has == 0]) or not set(values["auth"]) <= _AUTH_KINDS:
            raise ValueError("tags of a damaged record, or an unknown auth kind")
        return cls(ids, digests, values, starts, codes)


def _digests(tools: Sequence[Any]) -> np.ndarray | None:
    """The tools' record digests as rows of bytes; ``None`` when some tool has none (a plain ``Tool``), or
    their widths differ."""
    try:
        digests = list(map(operator.attrgetter("digest"), tools))
    except AttributeError:
        return None
    if not digests:
        return np.zeros((0, 16), dtype=np.uint8)
    widths = set(map(len, digests))
    if len(widths) != 1 or 0 in widths:
        return None
    return np.frombuffer(b"".join(digests), dtype=np.uint8).reshape(len(digests), widths.pop())


def _entries(starts: np.ndarray, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The entry counts of ``rows`` of a table with row bounds ``starts``, and their entries' indices,
    row after row."""
    first = starts[rows]
    counts = starts[rows + 1] - first
    into = np.cumsum(counts) - counts  # where each row's entries begin in the output
    return counts, np.repeat(first - into, counts) + np.arange(int(counts.sum()), dtype=np.int64)


def _compact(values: list[str], codes: np.ndarray) -> tuple[list[str], np.ndarray]:
    """``values`` and ``codes`` into them without the values no code uses, once those are half of them."""
    used = np.bincount(codes, minlength=len(values)) > 0
    if 2 * int(used.sum()) >= len(values):
        return values, codes
    new_code = (np.cumsum(used) - 1).astype(np.int32)
    return [v for v, u in zip(values, used.tolist(), strict=True) if u], new_code[codes]


def _is_range(a: np.ndarray) -> bool:
    return bool(len(a) == 0 or (a[0] == 0 and a[-1] == len(a) - 1 and np.all(np.diff(a) == 1)))
