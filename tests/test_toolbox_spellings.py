"""A toolbox's tool ids typed in another Unicode spelling ("é" composed or decomposed) name its tools, as
they do for the retriever (``IdSpellings``): ``where={"tools": [...]}``, ``run`` / ``arun``, ``obj``, ``in``
and ``remove_tools``; ids that differ in case are different tools."""

from __future__ import annotations

import asyncio
import unicodedata

import pytest

from rated.encode.testing import HashEncoder
from rated.errors import UnknownToolError
from rated.retriever import Retriever
from rated.toolbox import Toolbox

COMPOSED = unicodedata.normalize("NFC", "café_finder")
DECOMPOSED = unicodedata.normalize("NFD", "café_finder")
QUERY = "find a café nearby"


def cafe_finder(city: str) -> str:
    """Find a café nearby in a city."""
    return f"café in {city}"


cafe_finder.__name__ = DECOMPOSED  # its id, as a tool name read from a file may be spelled


def get_weather(city: str) -> str:
    """Weather forecast for a city."""
    return f"sunny in {city}"


def ranked(box: Toolbox, **where) -> list[str]:
    return [s.id for s in box.select(QUERY, k=5, **where)]


@pytest.mark.parametrize("shared", [False, True], ids=["alone", "shared index"])
def test_an_id_in_another_unicode_spelling_names_the_toolboxs_tool(tmp_path, clock, shared):
    db = tmp_path / "tools.db"
    if shared:  # the toolbox then limits every search to its own tools
        Retriever.from_catalog(
            [{"id": "other", "name": "other", "description": "Calendar"}], db, HashEncoder(64)
        ).close()
    with Toolbox([cafe_finder, get_weather], db, encoder=HashEncoder(64), clock=clock) as box:
        assert box.ids == [DECOMPOSED, "get_weather"] and box._only_own is shared
        assert box.retriever.retrieve(QUERY, 5, where={"tools": [COMPOSED]})[0].id == DECOMPOSED
        assert ranked(box, where={"tools": [COMPOSED]}) == [DECOMPOSED]
        assert ranked(box, where={"tools": [COMPOSED, DECOMPOSED, "get_weather"]})[0] == DECOMPOSED
        assert ranked(box, where={"exclude": [COMPOSED]}) == ["get_weather"]
        with pytest.raises(UnknownToolError, match="filter 'tools': unknown tool id: 'nope'"):
            box.select(QUERY, where={"tools": [COMPOSED, "nope"]})
        assert COMPOSED in box and box.obj(COMPOSED) is cafe_finder
        assert box.run(COMPOSED, {"city": "Oslo"}) == "café in Oslo"
        assert asyncio.run(box.arun(COMPOSED, {"city": "Rome"})) == "café in Rome"
        assert [o.outcome for o in box.retriever.outcomes(DECOMPOSED)] == ["success", "success"]
        assert box.remove_tools([COMPOSED, DECOMPOSED]) == [DECOMPOSED]  # one tool, as it is spelled here
        assert box.ids == ["get_weather"] and COMPOSED not in box and DECOMPOSED not in box
        assert {h.tool.id for h in box.retriever.tools(stats=False)} == (
            {"other", "get_weather"} if shared else {"get_weather"}
        )
        with pytest.raises(UnknownToolError):
            box.run(COMPOSED, {"city": "Oslo"})


def test_ids_that_differ_in_case_are_different_tools(clock):
    def Get_Weather(city: str) -> str:  # noqa: N802 - the id differs from get_weather in case only
        """Weather forecast for a city, in Fahrenheit."""
        return f"70F in {city}"

    with Toolbox([get_weather], encoder=HashEncoder(64), clock=clock) as box:
        box.add_tools([Get_Weather])
        assert box.ids == ["get_weather", "Get_Weather"]
        assert "GET_WEATHER" not in box
        both = {"get_weather", "Get_Weather"}
        assert set(ranked(box, where={"tools": sorted(both)})) == both
        assert box.run("Get_Weather", {"city": "Oslo"}) == "70F in Oslo"
        assert box.remove_tools(["get_weather"]) == ["get_weather"]
        assert box.ids == ["Get_Weather"] and box.run("Get_Weather", {"city": "Rome"}) == "70F in Rome"
        with pytest.raises(UnknownToolError):
            box.remove_tools(["GET_WEATHER"])
