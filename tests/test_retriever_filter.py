"""retrieve(where=...): the top-K of the tools a filter allows, ranked as the unfiltered search ranks them."""

import asyncio
import sqlite3
import threading

import pytest

from rated import Tool, stored_tool
from rated.encode.testing import HashEncoder
from rated.errors import QueryError, UnknownToolError
from rated.index import snapshot
from rated.retriever import Retriever
from rated.tool_filter import ToolFilter

TOPICS = ["send email message", "weather forecast city", "calendar event create", "translate text language"]
SOURCES = ["langchain", "n8n", "mcp"]


def tools(n: int = 24, start: int = 0) -> list[Tool]:
    return [
        Tool(
            id=f"t{i}",
            name=f"tool_{i}",
            description=f"{TOPICS[i % 4]} variant {i}",
            source=SOURCES[i % 3],
            tags=("even",) if i % 2 == 0 else ("odd",),
            provider=f"p{i % 5}",
        )
        for i in range(start, start + n)
    ]


QUERY = "send an email message to my team"


def ids(hits) -> list[str]:
    return [h.id for h in hits]


@pytest.fixture
def retriever():
    with Retriever.from_catalog(tools(), encoder=HashEncoder(64)) as r:
        yield r


def test_excluding_the_best_tool_gives_the_next_ones_in_the_same_order(retriever):
    full = ids(retriever.retrieve(QUERY, k=6))
    assert ids(retriever.retrieve(QUERY, k=5, where={"exclude": [full[0]]})) == full[1:6]


@pytest.mark.parametrize(
    ("where", "keep"),
    [
        ({"source": "n8n"}, lambda t: t.source == "n8n"),
        ({"tags": ["odd"]}, lambda t: "odd" in t.tags),
        ({"provider": ["p1", "p2"]}, lambda t: t.provider in ("p1", "p2")),
        ({"tools": ["t3", "t7", "t11", "t20"]}, lambda t: t.id in ("t3", "t7", "t11", "t20")),
        (
            {"source": "mcp", "tags": "even", "exclude": ["t2"]},
            lambda t: t.source == "mcp" and "even" in t.tags and t.id != "t2",
        ),
    ],
)
def test_a_filtered_answer_is_the_unfiltered_ranking_of_the_allowed_tools(retriever, where, keep):
    everything = retriever.retrieve(QUERY, k=len(retriever))
    expected = [(h.id, h.semantic) for h in everything if keep(h.tool)][:4]
    got = retriever.retrieve(QUERY, k=4, where=where)
    assert [(h.id, h.semantic) for h in got] == expected
    assert [h.rank for h in got] == list(range(1, len(got) + 1))


@pytest.mark.parametrize("semantic", [{"fusion": "rrf"}, {"fusion": "rrf", "lexical": "bm25"}])
def test_with_rrf_fusion_too_a_filtered_answer_is_the_unfiltered_ranking_of_the_allowed_tools(semantic):
    """RRF's S_sem is a rank: ranked among the allowed tools only, it changed with the filter."""
    with Retriever.from_catalog(tools(), encoder=HashEncoder(64), semantic=semantic) as r:
        everything = r.retrieve(QUERY, k=len(r))
        for where, keep in (
            ({"source": "n8n"}, lambda t: t.source == "n8n"),
            ({"tags": "odd"}, lambda t: "odd" in t.tags),
        ):
            allowed = [h for h in everything if keep(h.tool)]
            got = r.retrieve(QUERY, k=4, where=where)
            assert [(h.id, h.semantic) for h in got] == [(h.id, h.semantic) for h in allowed[:4]]


def test_a_filter_object_and_keywords_agree_and_nothing_allowed_is_an_empty_answer(retriever):
    as_object = retriever.retrieve(QUERY, k=3, where=ToolFilter(source={"langchain"}))
    assert ids(as_object) == ids(retriever.retrieve(QUERY, k=3, where={"source": ["LangChain"]}))
    assert retriever.retrieve(QUERY, k=3, where={"tools": []}) == []
    assert retriever.retrieve(QUERY, k=3, where={"source": "crewai"}) == []
    assert len(retriever.retrieve(QUERY, k=10, where={"tools": ["t1", "t2"]})) == 2


