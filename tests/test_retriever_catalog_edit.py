"""``add_tools`` / ``remove_tools`` as the CLI and the service use them: the tools are encoded outside the
retriever's lock and checked again before they are stored; the errors say which ids and change nothing."""

from __future__ import annotations

import unicodedata

import pytest

from rated import Tool
from rated.catalog.prior import PriorStats, score_new
from rated.encode.testing import HashEncoder
from rated.errors import CatalogError, ConfigError, ToolExistsError, UnknownToolError
from rated.retriever import Retriever
from rated.store.base import LastToolError

TOOLS = [
    Tool(id="mail", name="send_email", description="Send an email message"),
    Tool(id="weather", name="weather_forecast", description="Weather forecast for a city"),
]
SMS = Tool(id="sms", name="send_sms", description="Send an SMS text message")


class _HookEncoder(HashEncoder):
    """Runs ``hook`` once, the first time tools are encoded (as another writer acting meanwhile)."""

    hook = None

    def encode_tools(self, texts, *, batch_size=64, progress=False):
        hook, self.hook = self.hook, None
        if hook is not None:
            hook()
        return super().encode_tools(texts, batch_size=batch_size, progress=progress)


def test_an_id_another_writer_adds_during_the_encoding_is_refused_and_its_tool_kept(tmp_path):
    db = tmp_path / "r.db"
    Retriever.from_catalog(TOOLS, db=db, encoder=HashEncoder(32)).close()
    theirs = Tool(id="sms", name="sms_gateway", description="Their SMS tool")
    encoder = _HookEncoder(32)
    with Retriever.open(db, encoder=encoder) as mine, Retriever.open(db) as other:
        encoder.hook = lambda: other.add_tools([theirs])
        with pytest.raises(ToolExistsError) as caught:
            mine.add_tools([SMS, Tool(id="fax", name="send_fax")])
        assert caught.value.tool_ids == ["sms"]
        assert mine.tool("sms").name == "sms_gateway" and "fax" not in {t.tool.id for t in mine.tools()}
    with Retriever.open(db) as fresh:
        assert fresh.tool("sms").name == "sms_gateway" and len(fresh) == 3


def test_an_id_another_process_stores_after_the_last_check_is_refused_by_the_store(tmp_path, monkeypatch):
    """The retriever's own check runs before the write; a writer landing in between is caught by the store,
    inside the change (it used to replace the other writer's tool)."""
    from rated import retriever_setup

    db = tmp_path / "r.db"
    Retriever.from_catalog(TOOLS, db=db, encoder=HashEncoder(32)).close()
    theirs = Tool(id="sms", name="sms_gateway", description="Their SMS tool")
    real = retriever_setup.put_tools

    def landing_first(store, *args):
        monkeypatch.setattr(retriever_setup, "put_tools", real)  # the other writer's own add is plain
        with Retriever.open(db) as other:
            other.add_tools([theirs])
        return real(store, *args)

    with Retriever.open(db) as mine:
        monkeypatch.setattr(retriever_setup, "put_tools", landing_first)
        with pytest.raises(ToolExistsError):
            mine.add_tools([SMS])
        assert mine.tool("sms").name == "sms_gateway" and len(mine) == 3
    with Retriever.open(db) as fresh:
        assert fresh.tool("sms").name == "sms_gateway"


def test_a_rebuild_during_the_encoding_scores_the_prior_with_the_new_statistics(tmp_path):
    db = tmp_path / "r.db"
    Retriever.from_catalog(TOOLS, db=db, encoder=HashEncoder(32)).close()
    rebuilt = [*TOOLS, Tool(id="stock", name="get_stock_price", description="Stock price", tags=("a", "b"))]
    encoder = _HookEncoder(32)
    with Retriever.open(db, encoder=encoder) as r:
        stats = r.meta.prior_stats
        encoder.hook = lambda: Retriever.from_catalog(
            rebuilt, db=db, encoder=HashEncoder(32), overwrite=True
        ).close()
        r.add_tools([SMS])
        assert r.meta.prior_stats != stats
        expected = score_new([SMS], HashEncoder(32), PriorStats.from_dict(r.meta.prior_stats)).r_static[0]
        assert r.health("sms").prior == pytest.approx(float(expected), abs=1e-6)
        assert len(r) == 4


