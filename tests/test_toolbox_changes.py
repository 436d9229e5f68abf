"""``Toolbox.add_tools`` / ``remove_tools``: a tool set that changes while the agent runs (only the new
tools encoded, removed ones gone from the index with what they learned, ``select``, ``run`` and
``definitions`` following at once, refused changes changing nothing, threads selecting and calling
meanwhile), and tools of a toolbox that another process removed from the shared index (``select`` skips
them, ``run`` says they were removed, naming the database)."""

from __future__ import annotations

import asyncio
import threading

import pytest

from counting_encoder import CountingEncoder
from rated.catalog.text import tool_text
from rated.encode.testing import HashEncoder
from rated.errors import (
    CatalogError,
    ConfigError,
    RemovedToolError,
    ToolExistsError,
    UnknownToolError,
)
from rated.retriever import Retriever
from rated.toolbox import Toolbox

QUERY = "weather forecast for a city"
CALLS: list[str] = []


def get_weather(city: str) -> str:
    """Weather forecast for a city."""
    CALLS.append("get_weather")
    return f"sunny in {city}"


def daily_forecast(city: str) -> str:
    """Weather forecast for a city, day by day."""
    CALLS.append("daily_forecast")
    raise TimeoutError("the forecast service did not answer")


def send_email(to: str, body: str) -> str:
    """Send an email message."""
    CALLS.append("send_email")
    return "sent"


def translate(text: str, to: str) -> str:
    """Translate text into another language."""
    CALLS.append("translate")
    return f"{text} ({to})"


def stock_quote(ticker: str) -> float:
    """Latest stock price for a ticker symbol."""
    CALLS.append("stock_quote")
    return 42.0


@pytest.fixture(autouse=True)
def _no_calls_yet():
    CALLS.clear()


def log(box: Toolbox, tool_id: str) -> list[str]:
    return [o.outcome for o in box.retriever.outcomes(tool_id)]


def indexed(box: Toolbox) -> set[str]:
    return {h.tool.id for h in box.retriever.tools(stats=False)}


def ranked(box: Toolbox, query: str, k: int = 10, **where) -> list[str]:
    return [s.id for s in box.select(query, k=k, **where)]


# --------------------------------------------------------------------------------------------- adding
def test_added_tools_alone_are_encoded_and_are_selected_and_run_at_once(clock):
    encoder = CountingEncoder()
    with Toolbox([get_weather, send_email], encoder=encoder, clock=clock) as box:
        encoder.encoded.clear()
        report = box.add_tools([translate, stock_quote])
        assert (report.added, report.updated, report.removed) == (["translate", "stock_quote"], [], [])
        texts = {i: tool_text(box.retriever.tool(i)) for i in box.ids}
        assert [i for i, text in texts.items() if text in encoder.encoded] == ["translate", "stock_quote"]
        assert box.ids == ["get_weather", "send_email", "translate", "stock_quote"]
        assert len(box) == 4 and "translate" in box and box.obj("stock_quote") is stock_quote
        assert ranked(box, "translate text into another language", k=1) == ["translate"]
        [best] = box.select("latest stock price for a ticker", k=1)
        assert (best.id, best.obj, best.run({"ticker": "ACME"})) == ("stock_quote", stock_quote, 42.0)
        assert box.run("translate", '{"text": "hei", "to": "en"}') == "hei (en)"
        assert log(box, "stock_quote") == ["success"] and log(box, "translate") == ["success"]
        defs = box.definitions("translate text into another language", k=1)
        assert defs.tool_id(defs.definitions[0]["function"]["name"]) == "translate"


def test_added_tools_take_the_toolboxs_source_and_provider_unless_given(clock):
    with Toolbox([get_weather], encoder=HashEncoder(64), provider="acme", clock=clock) as box:
        box.add_tools([translate])
        box.add_tools([stock_quote], source="finance", provider="bank")
        assert box.retriever.tool("translate").provider == "acme"
        tool = box.retriever.tool("stock_quote")
        assert (tool.source, tool.provider) == ("finance", "bank")


