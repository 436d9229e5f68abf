"""Tracked calls without a store: one report per call, the caller's override, interruptions, a failing
report that never hides the tool's own exception or fails a successful call, and ``run``'s argument check."""

from __future__ import annotations

import asyncio
import functools
import logging
import math

import httpx
import pytest

from rated.errors import ConfigError, StoreError
from rated.outcome import Outcome
from rated.tracking import AsyncTrackedCall, TrackedCall


class Sink:
    """Collects reports, or fails them all when ``error`` is set."""

    def __init__(self, error: Exception | None = None) -> None:
        self.sent: list[tuple[str, Outcome, str | None]] = []
        self.error = error

    def __call__(self, tool_id: str, outcome: Outcome, query: str | None) -> None:
        if self.error is not None:
            raise self.error
        self.sent.append((tool_id, outcome, query))

    async def asend(self, tool_id: str, outcome: Outcome, query: str | None) -> None:
        await asyncio.sleep(0)
        self(tool_id, outcome, query)

    @property
    def kinds(self) -> list[str]:
        return [o.kind.value for _, o, _ in self.sent]


def track(sink: Sink, tool_id: str = "weather", query: str | None = "weather in Rome") -> TrackedCall:
    return TrackedCall(tool_id, query, sink)


def test_a_block_that_returns_reports_one_success() -> None:
    sink = Sink()
    with track(sink) as call:
        pass
    assert sink.sent == [("weather", Outcome("success"), "weather in Rome")]
    assert call.outcome == Outcome("success") and call.report_error is None


def test_a_block_that_raises_reports_the_classified_outcome_and_reraises_it() -> None:
    sink = Sink()
    error = httpx.ReadTimeout("slow")
    with pytest.raises(httpx.ReadTimeout) as raised, track(sink):
        raise error
    assert raised.value is error
    assert sink.kinds == ["timeout"]


def test_the_callers_report_wins_over_the_blocks_end() -> None:
    sink = Sink()
    with track(sink) as call:
        call.report("tool_error")
        call.report("caller_error")  # the last one wins
    with pytest.raises(ValueError), track(sink) as call:
        call.report("rate_limited", retry_after=5)
        raise ValueError("after the tool answered: the caller knows better")
    with track(sink) as call:
        call.report(Outcome("rate_limited", 1.0), retry_after=2)
    assert sink.kinds == ["caller_error", "rate_limited", "rate_limited"]
    assert [o.retry_after for _, o, _ in sink.sent] == [None, 5.0, 2.0]


def test_report_status_for_clients_that_return_errors() -> None:
    sink = Sink()
    with track(sink) as call:
        call.report_status(429, {"Retry-After": "30"})
    with track(sink) as call:
        call.report_status(httpx.codes.UNPROCESSABLE_ENTITY)
    assert [o for _, o, _ in sink.sent] == [Outcome("rate_limited", 30.0), Outcome("caller_error")]


def test_a_bad_report_fails_at_once_and_reports_nothing() -> None:
    sink = Sink()
    with pytest.raises(ConfigError, match="unknown outcome"), track(sink) as call:
        call.report("exploded")
    with pytest.raises(ConfigError, match="HTTP status"), track(sink) as call:
        call.report_status(700)
    with pytest.raises(ConfigError, match="retry_after"), track(sink) as call:
        call.report(Outcome("rate_limited"), retry_after=-1)
    assert sink.sent == []  # the developer's mistake says nothing about the tool


@pytest.mark.parametrize("interruption", [KeyboardInterrupt, SystemExit, asyncio.CancelledError])
def test_an_interrupted_block_reports_nothing(interruption: type[BaseException]) -> None:
    sink = Sink()
    with pytest.raises(interruption), track(sink) as call:
        call.report("success")  # even a choice made before: the call did not finish
        raise interruption()
    assert sink.sent == [] and call.outcome is None


