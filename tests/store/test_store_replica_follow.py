"""A replica follows another writer's catalog changes in place on every backend: each store's
``load_catalog`` keeps the kept tools in their order and puts added ones last (a tool removed and added
again included), so that a replica answers exactly as a process that opens the store now."""

from __future__ import annotations

import contextlib
import uuid

import pytest

from rated import Tool
from rated.encode.testing import HashEncoder
from rated.retriever import Retriever
from rated.store.memory import MemoryStore

TOPICS = ["send email message", "weather forecast city", "calendar event create", "translate text language"]
TOOLS = [
    Tool(id=f"t{i}", name=f"tool_{i}", description=f"{TOPICS[i % 4]} variant {i}", provider=f"p{i % 3}")
    for i in range(10)
]
QUERIES = ["send an email message", "weather forecast for Oslo", "create a calendar event", "variant 7"]


def clock() -> float:
    return 1000.0


@pytest.fixture(params=["memory", "sqlite", pytest.param("redis", marks=pytest.mark.redis)])
def db(request, tmp_path):
    """What ``Retriever.open`` takes for each backend, with its store options."""
    if request.param == "memory":
        return MemoryStore(), {}
    if request.param == "sqlite":
        return tmp_path / "follow.db", {}
    return request.getfixturevalue("redis_url"), {"namespace": f"t{uuid.uuid4().hex[:8]}"}


@contextlib.contextmanager
def opened(db):
    where, options = db
    r = Retriever.open(where, clock=clock, **options)
    try:
        yield r
    finally:
        if not isinstance(where, MemoryStore):  # one store object for all: closed by no one
            r.close()


def build(db, tools: list[Tool], **config) -> None:
    where, options = db
    r = Retriever.from_catalog(tools, db=where, encoder=HashEncoder(64), **options, **config)
    if not isinstance(where, MemoryStore):
        r.close()


def view(r: Retriever) -> tuple:
    hits = [[(h.tool, h.to_dict()) for h in r.retrieve(q, k=6)] for q in QUERIES]
    return hits, r.tools(stats=False)


def fresh_view(db) -> tuple:
    with opened(db) as r:
        return view(r)


def test_a_replica_follows_removals_appends_and_a_tool_added_back(db):
    build(db, TOOLS)
    with opened(db) as writer, opened(db) as replica:
        writer.feedback("t4", "tool_error", query=QUERIES[0])
        assert view(replica) == fresh_view(db)
        index = replica.index
        writer.remove_tools(["t2"])
        writer.add_tools(
            [Tool(id="late", name="mailer", description="send email message now", provider="p1")]
        )
        assert view(replica) == fresh_view(db) and replica.index is index  # followed in place
        assert [t.tool.id for t in replica.tools(stats=False)][-1] == "late"
        writer.remove_tools(["t5"])  # and back, in one reload window: now last, so rebuilt
        writer.add_tools([TOOLS[5]])
        assert view(replica) == fresh_view(db)
        assert [t.tool.id for t in replica.tools(stats=False)][-1] == "t5"
        index = replica.index
        writer.remove_tools(["t5"])  # the last one, back again: the same place, the same record
        writer.add_tools([TOOLS[5]])
        assert view(replica) == fresh_view(db) and replica.index is index


def test_a_rebuild_in_another_order_is_answered_in_that_order(db):
    build(db, TOOLS)
    with opened(db) as replica:
        replica.retrieve(QUERIES[0])
        build(db, TOOLS[::-1], overwrite=True)
        assert view(replica) == fresh_view(db)
        assert [t.tool.id for t in replica.tools(stats=False)] == [t.id for t in TOOLS[::-1]]