def test_adding_a_held_id_or_unreadable_objects_is_refused_and_changes_nothing(clock):
    encoder = CountingEncoder()

    def send_email(to: str) -> str:  # another object with the id of one the toolbox holds
        """Send a short email."""
        return to

    with Toolbox([get_weather, send_email], encoder=encoder, clock=clock) as box:
        encoder.encoded.clear()
        with pytest.raises(ToolExistsError, match="'send_email'") as refused:
            box.add_tools([translate, send_email])
        assert refused.value.tool_ids == ["send_email"]
        with pytest.raises(CatalogError, match="item 1: cannot read an object of type int"):
            box.add_tools([translate, 3])
        with pytest.raises(CatalogError, match="'translate'"):
            box.add_tools([translate, translate])  # the same id twice
        with pytest.raises(CatalogError, match="no tool objects given"):
            box.add_tools([])
        assert encoder.encoded == []
        assert box.ids == ["get_weather", "send_email"] and "translate" not in box
        assert indexed(box) == {"get_weather", "send_email"}
        assert box.obj("send_email") is send_email


def test_a_failed_add_leaves_the_toolbox_as_it_was(clock, monkeypatch):
    with Toolbox([get_weather, send_email], encoder=HashEncoder(64), clock=clock) as box:

        def refused(*args, **kwargs):
            raise ConfigError("the store refused the change")

        for method in ("add_tools", "sync_tools"):  # new tools are added, others synced (test_toolbox_add)
            monkeypatch.setattr(box.retriever, method, refused)
        with pytest.raises(ConfigError, match="the store refused"):
            box.add_tools([translate])
        assert box.ids == ["get_weather", "send_email"] and "translate" not in box
        with pytest.raises(UnknownToolError):
            box.run("translate", {"text": "x", "to": "en"})
        assert ranked(box, "translate text") == ranked(box, "translate text")  # selects as before
        assert set(ranked(box, "translate text")) == {"get_weather", "send_email"}


def test_a_tool_being_added_is_selected_and_run_once_indexed(clock, monkeypatch):
    """Between the index taking the new tools and ``add_tools`` returning, a select that finds one has its
    object (and does not take it for another process's tool, which would make it filter every search)."""
    with Toolbox([get_weather, send_email], encoder=HashEncoder(64), clock=clock) as box:
        seen, filters = [], []
        retrieve = box.retriever.retrieve

        def spy_retrieve(query, k=5, *, where=None):
            filters.append(where)
            return retrieve(query, k, where=where)

        def indexed_then_select(method):
            index = getattr(box.retriever, method)

            def spy(tools, **options):
                report = index(tools, **options)
                [best] = box.select("translate text into another language", k=1)
                seen.append((method, best.id, best.obj, best.run({"text": "hei", "to": "en"})))
                return report

            return spy

        monkeypatch.setattr(box.retriever, "retrieve", spy_retrieve)
        for method in ("add_tools", "sync_tools"):
            monkeypatch.setattr(box.retriever, method, indexed_then_select(method))
        box.add_tools([translate])
        assert seen == [("add_tools", "translate", translate, "hei (en)")]  # a new tool: added, not synced
        assert filters == [None]  # searched as before: no filter limiting it to the toolbox's own tools
        assert ranked(box, "translate text", k=1) == ["translate"] and filters[-1] is None


def test_adding_a_tool_left_in_the_index_keeps_what_it_learned(tmp_path, clock):
    db = tmp_path / "tools.db"
    with Toolbox([get_weather, daily_forecast], db, encoder=HashEncoder(64), clock=clock) as first:
        for _ in range(3):
            with pytest.raises(TimeoutError):
                first.run("daily_forecast", {"city": "Oslo"}, query=QUERY)
    encoder = CountingEncoder()
    with Toolbox([get_weather], db, encoder=encoder, clock=clock) as box:  # daily_forecast stays indexed
        assert ranked(box, QUERY) == ["get_weather"]
        report = box.add_tools([daily_forecast])
        assert (report.added, report.updated, report.unchanged) == ([], [], ["daily_forecast"])
        assert encoder.encoded == []  # as stored: nothing to encode
        assert box.retriever.health("daily_forecast").components["bandit"] < 0.5  # 1.0: never failed
        assert set(ranked(box, QUERY)) == {"get_weather", "daily_forecast"}


def test_added_tools_are_in_the_saved_index_when_it_is_reopened(tmp_path, clock):
    db = tmp_path / "tools.db"
    with Toolbox([get_weather], db, encoder=HashEncoder(64), clock=clock) as box:
        box.add_tools([translate])
        box.run("translate", {"text": "hei", "to": "en"})
    encoder = CountingEncoder()
    with Toolbox([get_weather, translate], db, encoder=encoder, clock=clock) as again:
        assert again.synced is not None and sorted(again.synced.unchanged) == ["get_weather", "translate"]
        assert encoder.encoded == [] and log(again, "translate") == ["success"]


