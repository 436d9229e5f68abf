"""Retriever.open validates no stored tool record: each is parsed when its tool is first needed (a
candidate, feedback, health, the tools listing, a text the index builds). Answers are those of a retriever
that parsed every record, and a damaged record names its tool when it is needed, while the rest works."""

import shutil
import sqlite3

import pytest

from rated import Tool
from rated.encode.testing import HashEncoder
from rated.errors import IndexFormatError
from rated.retriever import Retriever

QUERIES = ["send an email message", "weather forecast for Oslo", "create a calendar event", "translate text"]
TOPICS = ["send email message", "weather forecast city", "calendar event create", "translate text language"]
N = 40


def catalog(n: int = N) -> list[Tool]:
    return [
        Tool(
            id=f"t{i}",
            name=f"tool_{i}",
            description=f"{TOPICS[i % 4]} variant {i}",
            provider=f"p{i % 3}" if i % 5 else None,  # some tools are their own provider
            parameters={"type": "object", "properties": {"city": {"type": "string"}}} if i % 4 == 1 else {},
        )
        for i in range(n)
    ]


def clock() -> float:
    return 1000.0


def view(r: Retriever) -> tuple:
    """Everything a caller sees: hits (the tool and every number), the tools listing, one tool's health."""
    hits = [[(h.tool, h.to_dict()) for h in r.retrieve(q, k=6)] for q in QUERIES]
    listing = [(t.tool, t.to_dict()) for t in r.tools()]
    health = r.health(listing[-1][0].id).to_dict()
    return hits, listing, health


@pytest.fixture
def db(tmp_path):
    path = tmp_path / "lazy.db"
    with Retriever.from_catalog(catalog(), db=path, encoder=HashEncoder(64), clock=clock) as r:
        r.feedback("t1", "tool_error", query=QUERIES[0])
        r.feedback("t5", "success")
    return path


def damage(path, tool_id: str, record: str = '{"id": "broken"') -> None:
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE tools SET record = ? WHERE id = ?", (record, tool_id))
    conn.close()


def test_open_parses_no_record_and_a_search_only_its_candidates(db, parses):
    with Retriever.open(db, clock=clock) as r:
        assert parses == []
        r.retrieve(QUERIES[1], k=3)
        first = list(parses)
        assert 0 < len(first) <= r.meta.candidates and len(set(first)) == len(first)
        r.retrieve(QUERIES[1], k=3)
        assert parses == first  # kept
        r.feedback("t30", "success")
        assert parses[-1] == "t30" or "t30" in first
        listing = r.tools(stats=False)
        assert sorted(parses) == sorted(f"t{i}" for i in range(N))  # each record once
        assert [t.tool.id for t in listing] == [f"t{i}" for i in range(N)]


def test_answers_equal_those_of_a_retriever_that_parsed_every_record_first(db):
    with Retriever.open(db, clock=clock) as eager:
        eager.tools()  # every record parsed before anything else
        expected = view(eager)
    with Retriever.open(db, clock=clock) as lazy:
        assert view(lazy) == expected
    with Retriever.open(db, clock=clock) as lazy:  # the listing first, then the searches
        listing = [(t.tool, t.to_dict()) for t in lazy.tools()]
        assert listing == expected[1]
        assert view(lazy) == expected


def test_sync_and_its_answers_are_the_same_parsed_or_not(db, tmp_path):
    other = tmp_path / "copy.db"
    shutil.copy(db, other)
    changed = [
        t.model_copy(update={"description": "fax a document"}) if t.id == "t2" else t for t in catalog()
    ]
    changed.append(Tool(id="new", name="fax_sender", description="send a fax"))
    with Retriever.open(db, clock=clock) as lazy, Retriever.open(other, clock=clock) as eager:
        eager.tools()
        reports = [r.sync_tools(changed[3:], prune=True) for r in (lazy, eager)]
        assert reports[0] == reports[1] and reports[0].removed == ["t0", "t1", "t2"]
        assert view(lazy) == view(eager)
        assert lazy.sync_tools(changed) == eager.sync_tools(changed)
        assert view(lazy) == view(eager)


def test_a_damaged_record_names_its_tool_when_needed_and_the_rest_works(db):
    damage(db, "t7")
    with Retriever.open(db, clock=clock) as r:  # opens: no record is read
        assert len(r) == N
        r.feedback("t5", "tool_error")  # other tools: feedback, health, tool
        assert r.health("t5").stats.failures == 1 and r.tool("t6").id == "t6"
        match = r"lazy\.db: stored record of tool 't7' is invalid"
        for needs_it in (
            lambda: r.retrieve(QUERIES[0]),  # its text is not in the snapshot: the index needs it
            lambda: r.tools(stats=False),
            lambda: r.health("t7"),
            lambda: r.tool("t7"),
            lambda: r.feedback("t7", "success"),
        ):
            with pytest.raises(IndexFormatError, match=match):
                needs_it()
            with pytest.raises(IndexFormatError, match=match):  # and again: nothing half-done is kept
                needs_it()
        report = r.sync_tools(catalog())  # the right record replaces it
        assert report.updated == ["t7"] and len(report.unchanged) == N - 1
        got = view(r)
    with Retriever.open(db, clock=clock) as fresh:
        assert view(fresh) == got


def test_a_record_stored_under_another_id_is_refused_when_needed(db):
    damage(db, "t7", Tool(id="t8", name="impostor").model_dump_json())
    with Retriever.open(db, clock=clock) as r:
        with pytest.raises(IndexFormatError, match=r"stored record of tool 't7' holds the id 't8'"):
            r.tool("t7")


def test_without_a_lexical_index_only_the_queries_that_meet_the_damaged_tool_fail(tmp_path):
    path = tmp_path / "dense.db"
    semantic = {"lexical": "none", "dense_weight": 1.0}
    Retriever.from_catalog(
        catalog(), db=path, encoder=HashEncoder(64), semantic=semantic, clock=clock
    ).close()
    with Retriever.open(path, clock=clock) as healthy:
        index, vecs = healthy.index, healthy.encoder.encode_queries(QUERIES)
        meets = [
            "t7" in {index.tool_ids[p] for p in index.search(q, v, healthy.meta.candidates)[0].tolist()}
            for q, v in zip(QUERIES, vecs, strict=True)
        ]
        expected = [[(h.id, h.score) for h in healthy.retrieve(q)] for q in QUERIES]
    assert any(meets) and not all(meets)  # the test needs both kinds of query
    damage(path, "t7")
    with Retriever.open(path, clock=clock) as r:
        for q, met, want in zip(QUERIES, meets, expected, strict=True):
            if met:
                with pytest.raises(IndexFormatError, match=r"stored record of tool 't7' is invalid"):
                    r.retrieve(q)
            else:
                assert [(h.id, h.score) for h in r.retrieve(q)] == want


def test_parse_tools_validates_every_record_once_counts_the_damaged_and_stops_when_asked(db, parses):
    """What a service runs in the background after start-up, so that its first full listing (under the
    retriever's lock) does not pay for every record at once."""
    import threading

    damage(db, "t7")
    with Retriever.open(db, clock=clock) as r:
        stop = threading.Event()
        stop.set()
        assert r.parse_tools(stop) == 0 and parses == []  # stopped before the first record
        assert r.parse_tools() == 1  # t7
        assert sorted(parses) == sorted(f"t{i}" for i in range(N))
        assert r.parse_tools() == 1 and parses.count("t7") == 2 and parses.count("t1") == 1  # kept
        with pytest.raises(IndexFormatError, match="'t7'"):
            r.tool("t7")
        assert r.tool("t8").id == "t8"
