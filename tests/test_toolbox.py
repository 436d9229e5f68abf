"""``rated.toolbox.Toolbox`` over plain Python functions: selection with the live objects, calls whose
outcomes land in the outcome log and the policy, JSON arguments, async calls, definitions for a model API,
and an index saved in ``db`` that is reopened and synced to the objects (only changes encoded, what was
learned kept, tools no object is never selected)."""

from __future__ import annotations

import asyncio
import dataclasses
import datetime
import enum
import functools
import json
import threading
import typing

import httpx
import pytest
from pydantic import BaseModel

from counting_encoder import CountingEncoder
from rated import Tool
from rated.catalog.text import tool_text
from rated.encode.testing import HashEncoder
from rated.errors import CatalogError, ConfigError, UnknownToolError
from rated.retriever import Retriever
from rated.toolbox import Selected, Toolbox

QUERY = "weather forecast for a city"
CALLS: list[tuple[str, dict]] = []


def get_weather(city: str, days: int = 1) -> str:
    """Weather forecast for a city."""
    CALLS.append(("get_weather", {"city": city, "days": days}))
    return f"sunny in {city} for {days} day(s)"


def daily_forecast(city: str) -> str:
    """Weather forecast for a city, day by day."""
    CALLS.append(("daily_forecast", {"city": city}))
    raise TimeoutError("the forecast service did not answer")


def send_email(to: str, body: str) -> str:
    """Send an email message."""
    CALLS.append(("send_email", {"to": to}))
    request = httpx.Request("POST", "https://mail.invalid/send")
    response = httpx.Response(429, headers={"Retry-After": "30"}, request=request)
    raise httpx.HTTPStatusError("429", request=request, response=response)


async def web_search(query: str) -> list[str]:
    """Search the web for pages about a topic."""
    CALLS.append(("web_search", {"query": query}))
    await asyncio.sleep(0)
    return [query]


MCP_LIKE = {"name": "create_issue", "description": "Create an issue", "inputSchema": {"type": "object"}}
OBJECTS = [get_weather, daily_forecast, send_email, web_search, MCP_LIKE]


@pytest.fixture(autouse=True)
def _no_calls_yet():
    CALLS.clear()


@pytest.fixture
def box(clock):
    toolbox = Toolbox(OBJECTS, encoder=HashEncoder(64), clock=clock)
    yield toolbox
    toolbox.close()


def log(box: Toolbox, tool_id: str) -> list[tuple[str, float | None]]:
    return [(o.outcome, o.retry_after) for o in box.retriever.outcomes(tool_id)]


# ---------------------------------------------------------------------------------------- selection
def test_select_gives_hits_with_their_live_objects(box):
    selected = box.select(QUERY, k=2)
    assert all(isinstance(s, Selected) for s in selected)
    assert {s.id for s in selected} == {"get_weather", "daily_forecast"}
    assert all(
        s.obj is {"get_weather": get_weather, "daily_forecast": daily_forecast}[s.id] for s in selected
    )
    assert [s.hit.rank for s in selected] == [1, 2]
    assert box.ids == ["get_weather", "daily_forecast", "send_email", "web_search", "create_issue"]
    assert box.obj("send_email") is send_email and "web_search" in box and len(box) == 5


# -------------------------------------------------------------------------------------------- calls
def test_run_reports_success_and_returns_the_result(box):
    assert box.run("get_weather", {"city": "Oslo", "days": 2}, query=QUERY) == "sunny in Oslo for 2 day(s)"
    assert CALLS == [("get_weather", {"city": "Oslo", "days": 2})]
    assert log(box, "get_weather") == [("success", None)]
    assert box.retriever.outcomes("get_weather")[0].query_hash is not None