def test_tool_exists_error_is_one_line_naming_the_ids():
    r = Retriever.from_catalog(TOOLS, encoder=HashEncoder(32))
    with pytest.raises(ToolExistsError) as caught:
        r.add_tools([*TOOLS, SMS])
    exc = caught.value
    assert isinstance(exc, CatalogError) and exc.tool_ids == ["mail", "weather"]
    assert str(exc) == (
        "2 tool id(s) already indexed: 'mail', 'weather' (remove them first, or give the new tools other ids)"
    )
    assert [str(p) for p in exc.problems] == [
        "tool 'mail', field 'id': already in the index",
        "tool 'weather', field 'id': already in the index",
    ]
    assert len(r) == 2
    many = ToolExistsError([f"t{i}" for i in range(12)])
    assert "'t9' and 2 more" in str(many) and "\n" not in str(many) and len(many.problems) == 12


def test_remove_returns_the_ids_as_spelled_and_refuses_all_or_nothing():
    cafe = unicodedata.normalize("NFC", "café")
    r = Retriever.from_catalog([*TOOLS, Tool(id=cafe, name="order_coffee")], encoder=HashEncoder(32))
    r.index  # noqa: B018 - built: a refused removal must leave the built index alone too
    with pytest.raises(UnknownToolError, match="'nope'"):
        r.remove_tools(["mail", "nope"])
    with pytest.raises(LastToolError, match="every tool") as caught:
        r.remove_tools(["mail", "weather", cafe])
    assert isinstance(caught.value, ConfigError)
    assert len(r) == 3
    assert r.remove_tools([unicodedata.normalize("NFD", cafe), cafe]) == [cafe]  # found once, either form
    assert r.remove_tools([]) == []
    assert {t.tool.id for t in r.tools()} == {"mail", "weather"}
    assert {h.tool.id for h in r.retrieve("order coffee", k=5)} == {"mail", "weather"}


def test_a_rebuild_with_another_encoder_landing_just_before_the_write_stores_nothing(tmp_path, monkeypatch):
    """The retriever checks the index's encoder, then writes: a rebuild landing in between (another process's
    `rated index --force`) must not receive embeddings of the old encoder (of another size, they left the
    store unreadable for every process)."""
    from rated import retriever_setup
    from rated.errors import StoreError

    db = tmp_path / "r.db"
    Retriever.from_catalog(TOOLS, db=db, encoder=HashEncoder(32)).close()
    real = retriever_setup.put_tools

    def rebuild_first(store, *args, **kwargs):
        Retriever.from_catalog(TOOLS, db=db, encoder=HashEncoder(16), overwrite=True).close()
        return real(store, *args, **kwargs)

    with Retriever.open(db) as mine:
        monkeypatch.setattr(retriever_setup, "put_tools", rebuild_first)
        with pytest.raises(StoreError, match="re-indexed with encoder"):
            mine.add_tools([SMS])
    with Retriever.open(db) as fresh:
        assert fresh.meta.encoder.dim == 16 and [t.tool.id for t in fresh.tools()] == ["mail", "weather"]


