"""ToolFilter: what a filter given as JSON or keywords means, and the pool positions it allows."""

import logging

import numpy as np
import pytest

from filter_pool import POOL
from rated import Tool
from rated.errors import QueryError, UnknownToolError
from rated.stored_tool import StoredTool
from rated.tool_filter import FILTER_KEYS, PoolFilter, ToolFilter


def allowed(**where) -> list[str]:
    pf = PoolFilter(POOL, {t.id: p for p, t in enumerate(POOL)})
    return [POOL[p].id for p in pf.positions(ToolFilter(**where)).tolist()]


def test_values_become_sets_and_names_are_compared_case_insensitively():
    f = ToolFilter.parse({"source": "LangChain", "tags": ["Web", "MAIL"], "exclude": "x", "auth": "API_KEY"})
    assert f == ToolFilter(source={"langchain"}, tags={"web", "mail"}, exclude={"x"}, auth={"api_key"})
    assert f.as_dict() == {
        "exclude": ["x"],
        "source": ["langchain"],
        "tags": ["mail", "web"],
        "auth": ["api_key"],
    }
    assert ToolFilter.parse(f.as_dict()) == f
    assert ToolFilter.parse(f) is f


@pytest.mark.parametrize("empty", [None, {}, {"exclude": []}, {"tools": None}, ToolFilter()])
def test_a_filter_that_constrains_nothing_is_none(empty):
    assert ToolFilter.parse(empty) is None


@pytest.mark.parametrize(
    ("where", "message"),
    [
        ({"sources": ["n8n"]}, "unknown filter key(s) ['sources']"),
        ({"tags": 3}, "filter 'tags' must be a string or a list of strings, got int"),
        ({"tags": {"a": 1}}, "filter 'tags' must be a string or a list of strings, got dict"),
        ({"exclude": ["a", 7]}, "filter 'exclude' must hold strings only, got int 7"),
        ({"auth": ["apikey"]}, "filter 'auth': unknown auth kind(s) ['apikey']"),
        (["tools"], "a filter must be a mapping"),
    ],
)
def test_malformed_filters_are_refused_naming_the_key(where, message):
    with pytest.raises(QueryError, match="^" + __import__("re").escape(message)):
        ToolFilter.parse(where)


def test_each_key_and_their_conjunction():
    assert allowed(tools={"a", "d"}) == ["a", "d"]
    assert allowed(exclude={"a"}) == ["b", "c", "d"]
    assert allowed(source={"langchain"}) == ["a", "c"]  # "LangChain" in the catalog too
    assert allowed(tags={"web"}) == ["a", "c"]
    assert allowed(tags={"search"}) == ["a"]  # the catalog's "Search"
    assert allowed(provider={"acme"}) == ["a", "b"]
    assert allowed(provider={"d"}) == ["d"]  # a tool without a provider is its own
    assert allowed(auth={"unknown"}) == ["d"]
    assert allowed(source={"langchain"}, tags={"web"}, exclude={"c"}) == ["a"]
    assert allowed(tools={"a", "b"}, source={"mcp"}) == []
    assert allowed(tools=set()) == []  # an agent with no tools enabled


def test_unknown_ids_to_keep_are_errors_naming_the_key_and_unknown_ones_to_exclude_are_skipped():
    with pytest.raises(UnknownToolError) as err:
        allowed(tools={"zz", "a", "yy"})
    assert err.value.tool_id == "yy"
    assert str(err.value) == "filter 'tools' (and 1 more): unknown tool id: 'yy'"
    assert allowed(exclude={"zz", "a", "yy"}) == ["b", "c", "d"]  # removed meanwhile: nothing to exclude
    assert allowed(exclude={"zz"}) == ["a", "b", "c", "d"]


def test_positions_are_sorted_int64():
    pf = PoolFilter(POOL, {t.id: p for p, t in enumerate(POOL)})
    out = pf.positions(ToolFilter(tools={"d", "a", "c"}))
    assert out.dtype == np.int64 and out.tolist() == [0, 2, 3]
    assert set(FILTER_KEYS) == {"tools", "exclude", "source", "tags", "provider", "auth"}


