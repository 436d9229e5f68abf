"""``Toolbox.add_tools``'s two ways into the index: tools it does not hold are added as
``Retriever.add_tools`` adds them (only they encoded, the index changed in place), and when it holds one
(kept from an earlier run, added by another process meanwhile, or another Unicode spelling of one) the
tools are synced instead, as opening the index syncs them. Both leave the same index and state; a changed
tool kept from an earlier run is re-encoded and keeps what it learned."""

from __future__ import annotations

import unicodedata

import numpy as np
import pytest

from counting_encoder import CountingEncoder
from rated import retriever_setup as setup
from rated.catalog.text import tool_text
from rated.encode.testing import HashEncoder
from rated.errors import ToolExistsError
from rated.retriever import Retriever
from rated.toolbox import Toolbox

QUERY = "weather forecast for a city"
CAFE_NFC = unicodedata.normalize("NFC", "café_menu")
CAFE_NFD = unicodedata.normalize("NFD", "café_menu")


def get_weather(city: str) -> str:
    """Weather forecast for a city."""
    return f"sunny in {city}"


def daily_forecast(city: str) -> str:
    """Weather forecast for a city, day by day."""
    raise TimeoutError("the forecast service did not answer")


def translate(text: str, to: str) -> str:
    """Translate text into another language."""
    return f"{text} ({to})"


def stock_quote(ticker: str) -> float:
    """Latest stock price for a ticker symbol."""
    return 42.0


def indexed(box: Toolbox) -> set[str]:
    return {h.tool.id for h in box.retriever.tools(stats=False)}


def learned(box: Toolbox, clock) -> None:
    """Three timeouts of daily_forecast and a success of get_weather, at the same times in every box."""
    for _ in range(3):
        clock.t += 1.0
        with pytest.raises(TimeoutError):
            box.run("daily_forecast", {"city": "Oslo"}, query=QUERY)
    box.run("get_weather", {"city": "Oslo"}, query=QUERY)


def fail_early_run(db, clock) -> None:
    """An earlier run's toolbox on ``db``, whose daily_forecast failed three times."""
    with Toolbox([get_weather, daily_forecast], db, encoder=HashEncoder(64), clock=clock) as first:
        learned(first, clock)


def state(box: Toolbox) -> dict:
    """What the index holds: the stored catalog and states, each tool's health, and rankings."""
    catalog = box.retriever.store.load_catalog()
    return {
        "ids": (box.ids, catalog.ids),
        "records": catalog.records,
        "embeddings": catalog.embeddings.tolist(),
        "prior": catalog.prior.tolist(),
        "prior_detail": list(catalog.prior_detail),
        "states": box.retriever.store.load_states(),
        "health": [h.to_dict() for h in box.retriever.tools()],
        "ranked": [
            [(h.id, h.score) for h in box.retriever.retrieve(q, 10)]
            for q in (QUERY, "translate text", "stock price")
        ],
    }


def counted(sync, box: Toolbox, calls: list[Toolbox]):
    def spy(tools, **options):
        calls.append(box)
        return sync(tools, **options)

    return spy


def test_the_add_and_the_sync_leave_the_same_index_and_state(tmp_path, clock, monkeypatch):
    boxes = [
        Toolbox([get_weather, daily_forecast], tmp_path / f"{name}.db", encoder=HashEncoder(64), clock=clock)
        for name in ("added", "synced")
    ]
    added, synced = boxes
    try:
        start = clock.t
        for box in boxes:
            clock.t = start
            learned(box, clock)
        syncs: list[Toolbox] = []
        for box in boxes:
            monkeypatch.setattr(box.retriever, "sync_tools", counted(box.retriever.sync_tools, box, syncs))

        def held_already(tools, **options):  # as the index answers when it holds one: the sync follows
            raise ToolExistsError(["translate"])

        monkeypatch.setattr(synced.retriever, "add_tools", held_already)
        reports = [box.add_tools([translate, stock_quote]) for box in boxes]
        assert syncs == [synced]  # the other added them as Retriever.add_tools does
        assert reports[0] == reports[1] and reports[0].added == ["translate", "stock_quote"]
        assert reports[0].updated == reports[0].unchanged == reports[0].removed == []
        assert state(added) == state(synced)
        for box in boxes:
            assert box.run("translate", {"text": "hei", "to": "en"}) == "hei (en)"
    finally:
        for box in boxes:
            box.close()