# ------------------------------------------------------------------------------------------- removing
def test_removed_tools_leave_the_toolbox_and_the_index_with_what_they_learned(clock):
    with Toolbox([get_weather, daily_forecast, send_email], encoder=HashEncoder(64), clock=clock) as box:
        for _ in range(3):
            with pytest.raises(TimeoutError):
                box.run("daily_forecast", {"city": "Oslo"}, query=QUERY)
        assert box.retriever.health("daily_forecast").components["bandit"] < 0.5
        assert box.remove_tools("daily_forecast") == ["daily_forecast"]
        assert box.ids == ["get_weather", "send_email"] and "daily_forecast" not in box and len(box) == 2
        assert indexed(box) == {"get_weather", "send_email"}
        assert ranked(box, QUERY) == ["get_weather", "send_email"]
        assert [d["function"]["name"] for d in box.definitions(QUERY, k=5).definitions] == [
            "get_weather",
            "send_email",
        ]
        with pytest.raises(UnknownToolError, match="unknown tool id: 'daily_forecast'") as gone:
            box.run("daily_forecast", {"city": "Oslo"})
        assert not isinstance(gone.value, RemovedToolError)  # removed here: no longer this toolbox's
        with pytest.raises(UnknownToolError):
            box.obj("daily_forecast")
        box.add_tools([daily_forecast])  # added again: it starts afresh, as Retriever.remove_tools leaves it
        assert box.retriever.health("daily_forecast").components["bandit"] == 1.0
        assert box.remove_tools(["get_weather", "send_email", "get_weather"]) == ["get_weather", "send_email"]
        assert box.ids == ["daily_forecast"] and indexed(box) == {"daily_forecast"}


def test_removing_unknown_ids_or_every_tool_is_refused_and_changes_nothing(clock):
    with Toolbox([get_weather, send_email], encoder=HashEncoder(64), clock=clock) as box:
        with pytest.raises(UnknownToolError, match="unknown tool id: 'nope'") as unknown:
            box.remove_tools(["send_email", "nope"])
        assert unknown.value.tool_id == "nope"
        with pytest.raises(UnknownToolError):
            box.remove_tools([3])  # type: ignore[list-item]
        with pytest.raises(ConfigError, match="remove_tools takes a tool id or a list of them"):
            box.remove_tools(3)  # type: ignore[arg-type]
        with pytest.raises(ConfigError, match="cannot remove every tool of this toolbox"):
            box.remove_tools(["send_email", "get_weather"])
        assert box.remove_tools([]) == []
        assert box.ids == ["get_weather", "send_email"] and indexed(box) == {"get_weather", "send_email"}
        assert box.run("send_email", {"to": "a@b.c", "body": "hi"}) == "sent"


def test_a_tool_being_removed_is_never_selected_without_its_object(clock, monkeypatch):
    with Toolbox([get_weather, daily_forecast], encoder=HashEncoder(64), clock=clock) as box:
        remove, seen = box.retriever.remove_tools, []

        def select_around(tool_ids):  # selects just before the index drops the tool, and just after
            seen.append({s.id: s.obj for s in box.select(QUERY, k=5)})
            out = remove(tool_ids)
            seen.append({s.id: s.obj for s in box.select(QUERY, k=5)})
            return out

        monkeypatch.setattr(box.retriever, "remove_tools", select_around)
        box.remove_tools(["daily_forecast"])
        assert seen == [
            {"get_weather": get_weather, "daily_forecast": daily_forecast},
            {"get_weather": get_weather},
        ]
        assert box._only_own is False  # not taken for another process's change: searches stay unfiltered