def test_exceptions_are_classified_reported_and_raised(box):
    with pytest.raises(TimeoutError):
        box.run("daily_forecast", {"city": "Oslo"})
    with pytest.raises(httpx.HTTPStatusError):
        box.run("send_email", {"to": "a@b.c", "body": "hi"})
    assert log(box, "daily_forecast") == [("timeout", None)]
    assert log(box, "send_email") == [("rate_limited", 30.0)]
    assert not box.retriever.health("send_email").healthy  # the retry-after holds it back


def test_failures_move_the_policy(box):
    def score() -> float:
        return {s.id: s.hit.score for s in box.select(QUERY, k=2)}["daily_forecast"]

    before = score()
    for _ in range(5):
        with pytest.raises(TimeoutError):
            box.run("daily_forecast", {"city": "Oslo"}, query=QUERY)
    assert score() < before
    assert box.select(QUERY, k=1)[0].id == "get_weather"


@pytest.mark.parametrize(
    "arguments",
    [{"town": "Oslo"}, {}, {"city": "Oslo", "extra": 1}, '{"town": "Oslo"}'],
    ids=["wrong-name", "missing", "unknown-extra", "json-wrong-name"],
)
def test_arguments_that_do_not_fit_are_a_caller_error_and_the_tool_never_runs(box, arguments):
    with pytest.raises(TypeError, match="arguments for tool 'get_weather' do not fit get_weather"):
        box.run("get_weather", arguments, query=QUERY)
    assert CALLS == []
    assert log(box, "get_weather") == [("caller_error", None)]
    assert box.retriever.health("get_weather").healthy


@pytest.mark.parametrize(
    ("arguments", "error", "message"),
    [
        ('{"city": "Oslo"', ValueError, "are not valid JSON"),
        ("[1, 2]", TypeError, "must be an object of named arguments, got \\[1, 2\\]"),
        (["Oslo"], TypeError, "must be an object of named arguments"),
    ],
)
def test_arguments_that_are_no_object_are_a_caller_error(box, arguments, error, message):
    with pytest.raises(error, match=message):
        box.run("get_weather", arguments)
    assert CALLS == []
    assert log(box, "get_weather") == [("caller_error", None)]


def test_json_arguments_from_a_model_and_none_for_no_arguments(box):
    assert box.run("get_weather", json.dumps({"city": "Bergen"})) == "sunny in Bergen for 1 day(s)"
    assert box.run("get_weather", b'{"city": "Oslo"}') == "sunny in Oslo for 1 day(s)"
    assert log(box, "get_weather") == [("success", None), ("success", None)]

    def ping() -> str:
        """Check the service answers."""
        return "pong"

    with Toolbox([ping], encoder=HashEncoder(64)) as other:
        assert other.run("ping") == "pong"
        assert [o.outcome for o in other.retriever.outcomes("ping")] == ["success"]


class Priority(enum.Enum):
    LOW = "low"
    HIGH = "high"


@dataclasses.dataclass
class Slot:
    start: datetime.datetime
    minutes: int = 30


class Person(BaseModel):
    name: str
    email: str


def book_meeting(
    slot: Slot, attendees: list[Person], priority: Priority = Priority.LOW, day: datetime.date | None = None
) -> str:
    """Book a meeting."""
    CALLS.append(("book_meeting", {}))
    names = [a.name for a in attendees]
    return f"{slot.start:%H:%M} for {slot.minutes} min with {names}, {priority.value}, {day}"


def test_json_arguments_reach_the_function_as_its_parameters_types(clock):
    arguments = {
        "slot": {"start": "2026-12-01T09:30:00"},
        "attendees": [{"name": "Ada", "email": "ada@example.com"}],
        "priority": "high",
        "day": "2026-12-01",
    }
    with Toolbox([book_meeting], encoder=HashEncoder(64), clock=clock) as box:
        expected = "09:30 for 30 min with ['Ada'], high, 2026-12-01"
        assert box.run("book_meeting", json.dumps(arguments)) == expected
        native = {"slot": Slot(datetime.datetime(2026, 12, 1, 9, 30)), "attendees": []}  # objects: as given
        assert box.run("book_meeting", native) == "09:30 for 30 min with [], low, None"
        assert log(box, "book_meeting") == [("success", None), ("success", None)]


