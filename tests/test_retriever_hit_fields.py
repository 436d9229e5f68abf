"""``Retriever._rank`` keeps each pool position's Tool and provider once a ranking has read them (no
StoredTool attribute hook per candidate): a catalog change in place, an addition, a removal or another
process's change starts the pool afresh, so hits carry the current tool and RATED sees its current
provider."""

from rated import Tool
from rated.encode.testing import HashEncoder
from rated.retriever import Retriever

QUERY = "send an email message"


def catalog(provider_of_a: str | None = "P") -> list[Tool]:
    return [
        Tool(id="a", name="send_email", description="Send an email message", provider=provider_of_a),
        Tool(id="b", name="email_send", description="Send an email message now", provider="Q"),
        Tool(id="c", name="weather", description="Weather forecast for a city"),
        Tool(id="x", name="mailer", description="Mail a letter", provider="R"),
    ]


def clock() -> float:
    return 1000.0


def by_id(r: Retriever) -> dict:
    return {h.tool.id: h for h in r.retrieve(QUERY, k=4)}


def test_hits_follow_a_tool_changed_in_place_and_its_new_provider(tmp_path) -> None:
    db = tmp_path / "r.db"
    with Retriever.from_catalog(catalog(), db=db, encoder=HashEncoder(64), clock=clock) as r:
        r.feedback("x", "tool_error")  # provider R is suspected down
        fresh = by_id(r)["a"]
        assert fresh.tool.provider == "P"
        b_before = by_id(r)["b"].components
        r.sync_tools(catalog(provider_of_a="R"))  # a moves to R, in place
        moved = by_id(r)["a"]
        assert moved.tool.provider == "R" and moved.tool is r.tool("a")
        assert moved.components["availability"] < fresh.components["availability"]  # R's outage counts
        assert by_id(r)["b"].components == b_before  # the others as they were


def test_hits_follow_removals_additions_and_another_process(tmp_path) -> None:
    db = tmp_path / "r.db"
    enc = HashEncoder(64)
    with Retriever.from_catalog(catalog(), db=db, encoder=enc, clock=clock) as r:
        assert set(by_id(r)) == {"a", "b", "c", "x"}
        r.remove_tools(["a"])  # positions shift
        assert {i: h.tool.id for i, h in by_id(r).items()} == {"b": "b", "c": "c", "x": "x"}
        r.add_tools([Tool(id="d", name="send_mail", description="Send an email message", provider="R")])
        got = by_id(r)
        assert got["d"].tool.provider == "R" and all(h.tool.id == i for i, h in got.items())
        with Retriever.open(db, encoder=enc, clock=clock) as other:
            other.sync_tools([*catalog()[1:], Tool(id="d", name="send_mail", description="Send an email")])
        got = by_id(r)  # refreshed from the store: d without a provider now
        assert got["d"].tool.provider is None and got["d"].tool is r.tool("d")
        assert all(h.tool.id == i for i, h in got.items())
