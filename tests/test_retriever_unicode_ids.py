"""Ids in another Unicode spelling (NFC, NFD, or neither: one accent composed, one decomposed) name the one
tool the catalog holds in every lookup, as feedback and health find it; and the catalog never takes a
second tool whose id is the same text in another spelling."""

from __future__ import annotations

import unicodedata

import pytest

from rated import Tool
from rated.encode.testing import HashEncoder
from rated.errors import ToolExistsError
from rated.retriever import Retriever

MIXED = "e\u0301\u00e9"  # "éé": the first accent decomposed, the second composed (neither NFC nor NFD)
TOOLS = [
    Tool(id="mail", name="send_email", description="Send an email message"),
    Tool(id="weather", name="weather_forecast", description="Weather forecast for a city"),
]


@pytest.mark.parametrize("stored", ["NFC", "NFD", "mixed"])
@pytest.mark.parametrize("typed", ["NFC", "NFD", "mixed"])
def test_tool_and_outcomes_find_an_id_in_any_spelling_as_feedback_does(stored, typed):
    """Retriever.tool and Retriever.outcomes looked the id up exactly: UnknownToolError for a tool that
    feedback and health found."""

    def spell(form: str) -> str:
        return MIXED if form == "mixed" else unicodedata.normalize(form, MIXED)

    with Retriever.from_catalog(
        [*TOOLS, Tool(id=spell(stored), name="accents")], encoder=HashEncoder(32)
    ) as r:
        r.feedback(spell(typed), "tool_error")
        assert r.tool(spell(typed)).id == spell(stored)
        assert [o.tool_id for o in r.outcomes(spell(typed))] == [spell(stored)]


@pytest.mark.parametrize("new_form", ["NFC", "NFD"])
@pytest.mark.parametrize("write", ["add", "sync"])
def test_an_id_in_another_spelling_of_a_stored_mixed_id_is_refused(new_form, write):
    """The clash check looked for the new id's own NFC and NFD forms only: beside a stored mixed id, both
    forms were taken, and the id typed in the third spelling then named one of two tools."""
    new = Tool(id=unicodedata.normalize(new_form, MIXED), name="accents too")
    with Retriever.from_catalog([*TOOLS, Tool(id=MIXED, name="accents")], encoder=HashEncoder(32)) as r:
        with pytest.raises(ToolExistsError):
            r.add_tools([new]) if write == "add" else r.sync_tools([*r_tools(r), new])
        assert len(r) == 3


def test_an_id_equal_to_a_stored_one_after_nfc_is_refused_as_the_catalog_loader_refuses_it():
    """The KELVIN SIGN is "K" in NFC (and NFD): the loader refuses the two ids in one file, add took them."""
    with Retriever.from_catalog([*TOOLS, Tool(id="\u212a", name="kelvin")], encoder=HashEncoder(32)) as r:
        with pytest.raises(ToolExistsError):
            r.add_tools([Tool(id="K", name="k")])
        r.add_tools([Tool(id="sms", name="send_sms")])  # other ids are still taken
        assert len(r) == 4


def r_tools(r: Retriever) -> list[Tool]:
    return [health.tool for health in r.tools(stats=False)]


def test_a_filter_finds_a_stored_mixed_id_typed_in_a_normal_form():
    """Stored in neither form, typed NFC: the filter's lookup (its NFC and NFD forms) missed it."""
    nfc = unicodedata.normalize("NFC", MIXED)
    with Retriever.from_catalog([*TOOLS, Tool(id=MIXED, name="accents")], encoder=HashEncoder(32)) as r:
        assert [h.id for h in r.retrieve("accents", where={"tools": [nfc]})] == [MIXED]
        assert MIXED not in [h.id for h in r.retrieve("accents", k=3, where={"exclude": [nfc]})]