@pytest.mark.parametrize("with_new", [False, True], ids=["alone", "with a new tool"])
def test_a_changed_tool_kept_from_an_earlier_run_is_encoded_again_and_keeps_what_it_learned(
    tmp_path, clock, with_new
):
    db = tmp_path / "tools.db"
    fail_early_run(db, clock)

    def daily_forecast(city: str) -> str:  # the same id, described otherwise now
        """Hourly rain and wind forecast for a city."""
        return f"rain in {city}"

    encoder = CountingEncoder()
    with Toolbox([get_weather], db, encoder=encoder, clock=clock) as box:  # daily_forecast stays indexed
        report = box.add_tools([daily_forecast, translate] if with_new else [daily_forecast])
        assert report.updated == ["daily_forecast"] and report.unchanged == []
        assert report.added == (["translate"] if with_new else [])
        tool = box.retriever.tool("daily_forecast")
        assert tool.description == "Hourly rain and wind forecast for a city."
        assert tool_text(tool) in encoder.encoded
        catalog = box.retriever.store.load_catalog()
        stored = catalog.embeddings[catalog.ids.index("daily_forecast")]
        assert np.array_equal(stored, setup.encode_tools(HashEncoder(64), [tool], False)[0])
        assert box.retriever.health("daily_forecast").components["bandit"] < 0.5  # 1.0: never failed
        assert box.obj("daily_forecast") is daily_forecast
        assert box.run("daily_forecast", {"city": "Oslo"}) == "rain in Oslo"
        assert box.select("hourly rain and wind", k=1)[0].obj is daily_forecast
    with Toolbox([get_weather, daily_forecast], db, encoder=encoder, clock=clock) as again:
        assert again.synced is not None and again.synced.updated == []  # saved as the add left it


def test_a_tool_another_process_adds_while_the_new_ones_are_encoded_is_synced(tmp_path, clock):
    db = tmp_path / "tools.db"
    Retriever.from_catalog(
        [{"id": "calendar", "name": "calendar", "description": "Calendar events"}], db, HashEncoder(64)
    ).close()
    other = Retriever.open(db, HashEncoder(64))

    class Meanwhile(CountingEncoder):
        def encode_tools(self, texts, **options):
            if "translate" not in {h.tool.id for h in other.tools(stats=False)}:
                other.add_tools([{"id": "translate", "name": "translate", "description": "Its own"}])
            return super().encode_tools(texts, **options)

    try:
        with Toolbox([get_weather], db, encoder=Meanwhile(), clock=clock) as box:
            report = box.add_tools([translate])
            assert (report.added, report.updated) == ([], ["translate"])  # the other's, replaced
            assert box.retriever.tool("translate").description == "Translate text into another language."
            assert box.run("translate", {"text": "hei", "to": "en"}) == "hei (en)"
            assert box.select("translate text into another language", k=1)[0].obj is translate
            assert indexed(box) == {"calendar", "get_weather", "translate"}
    finally:
        other.close()


def test_an_id_the_index_kept_in_another_unicode_spelling_is_refused_and_changes_nothing(tmp_path, clock):
    db = tmp_path / "tools.db"
    kept = {"id": CAFE_NFC, "name": "menu", "description": "Today's menu of the cafe"}
    Toolbox([get_weather, kept], db, encoder=HashEncoder(64), clock=clock).close()
    encoder = CountingEncoder()
    with Toolbox([get_weather], db, encoder=encoder, clock=clock) as box:
        encoder.encoded.clear()
        again = {"id": CAFE_NFD, "name": "menu", "description": "Today's menu of the cafe"}
        with pytest.raises(ToolExistsError) as refused:
            box.add_tools([translate, again])
        assert refused.value.tool_ids == [CAFE_NFD]
        assert encoder.encoded == [] and box.ids == ["get_weather"]
        assert indexed(box) == {"get_weather", CAFE_NFC}
        box.add_tools([kept])  # as the index spells it: taken as it is, with what it learned
        assert box.ids == ["get_weather", CAFE_NFC] and encoder.encoded == []