def test_an_id_indexed_in_the_other_unicode_normal_form_is_refused_by_add_and_sync(tmp_path):
    """feedback, health and remove find an id in either normal form, assuming at most one tool matches (a
    catalog refuses ids that differ only so): adding "café" decomposed beside "café" composed made two."""
    db = tmp_path / "r.db"
    composed = Tool(id=unicodedata.normalize("NFC", "café"), name="cafe", description="Order a coffee")
    Retriever.from_catalog([*TOOLS, composed], db=db, encoder=HashEncoder(32)).close()
    decomposed = composed.model_copy(update={"id": unicodedata.normalize("NFD", "café")})
    with Retriever.open(db) as r:
        version = r.store.catalog_version()
        with pytest.raises(ToolExistsError):
            r.add_tools([decomposed])
        with pytest.raises(ToolExistsError):
            r.sync_tools([*TOOLS, decomposed], prune=True)
        assert r.store.catalog_version() == version and len(r) == 3


@pytest.mark.parametrize("write", ["add", "sync"])
def test_the_other_unicode_spelling_stored_after_the_last_check_is_refused_by_the_store(
    tmp_path, monkeypatch, write
):
    """Two processes adding "café" composed and decomposed at once: each one's own check passed before
    the other's write, and the store, comparing ids exactly, kept both (the store now refuses the second)."""
    db = tmp_path / "r.db"
    Retriever.from_catalog(TOOLS, db=db, encoder=HashEncoder(32)).close()
    theirs = Tool(id=unicodedata.normalize("NFC", "café"), name="cafe", description="Their coffee tool")
    mine_too = theirs.model_copy(update={"id": unicodedata.normalize("NFD", "café"), "name": "coffee"})
    with Retriever.open(db) as mine:
        real = mine.store.put_tools

        def landing_first(*args, **kwargs):
            with Retriever.open(db) as other:
                other.add_tools([theirs])
            return real(*args, **kwargs)

        monkeypatch.setattr(mine.store, "put_tools", landing_first)
        with pytest.raises(ToolExistsError) as caught:
            mine.add_tools([mine_too]) if write == "add" else mine.sync_tools([*TOOLS, mine_too])
        assert caught.value.tool_ids == [mine_too.id]
    with Retriever.open(db) as fresh:
        assert [t.tool.id for t in fresh.tools()] == ["mail", "weather", theirs.id]
        assert fresh.health(mine_too.id).tool.name == "cafe"  # the one tool, found by either spelling


def test_an_id_in_neither_normal_form_is_refused_before_encoding_when_its_nfd_form_is_indexed():
    """An id typed with one accent composed and one decomposed is neither NFC nor NFD; the retriever looked
    up only its NFC form, so an index holding the NFD form learnt of the clash from the store, after
    encoding."""
    nfd = unicodedata.normalize("NFD", "éé")
    mixed = "e\u0301\u00e9"
    assert mixed not in (nfd, unicodedata.normalize("NFC", mixed))
    encoder = HashEncoder(32)
    r = Retriever.from_catalog([*TOOLS, Tool(id=nfd, name="accents")], encoder=encoder)
    encoded = []
    real = encoder.encode_tools
    encoder.encode_tools = lambda texts, *a, **k: encoded.append(len(texts)) or real(texts, *a, **k)
    for write in (r.add_tools, lambda tools: r.sync_tools([*TOOLS, *tools])):
        with pytest.raises(ToolExistsError):
            write([Tool(id=mixed, name="accents too")])
    assert encoded == [] and len(r) == 3


@pytest.mark.parametrize("indexed_form", ["NFC", "NFD"])
def test_feedback_and_health_find_an_id_typed_in_neither_normal_form(indexed_form):
    """One accent composed, one decomposed: neither NFC nor NFD, so 'the other form' of it (NFC, as it is
    not NFC) missed an index holding the NFD form; feedback refused a tool the catalog holds."""
    stored = unicodedata.normalize(indexed_form, "éé")
    mixed = "e\u0301\u00e9"
    with Retriever.from_catalog([*TOOLS, Tool(id=stored, name="accents")], encoder=HashEncoder(32)) as r:
        r.feedback(mixed, "tool_error")
        assert r.health(mixed).tool.id == stored and r.health(stored).stats.failures == 1