def test_a_call_of_a_tool_being_removed_here_is_unknown_not_removed_by_another_process(clock, monkeypatch):
    """Between the index dropping a tool and ``remove_tools`` returning, a call that finds it gone is an
    ``UnknownToolError`` (the toolbox is dropping it), not a ``RemovedToolError``, whose advice (call
    remove_tools) would then fail."""

    async def forecast(city: str) -> str:
        """Weather forecast for a city, hour by hour."""
        return city

    with Toolbox([get_weather, daily_forecast, forecast], encoder=HashEncoder(64), clock=clock) as box:
        remove, raised = box.retriever.remove_tools, []

        def run_meanwhile(tool_ids):
            out = remove(tool_ids)
            for call in (
                lambda: box.run("daily_forecast", {"city": "Oslo"}),
                lambda: asyncio.run(box.arun("daily_forecast", {"city": "Oslo"})),
                lambda: asyncio.run(box.arun("forecast", {"city": "Oslo"})),  # awaited on the event loop
            ):
                with pytest.raises(UnknownToolError) as unknown:
                    call()
                raised.append(type(unknown.value))
            return out

        monkeypatch.setattr(box.retriever, "remove_tools", run_meanwhile)
        assert box.remove_tools(["daily_forecast", "forecast"]) == ["daily_forecast", "forecast"]
        assert raised == [UnknownToolError] * 3
        assert CALLS == [] and box.retriever.outcomes(None) == []
        with pytest.raises(UnknownToolError, match="unknown tool id: 'daily_forecast'"):
            box.remove_tools(["daily_forecast"])


def test_a_failed_remove_leaves_the_toolbox_as_it_was(two_boxes, monkeypatch):
    box, other, _ = two_boxes

    def refused(tool_ids):
        raise ConfigError("the store refused the change")

    monkeypatch.setattr(box.retriever, "remove_tools", refused)
    with pytest.raises(ConfigError, match="the store refused"):
        box.remove_tools(["daily_forecast"])
    monkeypatch.undo()
    assert box.ids == ["get_weather", "daily_forecast", "send_email"] and not box._removing
    other.remove_tools(["daily_forecast"])  # removed by another process now: running it says so
    with pytest.raises(RemovedToolError):
        box.run("daily_forecast", {"city": "Oslo"})


def test_a_filter_made_while_tools_are_added_is_not_kept(tmp_path, clock, monkeypatch):
    """In an index shared with other tools, a select limits the search to the toolbox's tools with a filter
    it keeps: one made from the tools as they were before an add_tools finished must not be kept."""
    db = tmp_path / "tools.db"
    Retriever.from_catalog(
        [{"id": "other", "name": "other", "description": "Calendar"}], db, HashEncoder(64)
    ).close()
    with Toolbox([get_weather, send_email], db, encoder=HashEncoder(64), clock=clock) as box:
        assert box._only_own
        allowlist, added = box._allowlist, []

        def add_meanwhile(where):
            made = allowlist(where)  # from the tools before the add
            if not added:
                added.append(box.add_tools([translate]))
            return made

        monkeypatch.setattr(box, "_allowlist", add_meanwhile)
        assert "translate" not in ranked(box, "translate text")  # the select that began before the add
        assert ranked(box, "translate text into another language", k=1) == ["translate"]


def test_threads_select_and_run_while_tools_are_added_and_removed(clock):
    errors: list[BaseException] = []
    objects = {"get_weather": get_weather, "send_email": send_email, "translate": translate}
    with Toolbox([get_weather, send_email], encoder=HashEncoder(64), clock=clock) as box:
        stop = threading.Event()

        def agent() -> None:
            try:
                while not stop.is_set():
                    for selected in box.select("translate text, or the weather in a city", k=3):
                        assert selected.obj is objects[selected.id]
                        if selected.id == "get_weather":
                            selected.run({"city": "Oslo"})
            except BaseException as exc:  # noqa: BLE001 - reported below
                errors.append(exc)

        threads = [threading.Thread(target=agent) for _ in range(3)]
        for thread in threads:
            thread.start()
        try:
            for _ in range(15):
                box.add_tools([translate])
                box.remove_tools(["translate"])
        finally:
            stop.set()
            for thread in threads:
                thread.join()
        assert errors == []
        assert box.ids == ["get_weather", "send_email"] and indexed(box) == {"get_weather", "send_email"}
        assert box._only_own is False
        assert set(log(box, "get_weather")) <= {"success"}


# ------------------------------------------------------------------------ removed by another process
@pytest.fixture
def two_boxes(tmp_path, clock):
    db = tmp_path / "tools.db"
    objects = [get_weather, daily_forecast, send_email]
    first = Toolbox(objects, db, encoder=HashEncoder(64), clock=clock)
    second = Toolbox(objects, db, encoder=HashEncoder(64), clock=clock)
    yield first, second, db
    first.close()
    second.close()