def test_retrieve_many_and_the_async_calls_take_the_filter(retriever):
    where = {"tags": "odd", "exclude": ["t1"]}
    single = [ids(retriever.retrieve(q, k=3, where=where)) for q in (QUERY, "weather in Oslo")]
    assert [ids(h) for h in retriever.retrieve_many([QUERY, "weather in Oslo"], k=3, where=where)] == single
    assert ids(asyncio.run(retriever.aretrieve(QUERY, k=3, where=where))) == single[0]
    many = asyncio.run(retriever.aretrieve_many([QUERY], k=3, where=where))
    assert [ids(h) for h in many] == single[:1]
    assert retriever.retrieve_many([QUERY], k=3, where={"tools": []}) == [[]]


def test_bad_filters_fail_before_any_work_naming_the_problem(retriever):
    with pytest.raises(UnknownToolError, match="filter 'tools': unknown tool id: 'nope'"):
        retriever.retrieve(QUERY, where={"tools": ["t1", "nope"]})
    assert ids(retriever.retrieve(QUERY, k=3, where={"exclude": ["nope"]})) == ids(
        retriever.retrieve(QUERY, k=3)
    )
    with pytest.raises(QueryError, match="unknown filter key"):
        retriever.retrieve(QUERY, where={"platform": "n8n"})
    with pytest.raises(QueryError, match="unknown filter key"):
        retriever.retrieve_many([QUERY], where={"platform": "n8n"})


def test_the_filter_follows_the_pool_as_tools_are_added_and_removed(retriever):
    retriever.retrieve(QUERY, where={"source": "n8n"})  # indexes the pool's platforms
    retriever.add_tools(
        [Tool(id="new", name="mailer", description="send email message now", source="crewai")]
    )
    assert ids(retriever.retrieve(QUERY, k=3, where={"source": "crewai"})) == ["new"]
    retriever.remove_tools(["new"])
    assert retriever.retrieve(QUERY, k=3, where={"source": "crewai"}) == []
    with pytest.raises(UnknownToolError):
        retriever.retrieve(QUERY, where={"tools": ["new"]})


def test_the_policy_re_ranks_the_allowed_tools_only(retriever):
    before = retriever.retrieve(QUERY, k=8, where={"source": "n8n"})
    retriever.feedback(before[0].id, "tool_error")
    after = retriever.retrieve(QUERY, k=8, where={"source": "n8n"})
    assert after[-1].id == before[0].id  # the failing tool goes last among the allowed tools
    assert set(ids(after)) == set(ids(before))
    assert not after[-1].healthy and all(h.tool.source == "n8n" for h in after)


def test_filters_by_id_parse_no_stored_record(tmp_path, parses):
    db = tmp_path / "f.db"
    Retriever.from_catalog(tools(), db=db, encoder=HashEncoder(64)).close()
    with Retriever.open(db, encoder=HashEncoder(64)) as r:
        r.retrieve(QUERY, k=2)  # builds the index: a pool this small keeps no lexical snapshot
        parses.clear()
        hits = r.retrieve(QUERY, k=2, where={"tools": ["t3", "t5", "t8"], "exclude": ["t3"]})
        assert sorted(h.id for h in hits) == ["t5", "t8"]
        assert set(parses) <= {"t5", "t8"}  # at most the candidates' records (not parsed before)


def test_an_hnsw_index_finds_allowed_tools_its_graph_search_would_not_reach(tmp_path):
    # few candidates per retriever: the graph's top-4 of the whole pool hold no tool of the allowed few
    semantic = {"hnsw_threshold": 10, "candidates": 4}
    pool = tools(60)
    with (
        Retriever.from_catalog(pool, encoder=HashEncoder(64), semantic=semantic) as hnsw,
        Retriever.from_catalog(pool, encoder=HashEncoder(64), semantic={"dense_kind": "flat"}) as flat,
    ):
        assert hnsw.index.dense.kind == "hnsw"
        where = {"source": "mcp", "tags": "odd"}  # 10 of the 60 tools, none about email
        expected = [(h.id, h.semantic) for h in flat.retrieve(QUERY, k=5, where=where)]
        assert [(h.id, h.semantic) for h in hnsw.retrieve(QUERY, k=5, where=where)] == expected
        wide = {"exclude": [h.id for h in flat.retrieve(QUERY, k=3)]}  # most of the pool: graph + filter
        got = hnsw.retrieve(QUERY, k=5, where=wide)
        assert len(got) == 5 and not set(ids(got)) & set(wide["exclude"])