@pytest.mark.parametrize(
    "arguments",
    [
        {"slot": {"start": "soon"}, "attendees": []},
        {"slot": {"start": "2026-12-01T09:30:00"}, "attendees": [], "priority": "urgent"},
        {"slot": {"start": "2026-12-01T09:30:00"}, "attendees": [{"name": "Ada"}]},
    ],
    ids=["not-a-datetime", "not-an-enum-value", "model-field-missing"],
)
def test_values_that_do_not_fit_their_types_are_a_caller_error_and_the_tool_never_runs(clock, arguments):
    with Toolbox([book_meeting], encoder=HashEncoder(64), clock=clock) as box:
        with pytest.raises(
            ValueError, match="arguments for tool 'book_meeting' do not fit its parameters"
        ) as exc:
            box.run("book_meeting", arguments)
        message = str(exc.value)  # one line a model can read back: field and reason, no pydantic layout
        assert "\n" not in message and "http" not in message
        field = message.split("do not fit its parameters: ", 1)[1].split(": ", 1)[0]
        assert field in {"slot.start", "priority", "attendees.0.email"}
        assert CALLS == []
        assert log(box, "book_meeting") == [("caller_error", None)]
        assert box.retriever.health("book_meeting").healthy


class Attendee(typing.TypedDict):  # typing's, which pydantic refuses before Python 3.12
    name: str
    joined: typing.NotRequired[datetime.date]


def invite(attendees: list[Attendee]) -> str:
    """Invite people to a meeting."""
    CALLS.append(("invite", {}))
    return ", ".join(f"{a['name']} {a.get('joined')!r}" for a in attendees)


def test_typing_typeddict_parameters_are_indexed_and_get_their_arguments_converted(clock):
    with Toolbox([invite], encoder=HashEncoder(64), clock=clock) as box:
        schema = box.retriever.tool("invite").parameters
        assert schema["$defs"]["Attendee"]["required"] == ["name"]
        arguments = '{"attendees": [{"name": "Ada", "joined": "2026-12-01"}, {"name": "Bo"}]}'
        assert box.run("invite", arguments) == "Ada datetime.date(2026, 12, 1), Bo None"
        with pytest.raises(ValueError, match="arguments for tool 'invite' do not fit its parameters"):
            box.run("invite", {"attendees": [{"joined": "2026-12-01"}]})
        assert log(box, "invite") == [("success", None), ("caller_error", None)]


def traced(fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):  # a plain function returning fn's coroutine
        return fn(*args, **kwargs)

    return wrapper


def blocking(fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):  # a plain function running fn's coroutine to its end
        return asyncio.run(fn(*args, **kwargs))

    return wrapper


@traced
async def fetch_quote(symbol: str) -> float:
    """Latest price of a stock."""
    CALLS.append(("fetch_quote", {"symbol": symbol}))
    return 42.0


@blocking
async def fetch_rate(currency: str) -> float:
    """Latest exchange rate of a currency."""
    CALLS.append(("fetch_rate", {"currency": currency}))
    return 1.5


def test_functions_wrapping_a_coroutine_function_are_called_by_arun(clock):
    with Toolbox([fetch_quote, fetch_rate], encoder=HashEncoder(64), clock=clock) as box:
        with pytest.raises(ConfigError, match="returned a coroutine"):  # nothing of it ran
            box.run("fetch_quote", {"symbol": "ACME"})
        assert CALLS == [] and box.retriever.outcomes(None) == []
        assert box.run("fetch_rate", {"currency": "NOK"}) == 1.5

        async def main():
            return await box.arun("fetch_quote", {"symbol": "ACME"}), await box.arun(
                "fetch_rate", {"currency": "EUR"}
            )

        assert asyncio.run(main()) == (42.0, 1.5)
        with pytest.raises(TypeError, match="do not fit"):
            asyncio.run(box.arun("fetch_quote", {"ticker": "ACME"}))
        assert log(box, "fetch_quote") == [("success", None), ("caller_error", None)]
        assert log(box, "fetch_rate") == [("success", None), ("success", None)]


