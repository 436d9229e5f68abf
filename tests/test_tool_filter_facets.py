"""PoolFilter's facets (platform, tags, provider, auth kind of each tool) from what is known already: the
store's facet snapshot and the last pool's table, matched tool by tool on the id and the record digest, so
that only the records they do not cover are parsed, and the answers are those of parsing every record."""

import logging

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from filter_pool import POOL
from rated import Tool
from rated.catalog.schema import Auth
from rated.errors import StoreError
from rated.index import snapshot
from rated.store.memory import MemoryStore
from rated.store.sqlite import SQLiteStore
from rated.stored_tool import StoredTool
from rated.tool_filter import PoolFilter, ToolFilter, tool_facets

FILTERS = [
    ToolFilter(source={"langchain"}),
    ToolFilter(source={"n8n", "MCP"}),
    ToolFilter(tags={"web"}),
    ToolFilter(tags={"search", "mail"}, auth={"api_key", "none"}),
    ToolFilter(provider={"acme"}),
    ToolFilter(provider={"c", "d"}),
    ToolFilter(auth={"unknown"}),
    ToolFilter(source={"crewai"}),
]


class CacheStore:
    """A store's cache only (``load_cached`` / ``save_cached``), counting the saves."""

    def __init__(self, keeps: bool = True) -> None:
        self.cached: dict[str, bytes] = {}
        self.saves = 0
        self.keeps = keeps

    def load_cached(self, name: str) -> bytes | None:
        return self.cached.get(name)

    def save_cached(self, name: str, data: bytes, *, catalog_version: int | None = None) -> bool:
        self.saves += 1
        if self.keeps:
            self.cached[name] = data
        return self.keeps


def stored(tools) -> list[StoredTool]:
    """Entries as a retriever holds them just opened: records not parsed yet."""
    return [StoredTool(t.id, t.model_dump_json(), "demo.db") for t in tools]


def pool_filter(entries, store=None, previous=None) -> PoolFilter:
    return PoolFilter(entries, {t.id: p for p, t in enumerate(entries)}, store, previous)


def expected(tools, where: ToolFilter) -> list[str]:
    """The ids ``where`` allows, from each tool's own record."""
    out = []
    for t in tools:
        source, tags, provider, auth = tool_facets(t)
        if (
            (where.source is None or source in where.source)
            and (where.tags is None or set(tags) & where.tags)
            and (where.provider is None or provider in where.provider)
            and (where.auth is None or auth in where.auth)
        ):
            out.append(t.id)
    return out


def answers(pf: PoolFilter, entries) -> list[list[str]]:
    return [[entries[p].id for p in pf.positions(where).tolist()] for where in FILTERS]


def test_a_pool_opened_again_reads_its_facets_from_the_store_and_parses_no_record(tmp_path, parses):
    store = SQLiteStore(tmp_path / "f.db")
    first = pool_filter(stored(POOL), store)
    first.build_facets()
    assert parses == ["a", "b", "c", "d"]
    assert store.load_cached(snapshot.FACETS_NAME) is not None  # every record parsed: saved
    parses.clear()
    entries = stored(POOL)
    again = pool_filter(entries, store)
    assert answers(again, entries) == [expected(POOL, where) for where in FILTERS]
    assert parses == [] and not any(e.parsed for e in entries)


def test_only_the_tools_added_or_changed_since_the_snapshot_are_parsed(parses):
    store = CacheStore()
    pool_filter(stored(POOL), store).build_facets()
    parses.clear()
    changed = POOL[2].model_copy(update={"source": "crewai", "tags": ("mail",)})
    added = Tool(id="e", name="e", source="n8n", tags=("Web",), provider="acme")
    now = [POOL[3], added, changed, POOL[0]]  # b removed, c changed, e added, another order
    entries = stored(now)
    pf = pool_filter(entries, store)
    assert answers(pf, entries) == [expected(now, where) for where in FILTERS]
    assert sorted(parses) == ["c", "e"]
    assert [entries[p].id for p in pf.positions(ToolFilter(source={"langchain"}))] == ["a"]  # not c's old one


def test_the_last_pools_facets_serve_the_next_pool_without_the_store(parses):
    first = pool_filter(stored(POOL))
    first.build_facets()
    parses.clear()
    unbuilt = pool_filter(stored(POOL[1:]), previous=first)  # a pool whose filter never needed facets
    added = Tool(id="e", name="e", source="mcp", tags=("web",), auth=Auth(type="basic"))
    now = [*POOL[1:], added]
    entries = stored(now)
    pf = pool_filter(entries, previous=unbuilt)  # first's table, passed on
    assert answers(pf, entries) == [expected(now, where) for where in FILTERS]
    assert parses == ["e"]


def test_a_damaged_record_has_no_facets_from_a_snapshot_either_until_it_is_replaced(parses, caplog):
    store = CacheStore()
    entries = stored(POOL)
    entries[1] = StoredTool("b", '{"id": "broken"', "demo.db")
    pool_filter(entries, store).build_facets()
    parses.clear()
    entries = stored(POOL)
    entries[1] = StoredTool("b", '{"id": "broken"', "demo.db")
    pf = pool_filter(entries, store)
    with caplog.at_level(logging.WARNING, logger="rated.tool_filter"):
        assert [entries[p].id for p in pf.positions(ToolFilter(provider={"acme"}))] == ["a"]
        assert pf.positions(ToolFilter(source={"n8n"})).tolist() == []
    assert parses == [] and "'b'" in caplog.text and "damaged" in caplog.text
    fixed = stored(POOL)  # the right record stored again: another digest, parsed
    pf = pool_filter(fixed, store, previous=pf)
    assert [fixed[p].id for p in pf.positions(ToolFilter(source={"n8n"}))] == ["b"]
    assert parses == ["b"]