def test_a_damaged_stored_record_does_not_fail_every_query_filtered_by_platform(tmp_path):
    """Without a lexical index the search needs no tool text: only queries meeting the damaged tool fail
    unfiltered, and a filter by platform (which reads every tool's record) answers without it."""
    db = tmp_path / "damaged.db"
    semantic = {"lexical": "none", "dense_weight": 1.0}
    Retriever.from_catalog(tools(), db=db, encoder=HashEncoder(64), semantic=semantic).close()
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE tools SET record = ? WHERE id = ?", ('{"id": "broken"', "t7"))
    conn.close()
    with Retriever.open(db) as r:
        for where, keep in (
            ({"source": "n8n"}, "n8n"),
            ({"source": "langchain", "tags": "odd"}, "langchain"),
        ):
            hits = r.retrieve("weather in Oslo", k=3, where=where)
            assert len(hits) == 3 and all(h.tool.source == keep and h.id != "t7" for h in hits)


@pytest.fixture
def opened(tmp_path):
    """A retriever just opened from SQLite (no record parsed yet), its index built; the facet snapshot
    that indexing saved is deleted, so that its first facet filter parses the records."""
    db = tmp_path / "opened.db"
    with Retriever.from_catalog(tools(), db=db, encoder=HashEncoder(64)) as built:
        assert built.store.delete_cached(snapshot.FACETS_NAME)
    with Retriever.open(db, encoder=HashEncoder(64)) as r:
        r.retrieve(QUERY, k=2)
        yield r


@pytest.fixture
def held_parse(monkeypatch):
    """Holds the first stored record parsed after it is set up until ``release`` is set; ``parsing`` is set
    once that parse has begun (later parses, in any thread, go through)."""
    parsing, release = threading.Event(), threading.Event()
    real = stored_tool.parse_record

    def parse(record, tool_id, where):
        if not parsing.is_set():
            parsing.set()
            release.wait(10)
        return real(record, tool_id, where)

    monkeypatch.setattr(stored_tool, "parse_record", parse)
    yield parsing, release
    release.set()


def in_thread(fn) -> tuple[threading.Thread, list]:
    out: list = []
    thread = threading.Thread(target=lambda: out.append(fn()), daemon=True)
    thread.start()
    return thread, out


def test_the_first_filter_by_platform_parses_the_records_without_holding_the_retriever(opened, held_parse):
    """The first filter by a platform, tag, provider or auth kind reads every tool's record (0.5 s at
    20,000 tools just opened): other threads' queries and feedback must not wait for that."""
    parsing, release = held_parse
    filtering, filtered = in_thread(lambda: opened.retrieve(QUERY, k=3, where={"source": "n8n"}))
    assert parsing.wait(10)  # the filtered query is reading the records
    other, answered = in_thread(lambda: (opened.retrieve(QUERY, k=2), opened.feedback("t0", "success")))
    other.join(10)
    done_meanwhile = not other.is_alive()
    release.set()
    filtering.join(10)
    assert done_meanwhile and len(answered[0][0]) == 2
    assert len(filtered[0]) == 3 and all(h.tool.source == "n8n" for h in filtered[0])


def test_a_filter_indexed_while_tools_are_added_and_removed_answers_for_the_pool_it_runs_on(
    opened, held_parse
):
    parsing, release = held_parse
    filtering, filtered = in_thread(lambda: opened.retrieve(QUERY, k=50, where={"source": "n8n"}))
    assert parsing.wait(10)  # indexing the platforms of the pool as it was
    opened.add_tools([Tool(id="new", name="mailer", description="send email message", source="n8n")])
    opened.remove_tools(["t1"])  # an n8n tool
    release.set()
    filtering.join(10)
    expected = {t.id for t in tools() if t.source == "n8n"} - {"t1"} | {"new"}
    assert set(ids(filtered[0])) == expected