def test_empty_argument_text_is_no_arguments(clock):
    def ping() -> str:
        """Check the service answers."""
        return "pong"

    with Toolbox([ping], encoder=HashEncoder(64), clock=clock) as box:
        assert box.run("ping", "") == "pong"  # what some APIs send for a function without parameters
        assert box.run("ping", b" ") == "pong"
        assert [o.outcome for o in box.retriever.outcomes("ping")] == ["success", "success"]


def test_threads_calling_one_toolbox_report_each_call_once(clock):
    def flaky(n: int) -> int:
        """Fail on odd numbers."""
        if n % 2:
            raise TimeoutError(n)
        return n

    with Toolbox([flaky, get_weather], encoder=HashEncoder(64), clock=clock) as box:

        def work(start: int) -> None:
            for n in range(start, start + 20):
                try:
                    box.run("flaky", {"n": n}, query=QUERY)
                except TimeoutError:
                    pass
                box.select(QUERY, k=1)

        threads = [threading.Thread(target=work, args=(i * 20,)) for i in range(6)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        stats = box.retriever.health("flaky").stats
        assert (stats.successes, stats.failures) == (60, 60)


def test_unknown_ids_and_tools_without_a_callable_fail_before_anything_runs(box):
    with pytest.raises(UnknownToolError, match="unknown tool id: 'nope'"):
        box.run("nope", {})
    with pytest.raises(UnknownToolError):
        box.run(["get_weather"], {})  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="'create_issue' is a tool definition, not a callable"):
        box.run("create_issue", {"title": "x"})
    with pytest.raises(ConfigError, match="'web_search' is a coroutine function: use Toolbox.arun"):
        box.run("web_search", {"query": "x"})
    assert CALLS == [] and box.retriever.outcomes(None) == []
    with pytest.raises(UnknownToolError):
        box.obj("nope")


def test_selected_run_reports_for_the_query_it_was_selected_for(box):
    [best] = box.select("send an email message", k=1)
    assert best.id == "send_email"
    with pytest.raises(httpx.HTTPStatusError):
        best.run({"to": "a@b.c", "body": "hi"})
    [record] = box.retriever.outcomes("send_email")
    assert (record.outcome, record.query_hash is not None) == ("rate_limited", True)


def test_arun_awaits_coroutines_and_runs_functions_in_a_worker_thread(box):
    threads: list[str] = []

    def where(city: str) -> str:
        threads.append(threading.current_thread().name)
        return city

    async def main():
        found = await box.arun("web_search", {"query": "rated"}, query="search the web")
        with pytest.raises(TimeoutError):
            await box.arun("daily_forecast", '{"city": "Oslo"}')
        with pytest.raises(TypeError, match="do not fit"):
            await box.arun("web_search", {"q": "rated"})
        [selected] = await box.aselect("search the web for pages", k=1)
        return found, selected, await selected.arun({"query": "again"})

    found, selected, again = asyncio.run(main())
    assert (found, selected.id, again) == (["rated"], "web_search", ["again"])
    assert log(box, "web_search") == [("success", None), ("caller_error", None), ("success", None)]
    assert log(box, "daily_forecast") == [("timeout", None)]

    other = Toolbox([where], encoder=HashEncoder(64))
    assert asyncio.run(other.arun("where", {"city": "Oslo"})) == "Oslo"
    assert threads and threads[0] != threading.main_thread().name
    other.close()


