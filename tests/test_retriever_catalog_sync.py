"""``Retriever.sync_tools``: keep a live index in step with a tools file without a rebuild. New ids are
added, changed records re-encoded and replaced in place with their learned state kept, unchanged tools
cost nothing, and ``prune`` removes what the file no longer holds."""

from __future__ import annotations

import pytest

from rated import Tool
from rated.catalog.text import tool_text
from rated.catalog_sync import SyncReport
from rated.encode.testing import HashEncoder
from rated.errors import CatalogError, ConfigError
from rated.index import snapshot
from rated.retriever import Retriever
from rated.store.base import LastToolError

QUERIES = ["send an email message", "weather forecast for a city", "translate text", "book a flight ticket"]
TOOLS = [
    Tool(id="mail", name="send_email", description="Send an email message", provider="p0"),
    Tool(id="weather", name="weather_forecast", description="Weather forecast for a city", provider="p1"),
    Tool(id="translate", name="translate_text", description="Translate text to another language"),
    Tool(id="calendar", name="create_event", description="Create a calendar event", provider="p0"),
]
FLIGHTS = "Book a flight ticket between two airports"


class CountingEncoder(HashEncoder):
    """Records every text it encodes for tools (the embeddings and the prior's consistency check)."""

    def __init__(self, dim: int = 64) -> None:
        super().__init__(dim)
        self.texts: list[str] = []

    def encode_tools(self, texts, *, batch_size=64, progress=False):
        self.texts.extend(texts)
        return super().encode_tools(texts, batch_size=batch_size, progress=progress)


def clock() -> float:
    return 1000.0


def edited(tool_id: str, **update) -> list[Tool]:
    return [t.model_copy(update=update) if t.id == tool_id else t for t in TOOLS]


def view(r: Retriever) -> tuple:
    hits = [[(h.tool, h.to_dict()) for h in r.retrieve(q, k=4)] for q in QUERIES]
    return hits, r.tools(stats=False)


def fresh_view(db) -> tuple:
    with Retriever.open(db, clock=clock) as r:
        return view(r)


@pytest.fixture
def db(tmp_path):
    path = tmp_path / "sync.db"
    Retriever.from_catalog(TOOLS, db=path, encoder=HashEncoder(64)).close()
    return path


def test_new_changed_and_unchanged_tools_are_told_apart(db):
    new = Tool(id="sms", name="send_sms", description="Send an SMS text message")
    with Retriever.open(db, clock=clock) as r:
        report = r.sync_tools([*edited("weather", description=FLIGHTS), new])
        assert report == SyncReport(
            added=["sms"], updated=["weather"], removed=[], unchanged=["mail", "translate", "calendar"]
        )
        assert r.retrieve("book a flight ticket", k=1)[0].id == "weather"  # its new text is what matches
        assert r.tool("weather").description == FLIGHTS
        assert [t.tool.id for t in r.tools(stats=False)] == [
            "mail",
            "weather",
            "translate",
            "calendar",
            "sms",
        ]
        assert view(r) == fresh_view(db)


def test_an_updated_tool_keeps_its_learned_state_and_so_do_the_others(db):
    with Retriever.open(db, clock=clock) as r:
        for _ in range(3):
            r.feedback("weather", "tool_error", query=QUERIES[1])
            r.feedback("mail", "success", query=QUERIES[0])
        before = r.store.load_states()
        health = {t.tool.id: t.components for t in r.tools(stats=False)}
        prior = r.health("weather").prior
        assert r.sync_tools(edited("weather", description=FLIGHTS)).updated == ["weather"]
        assert r.store.load_states() == before  # byte-equal: same tool, new text
        after = {t.tool.id: t.components for t in r.tools(stats=False)}
        assert {k: v for k, v in after.items() if k != "weather"} == {
            k: v for k, v in health.items() if k != "weather"
        }
        assert r.health("weather").prior != prior  # re-scored for its new description
        assert view(r) == fresh_view(db)


def test_unchanged_tools_are_not_encoded(db):
    encoder = CountingEncoder()
    with Retriever.open(db, encoder=encoder) as r:
        r.sync_tools(edited("weather", description=FLIGHTS))
    changed = edited("weather", description=FLIGHTS)[1]
    assert tool_text(changed) in encoder.texts
    for tool in TOOLS:
        if tool.id != "weather":
            assert tool_text(tool) not in encoder.texts and tool.description not in encoder.texts


def test_another_retriever_on_the_store_answers_as_a_fresh_open(db):
    with Retriever.open(db, clock=clock) as writer, Retriever.open(db, clock=clock) as replica:
        replica.feedback("calendar", "tool_error", query=QUERIES[0])
        assert view(replica) == fresh_view(db)  # its index is built
        writer.sync_tools(
            [*edited("mail", description="Send a fax"), Tool(id="fax", name="fax", description="Fax it")],
            prune=False,
        )
        assert view(replica) == fresh_view(db) and view(writer) == fresh_view(db)
        assert replica.tool("mail").description == "Send a fax"
        writer.sync_tools(edited("translate", parameters={"type": "object"})[:3], prune=True)
        assert view(replica) == fresh_view(db) and view(writer) == fresh_view(db)
        assert len(replica) == 3


def test_the_writer_saves_a_lexical_snapshot_of_the_synced_catalog(db):
    with Retriever.open(db) as r:
        r.retrieve(QUERIES[0])
        r.sync_tools(edited("mail", description="Send a fax"))
        stored = r.store.load_catalog()
        blob = r.store.load_cached(snapshot.NAME)
        digests = [r._by_id[i].digest for i in stored.ids]
        restored = snapshot.restore(blob, r.index.config, r.index.tools, digests)
    assert restored is not None and restored[1] == 0  # a fresh open restores it as it is


