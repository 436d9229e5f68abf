"""``Retriever.track`` / ``atrack`` / ``call`` / ``acall`` against a real (in-memory) index: what the outcome
log and the tools' health say after each kind of call, and that an unknown tool never runs."""

from __future__ import annotations

import asyncio
import logging

import httpx
import pydantic
import pytest

from rated import Tool
from rated.encode.testing import HashEncoder
from rated.errors import QueryError, UnknownToolError
from rated.retriever import Retriever

QUERY = "weather forecast for a city"
REQUEST = httpx.Request("GET", "https://weather.invalid/forecast")


@pytest.fixture
def r(clock):
    tools = [
        Tool(id="weather", name="weather_forecast", description="Weather forecast for a city"),
        Tool(id="weather.b", name="forecast", description="Weather forecast for a city, daily"),
        Tool(id="mail", name="send_email", description="Send an email message"),
        Tool(id="search", name="web_search", description="Search the web for pages about a topic"),
    ]
    retriever = Retriever.from_catalog(tools, encoder=HashEncoder(64), clock=clock)
    yield retriever
    retriever.close()


def http_error(status: int, headers: dict | None = None) -> httpx.HTTPStatusError:
    response = httpx.Response(status, headers=headers, request=REQUEST)
    return httpx.HTTPStatusError(f"{status}", request=REQUEST, response=response)


def log(r: Retriever, tool_id: str = "weather") -> list[tuple[str, float | None]]:
    return [(rec.outcome, rec.retry_after) for rec in r.outcomes(tool_id)]


def scores(r: Retriever) -> dict[str, float]:
    return {h.id: h.score for h in r.retrieve(QUERY, k=4)}


def test_success_and_failures_reach_the_log_and_the_counts(r: Retriever) -> None:
    with r.track("weather", query=QUERY):
        pass
    with pytest.raises(httpx.HTTPStatusError), r.track("weather", query=QUERY):
        raise http_error(502)
    with pytest.raises(httpx.ReadTimeout), r.track("weather"):
        raise httpx.ReadTimeout("slow", request=REQUEST)
    with pytest.raises(httpx.HTTPStatusError), r.track("weather"):
        raise http_error(401)
    assert log(r) == [("success", None), ("tool_error", None), ("timeout", None), ("auth_error", None)]
    records = r.outcomes("weather")
    assert records[0].query_hash is not None and records[2].query_hash is None
    stats = r.health("weather").stats
    assert (stats.successes, stats.failures, stats.caller_errors) == (1, 3, 0)


def test_caller_errors_never_demote_the_tool(r: Retriever, clock) -> None:
    before = scores(r)

    class Forecast(pydantic.BaseModel):
        city: str
        days: int

    for _ in range(3):
        with pytest.raises(httpx.HTTPStatusError), r.track("weather", query=QUERY):
            raise http_error(422)
        with pytest.raises(httpx.HTTPStatusError), r.track("weather", query=QUERY):
            raise http_error(404)
        with pytest.raises(pydantic.ValidationError), r.track("weather", query=QUERY):
            Forecast(city="Rome", days="many")
        with pytest.raises(TypeError):
            r.call("weather", lambda city: city, {"town": "Rome"}, query=QUERY)
    clock.t += 1
    assert scores(r) == pytest.approx(before)
    assert r.store.load_states() == {}  # nothing learned
    health = r.health("weather")
    assert health.healthy and health.stats.caller_errors == 12 and health.stats.failures == 0


def test_the_same_failures_reported_as_tool_errors_do_demote(r: Retriever, clock) -> None:
    before = scores(r)
    for _ in range(3):
        with pytest.raises(httpx.HTTPStatusError), r.track("weather", query=QUERY):
            raise http_error(500)
    clock.t += 1
    assert scores(r)["weather"] < before["weather"]


def test_a_429_with_retry_after_blocks_the_tool_that_long_and_no_longer(r: Retriever, clock) -> None:
    before = scores(r)
    with pytest.raises(httpx.HTTPStatusError), r.track("weather", query=QUERY):
        raise http_error(429, {"Retry-After": "30"})
    assert log(r) == [("rate_limited", 30.0)]
    assert not r.health("weather").healthy
    clock.t += 29
    assert not r.health("weather").healthy
    assert scores(r)["weather"] < before["weather"]
    clock.t += 2  # past the 30 seconds
    assert r.health("weather").healthy
    assert scores(r) == pytest.approx(before)  # not held against it


def test_report_status_for_a_client_that_returns_responses(r: Retriever, clock) -> None:
    with r.track("weather", query=QUERY) as call:
        response = httpx.Response(503, headers={"Retry-After": "10"}, request=REQUEST)  # no raise
        call.report_status(response.status_code, response.headers)
    with r.track("mail") as call:
        call.report("caller_error")
    assert log(r) == [("rate_limited", 10.0)] and log(r, "mail") == [("caller_error", None)]
    assert not r.health("weather").healthy
    clock.t += 11
    assert r.health("weather").healthy