def test_a_failing_report_never_fails_a_successful_call(caplog: pytest.LogCaptureFixture) -> None:
    sink = Sink(StoreError("the store is gone"))
    with caplog.at_level(logging.WARNING, logger="rated.tracking"), track(sink) as call:
        result = "sent the email"
    assert result == "sent the email"
    assert isinstance(call.report_error, StoreError) and call.outcome is None
    assert "could not report the outcome of tool 'weather'" in caplog.text
    assert "the store is gone" in caplog.text


def test_a_failing_report_never_replaces_the_tools_exception(caplog: pytest.LogCaptureFixture) -> None:
    sink = Sink(StoreError("the store is gone"))
    error = httpx.ConnectError("refused")
    with caplog.at_level(logging.WARNING, logger="rated.tracking"):
        with pytest.raises(httpx.ConnectError) as raised, track(sink) as call:
            raise error
    assert raised.value is error  # the same exception, its type and message unchanged
    assert any("the store is gone" in note for note in error.__notes__)
    assert isinstance(call.report_error, StoreError)
    assert "the store is gone" in caplog.text


def test_a_tracked_call_reports_once() -> None:
    sink = Sink()
    call = track(sink)
    with call:
        pass
    with pytest.raises(ConfigError, match="reports once"), call:
        pass
    assert sink.kinds == ["success"]


# ---- run: the arguments checked against the signature ---------------------------------------------------
def test_run_returns_the_tools_result() -> None:
    sink = Sink()
    with track(sink) as call:
        assert call.run(lambda city, days=1: f"{city} x{days}", {"city": "Rome", "days": 2}) == "Rome x2"
        assert call.run(lambda: 42) == 42
    assert sink.kinds == ["success"]