def test_a_pool_keeps_the_positions_of_its_recent_filters_read_only():
    pf = PoolFilter(POOL, {t.id: p for p, t in enumerate(POOL)})
    first = pf.positions(ToolFilter(source={"langchain"}))
    assert (
        pf.positions(ToolFilter.parse({"source": "LangChain"})) is first
    )  # an equal filter: the same answer
    with pytest.raises(ValueError):
        first[0] = 3
    for i in range(16):  # sixteen other filters push it out
        pf.positions(ToolFilter(exclude={POOL[i % 4].id}, tags={f"tag{i}"}))
    again = pf.positions(ToolFilter(source={"langchain"}))
    assert again is not first and again.tolist() == first.tolist()


def test_ids_match_in_either_unicode_normal_form():
    pool = [Tool(id="caf\u00e9", name="cafe"), Tool(id="other", name="other")]
    pf = PoolFilter(pool, {t.id: p for p, t in enumerate(pool)})
    assert pf.positions(ToolFilter(exclude={"cafe\u0301"})).tolist() == [1]  # typed decomposed
    assert pf.positions(ToolFilter(tools={"cafe\u0301", "other"})).tolist() == [0, 1]


def test_ids_match_in_either_normal_form_even_when_typed_in_neither():
    """An id typed half composed, half decomposed (pasted pieces) is in neither form: each is tried."""
    stored = "cafe\u0301 de\u0301ja\u0300"  # decomposed, as the catalog holds it
    pool = [Tool(id=stored, name="cafe"), Tool(id="other", name="other")]
    pf = PoolFilter(pool, {t.id: p for p, t in enumerate(pool)})
    typed = "caf\u00e9 de\u0301ja\u0300"  # "é" composed, the rest decomposed
    assert pf.positions(ToolFilter(exclude={typed})).tolist() == [1]
    assert pf.positions(ToolFilter(tools={typed})).tolist() == [0]


def test_a_tool_whose_stored_record_is_damaged_matches_no_platform_tag_provider_or_auth(caplog):
    """Its record cannot say what it is (nor can it be returned): the filter answers without it, instead
    of failing every query filtered by a platform, tag, provider or auth kind while it stays damaged."""
    entries = [StoredTool.of(t, t.model_dump_json()) for t in POOL]
    entries[1] = StoredTool("b", '{"id": "broken"', "demo.db")
    pf = PoolFilter(entries, {t.id: p for p, t in enumerate(entries)})
    with caplog.at_level(logging.WARNING, logger="rated.tool_filter"):
        assert [entries[p].id for p in pf.positions(ToolFilter(source={"n8n", "mcp"}))] == ["d"]
        assert [entries[p].id for p in pf.positions(ToolFilter(provider={"acme"}))] == ["a"]
        assert pf.positions(ToolFilter(exclude={"a"})).tolist() == [1, 2, 3]  # ids need no record
    assert "'b'" in caplog.text and "damaged" in caplog.text


def test_one_pass_indexes_every_platform_tag_provider_and_auth_kind(parses):
    """The retriever runs the pass before taking its lock (``build_facets``), then answers from it."""
    entries = [StoredTool(t.id, t.model_dump_json(), "demo.db") for t in POOL]
    pf = PoolFilter(entries, {t.id: p for p, t in enumerate(entries)})
    assert pf.needs_facets(ToolFilter(tags={"web"})) and not pf.needs_facets(ToolFilter(exclude={"a"}))
    pf.build_facets()
    assert parses == ["a", "b", "c", "d"]  # each record once, for all four keys
    assert not pf.needs_facets(ToolFilter(tags={"web"}, auth={"none"}))
    where = ToolFilter(source={"langchain"}, tags={"web"}, provider={"acme", "c"}, auth={"api_key", "oauth2"})
    assert [entries[p].id for p in pf.positions(where)] == ["a", "c"]
    pf.build_facets()  # done already: nothing read again
    assert parses == ["a", "b", "c", "d"]