def test_definitions_map_the_called_name_back_to_the_tool(box):
    defs = box.definitions("send an email message", k=2, format="anthropic")
    assert defs.format == "anthropic" and len(defs) == 2
    [mail] = [d for d in defs.definitions if d["name"] == "send_email"]
    assert mail["input_schema"]["required"] == ["to", "body"]
    assert defs.tool_id("send_email") == "send_email"
    openai = box.definitions(QUERY, k=1)
    assert openai.definitions[0]["function"]["parameters"]["properties"]["days"] == {
        "type": "integer",
        "default": 1,
    }


# ------------------------------------------------------------------------------------- persistence
def test_a_saved_toolbox_reopens_with_what_it_learned_and_encodes_nothing(tmp_path, clock):
    db = tmp_path / "tools.db"
    with Toolbox(OBJECTS, db, encoder=HashEncoder(64), clock=clock) as first:
        assert first.synced is None  # built anew
        for _ in range(3):
            with pytest.raises(TimeoutError):
                first.run("daily_forecast", {"city": "Oslo"}, query=QUERY)
        first.run("get_weather", {"city": "Oslo"}, query=QUERY)
        learned = [(h.id, h.score) for h in first.retriever.retrieve(QUERY, k=3)]
    encoder = CountingEncoder()
    with Toolbox(OBJECTS, db, encoder=encoder, clock=clock) as second:
        assert encoder.encoded == []
        assert second.synced is not None and not second.synced.changed
        assert len(second.synced.unchanged) == 5
        assert [(h.id, h.score) for h in second.retriever.retrieve(QUERY, k=3)] == learned
        assert [o.outcome for o in second.retriever.outcomes(None)] == ["timeout"] * 3 + ["success"]
        assert second.retriever.health("daily_forecast").components["bandit"] < 0.5  # 1.0: never failed


def test_reopening_syncs_the_index_to_the_objects(tmp_path, clock):
    db = tmp_path / "tools.db"
    with Toolbox(OBJECTS, db, encoder=HashEncoder(64), clock=clock) as first:
        for _ in range(3):
            with pytest.raises(TimeoutError):
                first.run("daily_forecast", {"city": "Oslo"}, query=QUERY)

    def daily_forecast(city: str, hourly: bool = False) -> str:  # the same tool, changed
        """Weather forecast for a city, day by day or hour by hour."""
        return city

    def translate(text: str, to: str) -> str:
        """Translate text into another language."""
        return text

    encoder = CountingEncoder()
    with Toolbox([get_weather, daily_forecast, translate], db, encoder=encoder, clock=clock) as second:
        report = second.synced
        assert (report.added, report.updated, report.removed) == (["translate"], ["daily_forecast"], [])
        texts = {name: tool_text(second.retriever.tool(name)) for name in second.ids}
        encoded = [name for name, text in texts.items() if text in encoder.encoded]
        assert encoded == ["daily_forecast", "translate"]  # only the changed and the new tool
        assert "hour by hour" in second.retriever.tool("daily_forecast").description
        # updated in place, its learned state kept (a tool that never failed has 1.0)
        assert second.retriever.health("daily_forecast").components["bandit"] < 0.5
        assert len(second.retriever) == 6  # send_email, web_search, create_issue stay indexed (prune=False)
        everything = second.select("send an email message, search the web, create an issue", k=5)
        assert {s.id for s in everything} == {"get_weather", "daily_forecast", "translate"}
        assert second.run("translate", {"text": "hei", "to": "en"}) == "hei"
    with Toolbox([get_weather, daily_forecast, translate], db, encoder=encoder, prune=True) as third:
        assert sorted(third.synced.removed) == ["create_issue", "send_email", "web_search"]
        assert len(third.retriever) == 3


def test_tools_another_process_indexes_are_never_selected(tmp_path, clock):
    db = tmp_path / "tools.db"
    with Toolbox([get_weather, send_email], db, encoder=HashEncoder(64), clock=clock) as box:
        assert box.select(QUERY, k=2)[0].id == "get_weather"
        with Retriever.open(db) as other:  # another process adds a tool that matches better
            other.add_tools([Tool(id="forecast", name="forecast", description="Weather forecast for a city")])
            assert other.retrieve(QUERY, k=1)[0].id == "forecast"
        selected = box.select(QUERY, k=3)
        assert [s.id for s in selected] == ["get_weather", "send_email"]
        assert [s.id for s in box.select(QUERY, k=1, where={"exclude": ["send_email"]})] == ["get_weather"]
        with pytest.raises(UnknownToolError):
            box.run("forecast", {})