def decorated(fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        wrapper.entered = True
        return fn(*args, **kwargs)

    wrapper.entered = False
    return wrapper


@pytest.mark.parametrize(
    "arguments",
    [
        {"town": "Rome"},  # unknown name
        {},  # missing one
        {"city": "Rome", "days": 1, "hours": 3},
        ["Rome"],  # an agent sent a list, not an object
        {1: "Rome"},
    ],
)
def test_arguments_that_do_not_fit_are_the_callers_error_and_the_tool_never_runs(arguments) -> None:
    sink = Sink()
    ran = []

    @decorated
    def tool(city: str, days: int = 1) -> str:
        ran.append(city)
        return city

    with pytest.raises(TypeError, match="arguments for tool 'weather' do not fit"), track(sink) as call:
        call.run(tool, arguments)
    assert ran == [] and tool.entered is False
    assert sink.kinds == ["caller_error"]


def test_a_type_error_inside_the_tool_is_the_tools() -> None:
    sink = Sink()

    def tool(city: str) -> str:
        return city + None  # type: ignore[operator]

    with pytest.raises(TypeError, match="concatenate"), track(sink) as call:
        call.run(tool, {"city": "Rome"})
    assert sink.kinds == ["tool_error"]


def test_a_builtin_refusing_an_argument_is_the_callers() -> None:
    sink = Sink()
    with pytest.raises(TypeError), track(sink) as call:
        call.run(math.sqrt, {"x": "four"})  # sqrt's signature binds; the call refuses the type
    assert sink.kinds == ["caller_error"]


def test_a_type_error_of_a_call_written_in_the_block() -> None:
    sink = Sink()

    def tool(city: str) -> str:
        return city + None  # type: ignore[operator]

    arguments = {"town": "Rome"}
    with pytest.raises(TypeError), track(sink):
        tool(**arguments)  # did not bind: raised by this very line
    with pytest.raises(TypeError), track(sink):
        tool(city="Rome")  # raised inside the tool
    assert sink.kinds == ["caller_error", "tool_error"]


# ---- asyncio -----------------------------------------------------------------------------------------
def atrack(sink: Sink, checked: list[str] | None = None, fail: Exception | None = None) -> AsyncTrackedCall:
    async def start() -> str:
        if fail is not None:
            raise fail
        if checked is not None:
            checked.append("weather")
        return "weather"

    return AsyncTrackedCall("Weather", "weather in Rome", sink.asend, start)


def test_async_success_failure_and_the_checked_id() -> None:
    sink = Sink()
    checked: list[str] = []

    async def main() -> None:
        async with atrack(sink, checked) as call:
            assert checked == ["weather"] and call.tool_id == "weather"  # checked before the block runs
        with pytest.raises(httpx.HTTPStatusError):
            async with atrack(sink):
                request = httpx.Request("GET", "https://tool.invalid")
                httpx.Response(401, request=request).raise_for_status()

    asyncio.run(main())
    assert sink.sent == [
        ("weather", Outcome("success"), "weather in Rome"),
        ("weather", Outcome("auth_error"), "weather in Rome"),
    ]


def test_async_start_failure_runs_nothing_and_reports_nothing() -> None:
    sink = Sink()
    ran = []

    async def main() -> None:
        async with atrack(sink, fail=LookupError("unknown tool")):
            ran.append(1)

    with pytest.raises(LookupError):
        asyncio.run(main())
    assert ran == [] and sink.sent == []


def test_async_cancellation_reports_nothing() -> None:
    sink = Sink()

    async def main() -> None:
        entered = asyncio.Event()

        async def agent() -> None:
            async with atrack(sink):
                entered.set()
                await asyncio.sleep(60)  # the tool call in flight

        task = asyncio.create_task(agent())
        await entered.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    assert sink.sent == []


def test_async_run_awaits_coroutines_and_checks_arguments() -> None:
    sink = Sink()
    ran = []

    async def tool(city: str) -> str:
        ran.append(city)
        await asyncio.sleep(0)
        return city.upper()

    async def main() -> None:
        async with atrack(sink) as call:
            assert await call.run(tool, {"city": "rome"}) == "ROME"
            assert await call.run(lambda city: city, {"city": "paris"}) == "paris"  # a plain function
        with pytest.raises(TypeError):
            async with atrack(sink) as call:
                await call.run(tool, {"town": "rome"})

    asyncio.run(main())
    assert ran == ["rome"]
    assert sink.kinds == ["success", "caller_error"]


def test_async_failing_report_keeps_the_tools_exception() -> None:
    sink = Sink(StoreError("busy"))
    error = TimeoutError("slow")

    async def main() -> None:
        async with atrack(sink):
            raise error

    with pytest.raises(TimeoutError) as raised:
        asyncio.run(main())
    assert raised.value is error and any("busy" in n for n in error.__notes__)


# ---- calls that would report an outcome for work that never ran -----------------------------------------
async def a_coroutine_tool(city: str) -> str:
    return city


def a_generator_tool(city: str):
    yield city


async def an_async_generator_tool(city: str):
    yield city


def test_run_refuses_a_coroutine_function_and_reports_nothing() -> None:
    """``call`` of an async tool returned the unawaited coroutine and reported a success: the tool never
    ran (and Python warned that the coroutine was never awaited)."""
    sink = Sink()
    for fn in (a_coroutine_tool, functools.partial(a_coroutine_tool), lambda city: a_coroutine_tool(city)):
        with pytest.raises(ConfigError, match="acall"), track(sink) as call:
            call.run(fn, {"city": "rome"})
    assert sink.sent == []


@pytest.mark.parametrize("fn", [a_generator_tool, an_async_generator_tool])
def test_run_refuses_a_generator_function_and_reports_nothing(fn) -> None:
    """A generator function's body runs only when iterated, after the tracked call has ended: its success
    was reported before any of its work, and its failures never."""
    sink = Sink()
    with pytest.raises(ConfigError, match="generator"), track(sink) as call:
        call.run(fn, {"city": "rome"})

    async def main() -> None:
        async with atrack(sink) as acall:
            await acall.run(fn, {"city": "rome"})

    with pytest.raises(ConfigError, match="generator"):
        asyncio.run(main())
    assert sink.sent == []


def test_a_report_after_the_block_is_refused_not_dropped() -> None:
    """``call.report_status`` after the ``with`` block (the response read outside it) changed nothing
    while the block's success had been reported: now it says so."""
    sink = Sink()
    with track(sink) as call:
        pass
    with pytest.raises(ConfigError, match="ended"):
        call.report_status(503)
    with pytest.raises(ConfigError, match="ended"):
        call.report("tool_error")
    assert sink.kinds == ["success"] and call.outcome == Outcome("success")


# ---- nested blocks: a failure counts once, against the innermost tool that saw it


def test_nested_blocks_count_a_failure_against_the_inner_tool_only() -> None:
    """An outer tool that runs another, or a step around tool calls: the exception passing through the
    outer block is the inner tool's failure, reported once; the outer block names the tool it came from."""
    sink = Sink()
    error = httpx.ConnectTimeout("search is down")
    with pytest.raises(httpx.ConnectTimeout) as raised:
        with track(sink, "research") as outer, track(sink, "search", "q") as inner, track(sink, "fetch"):
            raise error
    assert raised.value is error  # the agent still gets the tool's own exception
    assert sink.sent == [("fetch", Outcome("timeout"), "weather in Rome")]
    assert inner.outcome is None and inner.failed_inside == "fetch"
    assert outer.outcome is None and outer.failed_inside == "fetch"


def test_an_inner_failure_rethrown_from_the_outer_code_is_still_the_inner_tools() -> None:
    sink = Sink()
    with pytest.raises(RuntimeError, match="research failed"), track(sink, "research") as outer:
        try:
            with track(sink, "search"):
                raise httpx.ReadTimeout("slow")
        except httpx.ReadTimeout as exc:
            raise RuntimeError("research failed") from exc
    assert sink.sent == [("search", Outcome("timeout"), "weather in Rome")]
    assert outer.failed_inside == "search"


def test_the_outer_tools_own_failures_and_successes_still_count() -> None:
    sink = Sink()
    with pytest.raises(KeyError), track(sink, "research") as outer:  # a bug while handling the inner failure
        try:
            with track(sink, "search"):
                raise httpx.ReadTimeout("slow")
        except httpx.ReadTimeout:
            {}["missing"]
    assert outer.outcome == Outcome("tool_error") and outer.failed_inside is None
    with track(sink, "research") as handled:  # it handled the inner failure: the outer call succeeded
        with pytest.raises(httpx.ReadTimeout), track(sink, "search"):
            raise httpx.ReadTimeout("slow")
    with pytest.raises(httpx.ReadTimeout), track(sink, "research") as said:
        said.report("rate_limited")  # the caller's word for its own tool wins
        with track(sink, "search"):
            raise httpx.ReadTimeout("slow")
    assert handled.outcome == Outcome("success")
    assert said.outcome == Outcome("rate_limited") and said.failed_inside == "search"
    assert sink.kinds == ["timeout", "tool_error", "timeout", "success", "timeout", "rate_limited"]


def anamed(sink: Sink, tool_id: str) -> AsyncTrackedCall:
    async def start() -> str:
        return tool_id

    return AsyncTrackedCall(tool_id, None, sink.asend, start)


def test_nested_async_blocks_and_a_group_of_inner_failures_count_once() -> None:
    sink = Sink()

    async def search(tool_id: str) -> None:
        async with anamed(sink, tool_id):
            raise httpx.ConnectError("refused")

    async def main() -> None:
        with pytest.raises(httpx.ConnectError):
            async with anamed(sink, "research") as outer, anamed(sink, "search"):
                raise httpx.ConnectError("refused")
        assert outer.outcome is None and outer.failed_inside == "search"
        with pytest.raises(ExceptionGroup):
            async with anamed(sink, "fan_out") as fan_out, asyncio.TaskGroup() as group:
                group.create_task(search("a"))
                group.create_task(search("b"))
        assert fan_out.outcome is None and fan_out.failed_inside in ("a", "b")

    asyncio.run(main())
    assert sorted(tool for tool, _, _ in sink.sent) == ["a", "b", "search"]
