"""The retriever's facet filters (platform, tag, provider, auth kind) reuse what is already known: the
facet snapshot that indexing saved in the store, and the last pool's table after tools are added or
removed, so that neither a process just opened nor a changed pool parses every record again."""

from __future__ import annotations

import pytest

from rated import Tool, stored_tool
from rated.encode.testing import HashEncoder
from rated.index import snapshot
from rated.retriever import Retriever

SOURCES = ["langchain", "n8n", "mcp"]
QUERY = "send an email message"
N = 30


def tools(n: int = N, start: int = 0) -> list[Tool]:
    return [
        Tool(
            id=f"t{i}",
            name=f"tool_{i}",
            description=f"send email message variant {i}",
            source=SOURCES[i % 3],
            tags=("even",) if i % 2 == 0 else ("odd",),
            provider=f"p{i % 4}",
        )
        for i in range(start, start + n)
    ]


@pytest.fixture
def parsed(monkeypatch) -> list[str]:
    """The ids of the stored records parsed from now on."""
    seen: list[str] = []
    real = stored_tool.parse_record

    def parse(record, tool_id, where="store"):
        seen.append(tool_id)
        return real(record, tool_id, where)

    monkeypatch.setattr(stored_tool, "parse_record", parse)
    return seen


def expected(pool: list[Tool], source: str) -> set[str]:
    return {t.id for t in pool if t.source == source}


def test_indexing_saves_the_facet_snapshot(tmp_path):
    db = tmp_path / "r.db"
    with Retriever.from_catalog(tools(), db=db, encoder=HashEncoder(64)) as r:
        assert r.store.load_cached(snapshot.FACETS_NAME) is not None


def test_a_process_opening_the_store_filters_without_parsing_the_pool(tmp_path, parsed):
    db = tmp_path / "r.db"
    Retriever.from_catalog(tools(), db=db, encoder=HashEncoder(64)).close()
    with Retriever.open(db, encoder=HashEncoder(64)) as r:
        r.retrieve(QUERY, k=2)  # the index built (its texts may parse records): not what is counted
        parsed.clear()
        hits = r.retrieve(QUERY, k=N, where={"source": "n8n"})
    assert {h.id for h in hits} == expected(tools(), "n8n")
    assert set(parsed) <= {h.id for h in hits}  # only the hits' own tools, to return them


def test_without_the_snapshot_the_answer_is_the_same(tmp_path):
    db = tmp_path / "r.db"
    answers = []
    for drop in (False, True):
        with Retriever.from_catalog(tools(), db=db, encoder=HashEncoder(64), overwrite=True) as r:
            if drop:
                assert r.store.delete_cached(snapshot.FACETS_NAME)
        with Retriever.open(db, encoder=HashEncoder(64)) as r:
            where = {"source": ["mcp", "n8n"], "tags": "even", "provider": ["p0", "p2", "p3"]}
            answers.append([(h.id, h.score) for h in r.retrieve(QUERY, k=N, where=where)])
    assert answers[0] == answers[1] and answers[0]


def test_after_adding_tools_the_next_filter_parses_only_the_new_ones(tmp_path, parsed):
    db = tmp_path / "r.db"
    Retriever.from_catalog(tools(), db=db, encoder=HashEncoder(64)).close()
    with Retriever.open(db, encoder=HashEncoder(64)) as r:
        r.retrieve(QUERY, k=2, where={"source": "n8n"})
        assert r.store.delete_cached(snapshot.FACETS_NAME)  # what is known now: the last pool's table
        r.add_tools(tools(3, start=N))
        r.remove_tools(["t1"])
        r.retrieve(QUERY, k=2)
        parsed.clear()
        hits = r.retrieve(QUERY, k=N + 3, where={"source": "n8n"})
    pool = [t for t in tools(N + 3) if t.id != "t1"]
    assert {h.id for h in hits} == expected(pool, "n8n")
    new = {f"t{i}" for i in range(N, N + 3)}
    assert set(parsed) <= new | {h.id for h in hits}
    assert len(set(parsed) - {h.id for h in hits}) <= len(new)


def test_a_changed_record_is_parsed_again_not_taken_from_the_snapshot(tmp_path):
    db = tmp_path / "r.db"
    Retriever.from_catalog(tools(), db=db, encoder=HashEncoder(64)).close()
    with Retriever.open(db, encoder=HashEncoder(64)) as r:
        # t0 (langchain) moves to n8n under the same id: its record digest changes
        r.sync_tools(
            [*(t for t in tools() if t.id != "t0"), tools(1)[0].model_copy(update={"source": "n8n"})]
        )
    with Retriever.open(db, encoder=HashEncoder(64)) as r:
        hits = r.retrieve(QUERY, k=N, where={"source": "n8n"})
    assert {h.id for h in hits} == expected(tools(), "n8n") | {"t0"}