def test_a_tool_another_toolbox_removed_is_not_selected_and_running_it_says_so(two_boxes):
    box, other, db = two_boxes
    [before] = box.select("weather forecast for a city, day by day", k=1)
    assert before.id == "daily_forecast"
    other.remove_tools(["daily_forecast"])
    assert ranked(box, QUERY) == ["get_weather", "send_email"]
    assert ranked(box, QUERY, where={"tools": ["daily_forecast", "get_weather"]}) == ["get_weather"]
    assert ranked(box, QUERY, where={"exclude": ["get_weather"]}) == ["send_email"]
    for call in (
        lambda: box.run("daily_forecast", {"city": "Oslo"}, query=QUERY),
        lambda: before.run({"city": "Oslo"}),
        lambda: asyncio.run(box.arun("daily_forecast", {"city": "Oslo"})),
    ):
        with pytest.raises(RemovedToolError, match="'daily_forecast' was removed from the index") as gone:
            call()
        assert isinstance(gone.value, UnknownToolError) and gone.value.tool_id == "daily_forecast"
        assert str(db) in str(gone.value) and gone.value.db == str(db)
        assert "remove_tools" in str(gone.value)
    assert CALLS == [] and box.retriever.outcomes(None) == []
    with pytest.raises(UnknownToolError) as unknown:  # never this toolbox's: a plain unknown id
        box.run("nope", {})
    assert not isinstance(unknown.value, RemovedToolError)
    assert "daily_forecast" in box  # its object is still held, until the toolbox drops it
    assert box.remove_tools(["daily_forecast"]) == ["daily_forecast"]  # dropped here; the index has none
    assert box.ids == ["get_weather", "send_email"]
    box.add_tools([daily_forecast])  # and indexed again
    assert box.select("weather forecast for a city, day by day", k=1)[0].id == "daily_forecast"
    assert ranked(other, "weather forecast for a city, day by day") == ["get_weather", "send_email"]


def test_a_tool_a_retriever_removed_from_a_shared_index_is_skipped(tmp_path, clock):
    db = tmp_path / "tools.db"
    with Retriever.from_catalog(
        [{"id": "other", "name": "other", "description": "Calendar events"}], db, HashEncoder(64)
    ):
        pass  # an index shared with another tool: the toolbox searches among its own
    with Toolbox([get_weather, daily_forecast], db, encoder=HashEncoder(64), clock=clock) as box:
        assert box._only_own
        assert set(ranked(box, QUERY)) == {"get_weather", "daily_forecast"}
        with Retriever.open(db) as other:
            other.remove_tools(["daily_forecast"])
        assert ranked(box, QUERY) == ["get_weather"]
        assert ranked(box, QUERY, where={"tools": ["daily_forecast"]}) == []
        with pytest.raises(RemovedToolError, match=r"'daily_forecast' was removed from the index \("):
            box.run("daily_forecast", {"city": "Oslo"})


def test_removing_a_tool_another_process_removed_meanwhile_removes_the_rest(two_boxes, monkeypatch):
    box, other, _ = two_boxes
    remove = box.retriever.remove_tools

    def another_process_first(tool_ids):  # the other toolbox removes one between the check and the change
        if "daily_forecast" in indexed(other):
            other.remove_tools(["daily_forecast"])
        return remove(tool_ids)

    monkeypatch.setattr(box.retriever, "remove_tools", another_process_first)
    assert box.remove_tools(["daily_forecast", "send_email"]) == ["daily_forecast", "send_email"]
    assert box.ids == ["get_weather"] and indexed(box) == {"get_weather"}


def test_an_id_added_again_for_another_function_gets_its_arguments_typed_anew(clock):
    def lookup(key: int) -> str:
        """Look a record up by its number."""
        return repr(key)

    with Toolbox([get_weather, lookup], encoder=HashEncoder(64), clock=clock) as box:
        assert box.run("lookup", '{"key": "5"}') == "5"  # "5" as the int its parameter takes

        def lookup(key: str) -> str:  # noqa: F811 - the same name, another function
            """Look a record up by its name."""
            return repr(key)

        box.remove_tools(["lookup"])
        box.add_tools([lookup])
        assert box.run("lookup", '{"key": "5"}') == "'5'"