def test_an_unknown_tool_or_a_bad_query_fails_before_the_tool_runs(r: Retriever) -> None:
    ran = []
    with pytest.raises(UnknownToolError, match="nope"):
        with r.track("nope"):
            ran.append("track")
    with pytest.raises(UnknownToolError):
        r.call("nope", lambda: ran.append("call"))
    with pytest.raises(QueryError):
        r.call("weather", lambda: ran.append("query"), query="  ")
    with pytest.raises(UnknownToolError):
        r.track(None)  # type: ignore[arg-type]

    async def main() -> None:
        async with r.atrack("nope"):
            ran.append("atrack")

    with pytest.raises(UnknownToolError):
        asyncio.run(main())
    with pytest.raises(UnknownToolError):
        asyncio.run(r.acall("nope", lambda: ran.append("acall")))
    assert ran == [] and r.outcomes() == []


def test_call_runs_the_tool_and_reports(r: Retriever) -> None:
    assert r.call("weather", lambda city, days=1: f"{city}: sun x{days}", {"city": "Rome"}) == "Rome: sun x1"

    def failing(city: str) -> str:
        raise httpx.ConnectTimeout("no answer")

    with pytest.raises(httpx.ConnectTimeout):
        r.call("weather", failing, {"city": "Rome"}, query=QUERY)
    assert log(r) == [("success", None), ("timeout", None)]


def test_the_tool_removed_while_it_ran(r: Retriever, caplog: pytest.LogCaptureFixture) -> None:
    """The report fails (the id is gone): logged, and neither the result nor the tool's error is lost."""
    with caplog.at_level(logging.WARNING, logger="rated.tracking"):
        with r.track("mail") as call:
            r.remove_tools(["mail"])
            result = "sent"
        assert result == "sent" and isinstance(call.report_error, UnknownToolError)
        error = http_error(500)
        with pytest.raises(httpx.HTTPStatusError) as raised, r.track("search") as call:
            r.remove_tools(["search"])
            raise error
    assert raised.value is error and isinstance(call.report_error, UnknownToolError)
    assert any("could not report" in note for note in error.__notes__)
    assert caplog.text.count("could not report the outcome") == 2


def test_async_tracking(r: Retriever, clock) -> None:
    async def forecast(city: str) -> str:
        await asyncio.sleep(0)
        return f"{city}: rain"

    async def main() -> list[str]:
        got = [await r.acall("weather", forecast, {"city": "Oslo"}, query=QUERY)]
        async with r.atrack("weather", query=QUERY) as call:
            got.append(await call.run(forecast, {"city": "Rome"}))
        with pytest.raises(httpx.HTTPStatusError):
            async with r.atrack("weather.b", query=QUERY):
                raise http_error(429, {"Retry-After": "5"})
        with pytest.raises(TypeError):
            await r.acall("weather", forecast, {"town": "Oslo"})
        return got

    assert asyncio.run(main()) == ["Oslo: rain", "Rome: rain"]
    assert log(r) == [("success", None), ("success", None), ("caller_error", None)]
    assert log(r, "weather.b") == [("rate_limited", 5.0)]
    assert not r.health("weather.b").healthy
    clock.t += 6
    assert r.health("weather.b").healthy


def test_async_cancellation_reports_nothing(r: Retriever) -> None:
    async def main() -> None:
        entered = asyncio.Event()

        async def agent() -> None:
            async with r.atrack("weather", query=QUERY):
                entered.set()
                await asyncio.sleep(60)

        task = asyncio.create_task(agent())
        await entered.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    assert r.outcomes() == []


def test_the_catalog_spelling_of_the_id_is_reported(r: Retriever) -> None:
    nfc, nfd = "caf\u00e9", "cafe\u0301"  # the same id in both Unicode normal forms, as feedback takes it
    r.add_tools([Tool(id=nfc, name="order_coffee", description="Order a coffee")])
    with r.track(nfd) as call:
        pass
    assert call.tool_id == nfc and [rec.tool_id for rec in r.outcomes()] == [nfc]


def test_nested_calls_log_a_failure_once_against_the_tool_that_failed(r: Retriever) -> None:
    """A tool that runs another (or a step around tool calls): the failure passing through it is the inner
    tool's; the outer tool keeps its health."""

    def forecast() -> None:
        raise http_error(503)

    with pytest.raises(httpx.HTTPStatusError), r.track("search", query=QUERY) as outer:
        r.call("weather", forecast, query=QUERY)
    assert log(r, "weather") == [("tool_error", None)]
    assert log(r, "search") == [] and outer.failed_inside == "weather"
    assert r.health("search").healthy and r.health("search").stats is None