def test_the_snapshot_is_saved_again_once_a_tenth_of_the_pool_was_parsed(parses):
    tools = [Tool(id=f"t{i}", name="t", source=f"s{i % 3}", provider=f"p{i}") for i in range(40)]
    store = CacheStore()
    pool_filter(stored(tools[:30]), store).build_facets()
    assert store.saves == 1
    pool_filter(stored(tools[:32]), store).build_facets()  # 2 of 32 parsed: not worth saving
    assert store.saves == 1
    parses.clear()
    pool_filter(stored(tools[:34]), store).build_facets()  # 4 of 34
    assert store.saves == 2 and parses == ["t30", "t31", "t32", "t33"]
    parses.clear()
    pool_filter(stored(tools[:34]), store).build_facets()
    assert parses == []


def test_a_store_that_keeps_no_cache_is_not_asked_again_for_the_same_tools():
    store = CacheStore(keeps=False)
    first = pool_filter(stored(POOL), store)
    first.build_facets()
    pool_filter(stored(POOL), store, previous=first).build_facets()
    assert store.saves == 1
    pool_filter(stored(POOL), MemoryStore()).build_facets()  # the memory store keeps none either


@pytest.mark.parametrize("fails", ["load_cached", "save_cached"])
def test_a_store_that_fails_to_read_or_save_the_snapshot_still_answers(fails, monkeypatch, tmp_path):
    store = SQLiteStore(tmp_path / "f.db")
    pool_filter(stored(POOL), store).build_facets()

    def fail(*args, **kwargs):
        raise StoreError("database is locked")

    monkeypatch.setattr(store, fails, fail)
    entries = stored(POOL)
    assert answers(pool_filter(entries, store), entries) == [expected(POOL, where) for where in FILTERS]


def test_values_no_tool_has_any_more_are_dropped():
    tools = [Tool(id=f"t{i}", name="t", provider=f"p{i}", tags=(f"g{i}",)) for i in range(10)]
    first = pool_filter(stored(tools))
    first.build_facets()
    pf = pool_filter(stored(tools[7:]), previous=first)
    pf.build_facets()
    assert sorted(pf.facets.values["provider"]) == ["p7", "p8", "p9"]
    assert sorted(pf.facets.values["tags"]) == ["g7", "g8", "g9"]
    assert pf.positions(ToolFilter(provider={"p8", "p1"})).tolist() == [1]


def test_plain_tools_without_record_digests_are_read_and_never_saved():
    store = CacheStore()
    pf = pool_filter(POOL, store)
    assert answers(pf, POOL) == [expected(POOL, where) for where in FILTERS]
    assert store.saves == 0


TOOLS = st.builds(
    lambda i, source, tags, provider, auth: Tool(
        id=f"t{i}", name="n", source=source, tags=tags, provider=provider, auth=Auth(type=auth)
    ),
    st.integers(0, 30),
    st.sampled_from(["n8n", "N8N", "mcp", "LangChain", "langchain", "crewai"]),
    st.lists(st.sampled_from(["web", "Web", "mail", "Straße", "STRASSE", "x"]), max_size=3).map(tuple),
    st.one_of(st.none(), st.sampled_from(["acme", "Acme", "p1"])),
    st.sampled_from(["none", "api_key", "oauth2", "unknown"]),
)
POOLS = st.lists(TOOLS, max_size=12, unique_by=lambda t: t.id)
WHERE = st.builds(
    ToolFilter,
    source=st.one_of(st.none(), st.sets(st.sampled_from(["n8n", "MCP", "langchain", "zapier"]), max_size=2)),
    tags=st.one_of(st.none(), st.sets(st.sampled_from(["WEB", "mail", "strasse", "y"]), max_size=2)),
    provider=st.one_of(st.none(), st.sets(st.sampled_from(["acme", "Acme", "t1", "t2"]), max_size=2)),
    auth=st.one_of(st.none(), st.sets(st.sampled_from(["none", "api_key", "unknown"]), max_size=2)),
)


@settings(max_examples=60, deadline=None, derandomize=True)
@given(before=POOLS, after=POOLS, kept=st.integers(0, 12), wheres=st.lists(WHERE, min_size=1, max_size=4))
def test_facets_from_any_mix_of_snapshot_last_pool_and_parsing_answer_as_the_records_say(
    before, after, kept, wheres
):
    """A pool made of some of the tools a snapshot and the last pool hold (some the same, some changed
    under the same id) and new ones answers every filter as its tools' records say."""
    store = CacheStore()
    first = pool_filter(stored(before), store)
    first.build_facets()
    ids = {t.id for t in after}
    now = [t for t in before[:kept] if t.id not in ids] + after
    for previous in (None, first):
        entries = stored(now)
        pf = pool_filter(entries, store, previous)
        for where in wheres:
            assert [entries[p].id for p in pf.positions(where).tolist()] == expected(now, where)
        assert pf.positions(wheres[0]).dtype == np.int64