def test_an_index_holding_other_tools_is_searched_among_this_toolboxs_only(tmp_path, clock, monkeypatch):
    db = tmp_path / "tools.db"
    others = [Tool(id=f"forecast_{i}", name=f"forecast_{i}", description=QUERY) for i in range(30)]
    Retriever.from_catalog(others, db, HashEncoder(64)).close()  # 30 tools that match better, none ours
    with Toolbox([get_weather, send_email, daily_forecast], db, encoder=HashEncoder(64), clock=clock) as box:
        filters = []
        retrieve = box.retriever.retrieve

        def spy(query, k=5, *, where=None):
            filters.append(where)
            return retrieve(query, k, where=where)

        monkeypatch.setattr(box.retriever, "retrieve", spy)
        for _ in range(2):
            assert {s.id for s in box.select(QUERY, k=3)} == {"get_weather", "send_email", "daily_forecast"}
        # one search per select, among the toolbox's tools: one filter object, which the retriever caches
        assert len(filters) == 2 and filters[0] is filters[1]
        assert filters[0].tools == {"get_weather", "send_email", "daily_forecast"}
        selected = box.select(QUERY, k=3, where={"exclude": ["send_email"]})
        assert [s.id for s in selected] == ["get_weather", "daily_forecast"]
        assert (filters[-1].tools, filters[-1].exclude) == (filters[0].tools, {"send_email"})
        with pytest.raises(UnknownToolError, match="filter 'tools': unknown tool id: 'forecast_1'"):
            box.select(QUERY, where={"tools": ["get_weather", "forecast_1"]})  # not one of this toolbox's
        assert [s.id for s in box.select(QUERY, k=3, where={"tools": ["send_email"]})] == ["send_email"]
        with Retriever.open(db) as other:  # another process removes one of this toolbox's tools
            other.remove_tools(["daily_forecast"])
        assert {s.id for s in box.select(QUERY, k=3)} == {"get_weather", "send_email"}


def test_opening_with_other_build_options_is_refused(tmp_path):
    db = tmp_path / "tools.db"
    Toolbox(OBJECTS, db, encoder=HashEncoder(64), candidates=8).close()
    for options in ({"candidates": 9}, {"policy": "global_mab"}, {"max_query_chars": 10}):
        with pytest.raises(ConfigError, match=f"was built with {next(iter(options))}="):
            Toolbox(OBJECTS, db, encoder=HashEncoder(64), **options)
    with pytest.raises(ConfigError, match="was indexed with encoder"):
        Toolbox(OBJECTS, db, encoder=HashEncoder(32))
    Toolbox(OBJECTS, db, encoder=HashEncoder(64), candidates=8, policy="rated").close()  # as built: fine
    with Toolbox(OBJECTS[:2], db, encoder=HashEncoder(64), candidates=9, overwrite=True) as rebuilt:
        assert rebuilt.synced is None and len(rebuilt.retriever) == 2
        assert rebuilt.retriever.meta.candidates == 9


def test_bad_options_and_objects(tmp_path):
    with pytest.raises(ConfigError, match="unknown Toolbox option\\(s\\): colour"):
        Toolbox(OBJECTS, colour="red")
    with pytest.raises(ConfigError, match="prune must be True or False"):
        Toolbox(OBJECTS, prune="yes")
    with pytest.raises(CatalogError, match="item 1: cannot read an object of type int"):
        Toolbox([get_weather, 3], tmp_path / "never.db", encoder=HashEncoder(64))
    assert not (tmp_path / "never.db").exists()  # refused before the store is opened
