"""Another writer's catalog change: a replica re-parses only changed records and follows removals and
appends with its built index in place, and always answers as a process that opens the store now."""

from __future__ import annotations

import pytest

from rated import Tool
from rated import retriever_setup as setup
from rated.encode.testing import HashEncoder
from rated.retriever import Retriever

QUERIES = ["send an email message", "weather forecast for Oslo", "create a calendar event", "translate text"]


def catalog(n: int = 12) -> list[Tool]:
    topics = [
        "send email message",
        "weather forecast city",
        "calendar event create",
        "translate text language",
    ]
    return [
        Tool(id=f"t{i}", name=f"tool_{i}", description=f"{topics[i % 4]} variant {i}", provider=f"p{i % 3}")
        for i in range(n)
    ]


def answers(r: Retriever) -> list[list[tuple[str, float]]]:
    return [[(h.id, round(h.score, 12)) for h in r.retrieve(q, k=5)] for q in QUERIES]


@pytest.fixture
def pair(tmp_path):
    db = tmp_path / "sync.db"
    Retriever.from_catalog(catalog(), db=db, encoder=HashEncoder(64)).close()
    writer, replica = Retriever.open(db), Retriever.open(db)
    replica.retrieve(QUERIES[0])  # the replica's index is built
    yield db, writer, replica
    writer.close(), replica.close()


def fresh_answers(db) -> list[list[tuple[str, float]]]:
    with Retriever.open(db) as r:
        return answers(r)


def test_an_added_tool_is_followed_in_place_and_only_its_record_is_parsed(pair, monkeypatch):
    db, writer, replica = pair
    index = replica.index
    parsed = []
    real = setup.parse_record
    monkeypatch.setattr(
        setup, "parse_record", lambda rec, tid, where="store": parsed.append(tid) or real(rec, tid, where)
    )
    writer.add_tools([Tool(id="new", name="email_sender", description="send an email message fast")])
    got = answers(replica)
    assert replica.index is index and parsed == ["new"]
    assert "new" in {h.id for h in replica.retrieve("send an email message fast", k=3)}
    assert got == fresh_answers(db)


def test_removals_and_appends_together_are_followed_in_place(pair):
    db, writer, replica = pair
    index = replica.index
    writer.remove_tools(["t1", "t4"])
    writer.add_tools([Tool(id="late", name="forecast", description="weather forecast tomorrow")])
    writer.remove_tools(["t7"])
    assert answers(replica) == fresh_answers(db) and replica.index is index
    assert [t.tool.id for t in replica.tools(stats=False)] == [t.tool.id for t in writer.tools(stats=False)]


def test_a_rebuild_that_changes_tools_in_place_is_rebuilt_not_followed(pair):
    db, _, replica = pair
    index = replica.index
    changed = [
        t.model_copy(update={"description": "nothing at all"}) if t.id == "t2" else t for t in catalog()
    ]
    Retriever.from_catalog(changed, db=db, encoder=HashEncoder(64), overwrite=True).close()
    assert answers(replica) == fresh_answers(db) and replica.index is not index
    assert replica.tool("t2").description == "nothing at all"


def test_a_rebuild_with_other_semantic_settings_is_rebuilt(pair):
    db, _, replica = pair
    index = replica.index
    Retriever.from_catalog(
        catalog(), db=db, encoder=HashEncoder(64), overwrite=True, semantic={"dense_weight": 1.0}
    ).close()
    assert answers(replica) == fresh_answers(db) and replica.index is not index
    assert replica.index.config.dense_weight == 1.0


def test_the_writer_itself_keeps_its_index_after_another_writers_change(pair):
    db, writer, replica = pair
    writer.retrieve(QUERIES[1])
    index = writer.index
    writer.add_tools([Tool(id="mine", name="translator", description="translate text to French")])
    replica.add_tools([Tool(id="theirs", name="mailer", description="send email message now")])
    assert answers(writer) == fresh_answers(db) and writer.index is index
