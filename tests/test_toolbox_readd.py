"""``Toolbox.add_tools`` of a tool the toolbox holds but the shared index no longer does (another process
removed it): indexed again with the object given, as ``RemovedToolError`` advises, even when it is the
toolbox's only tool (``remove_tools`` refuses to drop that one: the toolbox would be left with none)."""

from __future__ import annotations

import unicodedata

import pytest

from rated.encode.testing import HashEncoder
from rated.errors import RemovedToolError, ToolExistsError
from rated.retriever import Retriever
from rated.store.base import LastToolError
from rated.toolbox import Toolbox

CAFE_NFC = unicodedata.normalize("NFC", "café_menu")
CAFE_NFD = unicodedata.normalize("NFD", "café_menu")


def get_weather(city: str) -> str:
    """Weather forecast for a city."""
    return f"sunny in {city}"


def send_email(to: str, body: str) -> str:
    """Send an email message."""
    return "sent"


def rainy_weather():
    def get_weather(city: str) -> str:  # another object under the same id
        """Weather forecast for a city."""
        return f"rain in {city}"

    return get_weather


def indexed(box: Toolbox) -> set[str]:
    return {h.tool.id for h in box.retriever.tools(stats=False)}


@pytest.fixture
def shared(tmp_path, clock):
    """A toolbox on a SQLite index, and another process's retriever on the same file (one more tool, so
    that the index is never left empty)."""
    db = tmp_path / "tools.db"
    with Retriever.from_catalog(
        [{"id": "calendar", "name": "calendar", "description": "Calendar events"}], db, HashEncoder(64)
    ):
        pass
    other = Retriever.open(db, HashEncoder(64))
    yield db, other
    other.close()


def test_the_only_tool_removed_by_another_process_is_indexed_again_by_add_tools(shared, clock):
    db, other = shared
    with Toolbox([get_weather], db, encoder=HashEncoder(64), clock=clock) as box:
        other.remove_tools(["get_weather"])
        with pytest.raises(RemovedToolError, match="add_tools"):
            box.run("get_weather", {"city": "Oslo"})
        with pytest.raises(LastToolError):  # the toolbox keeps one tool: remove_tools cannot help here
            box.remove_tools(["get_weather"])
        report = box.add_tools([get_weather])
        assert report.added == ["get_weather"]
        assert box.ids == ["get_weather"] and "get_weather" in indexed(box)
        assert box.run("get_weather", {"city": "Oslo"}) == "sunny in Oslo"
        assert [s.id for s in box.select("weather forecast", k=3)] == ["get_weather"]


def test_a_removed_tool_is_indexed_again_with_the_object_given_and_the_rest_stay(shared, clock):
    db, other = shared
    with Toolbox([get_weather, send_email], db, encoder=HashEncoder(64), clock=clock) as box:
        other.remove_tools(["get_weather"])
        rainy = rainy_weather()
        box.add_tools([rainy])
        assert box.ids == ["send_email", "get_weather"]
        assert box.obj("get_weather") is rainy
        assert box.run("get_weather", {"city": "Oslo"}) == "rain in Oslo"
        assert indexed(box) == {"calendar", "get_weather", "send_email"}


def test_adding_a_held_id_the_index_still_holds_is_refused_and_changes_nothing(shared, clock):
    db, other = shared
    with Toolbox([get_weather, send_email], db, encoder=HashEncoder(64), clock=clock) as box:
        other.remove_tools(["get_weather"])
        with pytest.raises(ToolExistsError) as refused:  # one of them is still indexed: neither is added
            box.add_tools([get_weather, send_email])
        assert refused.value.tool_ids == ["send_email"]
        assert box.ids == ["get_weather", "send_email"]
        assert indexed(box) == {"calendar", "send_email"}


def test_a_removed_tool_added_again_in_another_unicode_spelling_is_held_once(shared, clock):
    db, other = shared
    first = {"id": CAFE_NFC, "name": "menu", "description": "Today's menu of the cafe"}
    with Toolbox([get_weather, first], db, encoder=HashEncoder(64), clock=clock) as box:
        other.remove_tools([CAFE_NFC])
        again = {"id": CAFE_NFD, "name": "menu", "description": "Today's menu of the cafe, again"}
        box.add_tools([again])
        assert len(box) == 2 and box.obj(CAFE_NFC) is again and box.obj(CAFE_NFD) is again
        assert [s.obj for s in box.select("menu of the cafe", k=1)] == [again]


@pytest.mark.parametrize("when", ["once indexed", "added during the search"])
def test_a_tool_being_added_again_is_selected_with_its_new_object(shared, clock, monkeypatch, when):
    """A select that finds the tool indexed again has the object given to ``add_tools``, not the one the
    toolbox held before another process removed it: between the index taking it and ``add_tools``
    returning, or when the whole add lands between the select reading its tools and searching."""
    db, other = shared
    with Toolbox([get_weather, send_email], db, encoder=HashEncoder(64), clock=clock) as box:
        other.remove_tools(["get_weather"])
        rainy, seen = rainy_weather(), []
        if when == "once indexed":
            add = box.retriever.add_tools

            def add_then_select(tools, **options):
                add(tools, **options)
                seen.append(box.select("weather forecast", k=1)[0].obj)

            monkeypatch.setattr(box.retriever, "add_tools", add_then_select)
            box.add_tools([rainy])
        else:
            retrieve = box.retriever.retrieve

            def add_then_retrieve(*args, **kwargs):
                monkeypatch.setattr(box.retriever, "retrieve", retrieve)
                box.add_tools([rainy])
                return retrieve(*args, **kwargs)

            monkeypatch.setattr(box.retriever, "retrieve", add_then_retrieve)
            seen.append(box.select("weather forecast", k=1)[0].obj)
        assert seen == [rainy]


def test_the_old_spelling_of_a_tool_added_again_is_not_kept_as_indexed(shared, clock):
    db, other = shared
    first = {"id": CAFE_NFC, "name": "menu", "description": "Today's menu of the cafe"}
    with Toolbox([get_weather, first], db, encoder=HashEncoder(64), clock=clock) as box:
        other.remove_tools([CAFE_NFC])
        box.add_tools([{"id": CAFE_NFD, "name": "menu", "description": "Today's menu of the cafe, again"}])
        assert box._indexed == {"get_weather", CAFE_NFD}