def test_prune_removes_absent_tools_with_their_state(db):
    with Retriever.open(db, clock=clock) as r:
        r.feedback("calendar", "tool_error")
        r.feedback("mail", "success")
        report = r.sync_tools(TOOLS[:2], prune=True)
        assert report == SyncReport(removed=["translate", "calendar"], unchanged=["mail", "weather"])
        assert "calendar" not in r.store.load_states() and "mail" in r.store.load_states()
        assert view(r) == fresh_view(db) and len(r) == 2


def test_without_prune_absent_tools_stay(db):
    with Retriever.open(db) as r:
        assert r.sync_tools(TOOLS[:1]) == SyncReport(unchanged=["mail"])
        assert len(r) == 4


def test_prune_refuses_to_remove_every_indexed_tool_and_changes_nothing(db):
    with Retriever.open(db) as r:
        version, before = r.store.catalog_version(), r.store.load_catalog()
        with pytest.raises(LastToolError, match="every indexed tool"):
            r.sync_tools([Tool(id="other", name="other", description="Something else")], prune=True)
        after = r.store.load_catalog()
        assert r.store.catalog_version() == version and after.records == before.records and len(r) == 4


def test_a_second_identical_sync_changes_nothing_not_even_the_catalog_version(db):
    catalog = [*edited("weather", description=FLIGHTS), Tool(id="sms", name="send_sms")]
    encoder = CountingEncoder()
    with Retriever.open(db, encoder=encoder) as r:
        r.sync_tools(catalog, prune=True)
        version, states, encoded = r.store.catalog_version(), r.store.load_states(), len(encoder.texts)
        report = r.sync_tools(catalog, prune=True)
        assert report == SyncReport(unchanged=[t.id for t in catalog])
        assert r.store.catalog_version() == version and r.store.load_states() == states
        assert len(encoder.texts) == encoded  # nothing encoded


def test_a_tool_another_writer_adds_during_the_encoding_is_updated_with_the_given_record(db):
    sms = Tool(id="sms", name="send_sms", description="Send an SMS text message")
    theirs = Tool(id="sms", name="sms_gateway", description="Their SMS tool")

    class Hook(HashEncoder):
        hook = None

        def encode_tools(self, texts, *, batch_size=64, progress=False):
            hook, Hook.hook = Hook.hook, None
            if hook is not None:
                hook()
            return super().encode_tools(texts, batch_size=batch_size, progress=progress)

    with Retriever.open(db, encoder=Hook(64), clock=clock) as mine, Retriever.open(db) as other:
        Hook.hook = lambda: other.add_tools([theirs])
        report = mine.sync_tools([*TOOLS, sms])
        assert report.updated == ["sms"] and report.added == []
        assert mine.tool("sms") == sms and other.tool("sms") == sms
        assert view(mine) == fresh_view(db)


def test_a_failed_write_stores_nothing_and_a_rerun_finishes(db, monkeypatch):
    """Added, updated and pruned tools go in one store change: a failure (the process killed, the disk
    full) leaves the catalog and every learned state as they were; nothing is half-synced."""
    catalog = [*edited("mail", description="Send a fax")[:2], Tool(id="sms", name="send_sms")]
    with Retriever.open(db, clock=clock) as r:
        r.feedback("translate", "tool_error")
        before, states = fresh_view(db), r.store.load_states()
        real = r.store.put_tools

        def crash(*args, **kwargs):
            raise OSError("killed")

        monkeypatch.setattr(r.store, "put_tools", crash)
        with pytest.raises(OSError):
            r.sync_tools(catalog, prune=True)
        assert fresh_view(db) == before and r.store.load_states() == states
        assert view(r) == before
        monkeypatch.setattr(r.store, "put_tools", real)
        report = r.sync_tools(catalog, prune=True)
        assert report == SyncReport(
            added=["sms"], updated=["mail"], removed=["translate", "calendar"], unchanged=["weather"]
        )
        assert view(r) == fresh_view(db)
        assert "translate" not in r.store.load_states()


def test_bad_arguments_change_nothing(db):
    with Retriever.open(db) as r:
        version = r.store.catalog_version()
        with pytest.raises(CatalogError):
            r.sync_tools([])
        with pytest.raises(ConfigError, match="prune"):
            r.sync_tools(TOOLS, prune="yes")
        assert r.store.catalog_version() == version


def test_a_rebuild_with_another_encoder_landing_just_before_the_write_stores_nothing(tmp_path):
    """Planned and encoded for the old index, a sync must not write into one rebuilt (another encoder)
    just before its change: its embeddings would not match (of another size: the store unreadable)."""
    from rated.errors import StoreError

    db = tmp_path / "r.db"
    Retriever.from_catalog(TOOLS, db=db, encoder=HashEncoder(64), clock=clock).close()
    revised = [TOOLS[0].model_copy(update={"description": "Send an email with attachments"}), *TOOLS[1:3]]
    with Retriever.open(db, clock=clock) as mine:
        real = mine.store.put_tools

        def rebuild_first(*args, **kwargs):
            Retriever.from_catalog(TOOLS, db=db, encoder=HashEncoder(16), overwrite=True).close()
            return real(*args, **kwargs)

        mine.store.put_tools = rebuild_first
        with pytest.raises(StoreError, match="re-indexed with encoder"):
            mine.sync_tools(revised, prune=True)
    with Retriever.open(db) as fresh:
        assert fresh.meta.encoder.dim == 16 and len(fresh) == 4
        assert fresh.tool("mail").description == TOOLS[0].description
