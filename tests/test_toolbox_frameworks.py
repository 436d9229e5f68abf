"""``Toolbox`` calling framework tools the way each framework does, with the outcome reported: LangChain for
real (``langchain_core``, skipped when not installed), LlamaIndex and CrewAI through stand-ins copying
their attributes (``framework_standins``), an MCP ``Tool`` (no callable: refused)."""

from __future__ import annotations

import asyncio
from typing import Annotated

import httpx
import pytest
from pydantic import BaseModel, Field

from framework_standins import (
    Context,
    CrewBaseTool,
    FunctionTool,
    ToolFailure,
    ToolFailureReason,
    crew_tool,
    error_output,
)
from rated.encode.testing import HashEncoder
from rated.errors import ConfigError
from rated.toolbox import Toolbox

try:  # at module level: the annotations here are strings, resolved in the module's namespace
    from langchain_core.tools import InjectedToolCallId
except ImportError:  # the LangChain tests skip
    InjectedToolCallId = None

CALLS: list[str] = []


@pytest.fixture(autouse=True)
def _no_calls_yet():
    CALLS.clear()


def log(box: Toolbox, tool_id: str) -> list[str]:
    return [o.outcome for o in box.retriever.outcomes(tool_id)]


def http_error(status: int) -> httpx.HTTPStatusError:
    request = httpx.Request("GET", "https://api.invalid/")
    return httpx.HTTPStatusError(
        str(status), request=request, response=httpx.Response(status, request=request)
    )


# ------------------------------------------------------------------------------------------ LangChain
@pytest.fixture
def langchain_box():
    lc = pytest.importorskip("langchain_core.tools")

    @lc.tool
    def stock_quote(ticker: str) -> float:
        """Latest stock price for a ticker symbol."""
        CALLS.append(ticker)
        if ticker == "DOWN":
            raise http_error(503)
        if ticker == "BAD":
            raise lc.ToolException("unknown ticker")
        return 42.0

    @lc.tool
    async def news_search(topic: str) -> list[str]:
        """Search recent news articles about a topic."""
        CALLS.append(topic)
        return [topic]

    class Inputs(BaseModel):
        city: str = Field(description="the city")
        days: int = Field(default=1, ge=1, le=7)

    class Forecast(lc.BaseTool):
        name: str = "forecast"
        description: str = "Weather forecast for a city"
        args_schema: type[BaseModel] = Inputs

        def _run(self, city: str, days: int = 1) -> str:
            CALLS.append(city)
            return f"{city}: sunny for {days} day(s)"

        async def _arun(self, city: str, days: int = 1) -> str:
            CALLS.append(city)
            return f"{city}: rain for {days} day(s)"

    box = Toolbox([stock_quote, news_search, Forecast()], encoder=HashEncoder(64))
    yield box
    box.close()


def test_langchain_tools_are_invoked_and_reported(langchain_box):
    box = langchain_box
    assert [s.id for s in box.select("weather forecast for a city", k=1)] == ["forecast"]
    assert box.run("forecast", {"city": "Oslo", "days": 2}) == "Oslo: sunny for 2 day(s)"
    assert box.run("stock_quote", '{"ticker": "ACME"}') == 42.0
    with pytest.raises(httpx.HTTPStatusError):
        box.run("stock_quote", {"ticker": "DOWN"})
    with pytest.raises(Exception, match="unknown ticker"):
        box.run("stock_quote", {"ticker": "BAD"})
    assert log(box, "forecast") == ["success"]
    assert log(box, "stock_quote") == ["success", "tool_error", "tool_error"]


def test_langchain_argument_validation_is_a_caller_error(langchain_box):
    box = langchain_box
    for arguments in ({"town": "Oslo"}, {"city": "Oslo", "days": 30}):
        with pytest.raises(Exception, match="validation error"):
            box.run("forecast", arguments)
    assert CALLS == []
    assert log(box, "forecast") == ["caller_error", "caller_error"]
    assert box.retriever.health("forecast").healthy


def test_langchain_async(langchain_box):
    box = langchain_box

    async def main():
        return (
            await box.arun("forecast", {"city": "Oslo"}),
            await box.arun("news_search", {"topic": "rated"}),
            await box.arun("stock_quote", {"ticker": "ACME"}),  # a sync tool: LangChain runs it in a thread
        )

    assert asyncio.run(main()) == ("Oslo: rain for 1 day(s)", ["rated"], 42.0)
    assert (log(box, "forecast"), log(box, "news_search")) == (["success"], ["success"])
    with pytest.raises(
        ConfigError, match="'news_search' is a LangChain tool with only a coroutine: use arun"
    ):
        box.run("news_search", {"topic": "rated"})
    assert log(box, "news_search") == ["success"]


def test_langchain_errors_the_tool_answers_as_text_are_reported():
    lc = pytest.importorskip("langchain_core.tools")

    def _quote(ticker: str) -> str:
        CALLS.append(ticker)
        if ticker == "BAD":
            raise lc.ToolException("unknown ticker")
        if ticker == "LIMIT":
            raise lc.ToolException("try again later") from http_error(429)
        return "1.0"

    quote = lc.StructuredTool.from_function(
        _quote,
        name="quote",
        description="Latest stock price",
        handle_tool_error=True,
        handle_validation_error="check the arguments",
    )
    polite = lc.StructuredTool.from_function(
        _quote, name="polite", description="Stock price, politely", handle_tool_error=lambda e: f"sorry: {e}"
    )
    with Toolbox([quote, polite], encoder=HashEncoder(64)) as box:
        assert box.run("quote", {"ticker": "ACME"}) == "1.0"
        assert box.run("quote", {"ticker": "BAD"}) == "unknown ticker"  # LangChain's text, as invoke gives it
        assert box.run("quote", {"ticker": "LIMIT"}) == "try again later"
        assert box.run("quote", {"symbol": "ACME"}) == "check the arguments"
        assert asyncio.run(box.arun("quote", {"ticker": "BAD"})) == "unknown ticker"
        assert box.run("polite", {"ticker": "BAD"}) == "sorry: unknown ticker"
        assert log(box, "quote") == ["success", "tool_error", "rate_limited", "caller_error", "tool_error"]
        assert log(box, "polite") == ["tool_error"]
    assert CALLS == ["ACME", "BAD", "LIMIT", "BAD", "BAD"]
    assert quote.handle_tool_error is True and quote.handle_validation_error == "check the arguments"
    assert quote.invoke({"ticker": "BAD"}) == "unknown ticker"  # the tool itself is left as it was


def test_langchain_tools_that_check_no_arguments_get_them_checked():
    lc = pytest.importorskip("langchain_core.tools")

    def define(word: str) -> str:
        CALLS.append(word)
        return f"{word}: a word"

    legacy = lc.Tool(name="define", func=define, description="Define a word")  # one string, any name

    class Plain(lc.BaseTool):  # no args_schema: LangChain passes the arguments to _run unchecked
        name: str = "plain"
        description: str = "Plain search"

        def _run(self, query: str, limit: int = 3) -> str:
            CALLS.append(query)
            return query

    by_schema = lc.StructuredTool(
        name="double",
        description="Double a number",
        args_schema={"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]},
        func=lambda n: CALLS.append(str(n)) or 2 * n,
    )
    with Toolbox([legacy, Plain(), by_schema], encoder=HashEncoder(64)) as box:
        assert box.run("define", {"__arg1": "cat"}) == "cat: a word"
        assert box.run("define", {"word": "dog"}) == "dog: a word"
        assert box.run("plain", {"query": "x"}) == "x"
        assert box.run("double", {"n": 2}) == 4
        CALLS.clear()
        for tool_id, arguments in [
            ("define", {}),
            ("define", {"word": "cat", "lang": "en"}),
            ("plain", {"query": "x", "page": 2}),
            ("plain", {"limit": 2}),
            ("double", {"m": 2}),
        ]:
            with pytest.raises(TypeError, match=f"arguments for tool '{tool_id}' do not fit it"):
                box.run(tool_id, arguments)
        assert CALLS == []
        assert log(box, "define") == ["success", "success", "caller_error", "caller_error"]
        assert log(box, "plain") == ["success", "caller_error", "caller_error"]
        assert log(box, "double") == ["success", "caller_error"]


def test_a_langchain_tool_that_needs_the_model_s_tool_call_id_is_refused():
    lc = pytest.importorskip("langchain_core.tools")

    @lc.tool
    def answer(text: str, tool_call_id: Annotated[str, InjectedToolCallId]) -> str:
        """Answer the user."""
        CALLS.append(text)
        return text

    with Toolbox([answer], encoder=HashEncoder(64)) as box:
        with pytest.raises(ConfigError, match="'answer' takes the model's tool call id"):
            box.run("answer", {"text": "hi"})
        with pytest.raises(ConfigError, match="'answer' takes the model's tool call id"):
            asyncio.run(box.arun("answer", {"text": "hi"}))
        assert CALLS == [] and box.retriever.outcomes(None) == []


# ----------------------------------------------------------------------------------------- LlamaIndex
def multiply(a: int, b: int = 2) -> int:
    """Multiply two integers."""
    CALLS.append("multiply")
    return a * b


def fetch_page(url: str):
    """Fetch a web page."""
    CALLS.append(url)
    if url == "reported":  # what LlamaIndex's call_tool makes of a tool that raised
        return error_output("fetch_page", http_error(429))
    raise TimeoutError("slow server")


@pytest.fixture
def llama_box():
    box = Toolbox(
        [FunctionTool.from_defaults(multiply), FunctionTool.from_defaults(fetch_page)],
        encoder=HashEncoder(64),
    )
    yield box
    box.close()


def test_llamaindex_tools_are_called_and_reported(llama_box):
    box = llama_box
    output = box.run("multiply", {"a": 3, "b": 4})
    assert output.raw_output == 12 and output.is_error is False
    with pytest.raises(TimeoutError):
        box.run("fetch_page", {"url": "https://example.com"})
    assert box.run("fetch_page", {"url": "reported"}).is_error
    assert log(box, "multiply") == ["success"]
    assert log(box, "fetch_page") == ["timeout", "rate_limited"]  # the error output's exception, classified


def test_llamaindex_arguments_are_checked_before_the_call(llama_box):
    box = llama_box
    for arguments in ({"b": 4}, {"a": "three"}):
        with pytest.raises(Exception, match="validation error"):
            box.run("multiply", arguments)
    assert CALLS == []  # FunctionTool.call would have called multiply() and failed inside it
    assert log(box, "multiply") == ["caller_error", "caller_error"]


def test_llamaindex_unknown_arguments_are_a_caller_error(llama_box):
    with pytest.raises(TypeError, match="arguments for tool 'multiply' do not fit it: unexpected 'c'"):
        llama_box.run("multiply", {"a": 3, "c": 1})  # fn_schema ignores c: multiply() would raise inside
    assert CALLS == []
    assert log(llama_box, "multiply") == ["caller_error"]


def test_llamaindex_partial_params_and_context():
    def search(query: str, api_key: str) -> str:
        """Search with an API key."""
        CALLS.append(api_key)
        return query

    def remember(fact: str, ctx: Context) -> str:
        """Remember a fact in the workflow's context."""
        return fact

    with Toolbox(
        [
            FunctionTool.from_defaults(search, partial_params={"api_key": "secret"}),
            FunctionTool.from_defaults(remember),
        ],
        encoder=HashEncoder(64),
    ) as box:
        assert list(box.retriever.tool("search").parameters["properties"]) == ["query"]
        assert box.run("search", {"query": "rated"}).raw_output == "rated"
        assert CALLS == ["secret"] and log(box, "search") == ["success"]
        with pytest.raises(
            ConfigError, match="'remember' is a LlamaIndex tool that takes a workflow Context"
        ):
            box.run("remember", {"fact": "x"})
        assert log(box, "remember") == []


def test_llamaindex_async(llama_box):
    assert asyncio.run(llama_box.arun("multiply", {"a": 5})).raw_output == 10
    assert log(llama_box, "multiply") == ["success"]


# --------------------------------------------------------------------------------------------- CrewAI
class Query(BaseModel):
    query: str = Field(description="the search query")


class SerperSearch(CrewBaseTool):
    name: str = "serper_search"
    description: str = "Search the internet with Serper"
    args_schema: type[BaseModel] = Query

    def _run(self, query: str):
        CALLS.append(query)
        if query == "limit":
            return ToolFailure(message="spent", reason=ToolFailureReason.USAGE_LIMIT)
        if query == "broken":
            return ToolFailure(message="the API answered an error")
        if query == "raise":
            raise http_error(401)
        return [query]


@pytest.fixture
def crew_box():
    box = Toolbox([SerperSearch()], encoder=HashEncoder(64))
    yield box
    box.close()


def test_crewai_tools_are_run_and_reported(crew_box):
    box = crew_box
    assert box.run("serper_search", {"query": "rated"}) == ["rated"]
    assert box.run("serper_search", {"query": "broken"}).reason == "tool_reported"
    assert box.run("serper_search", {"query": "limit"}).reason == "usage_limit"
    with pytest.raises(httpx.HTTPStatusError):
        box.run("serper_search", {"query": "raise"})
    with pytest.raises(ValueError, match="arguments validation failed"):
        box.run("serper_search", {"q": "rated"})  # CrewAI's ValueError, raised from pydantic's
    assert CALLS == ["rated", "broken", "limit", "raise"]
    assert log(box, "serper_search") == [
        "success",
        "tool_error",
        "caller_error",
        "auth_error",
        "caller_error",
    ]


class Ping(CrewBaseTool):  # no args_schema: CrewAI makes it from _run, which takes no arguments
    name: str = "ping"
    description: str = "Check the service answers"

    def _run(self) -> str:
        CALLS.append("ping")
        return "pong"


class Notify(CrewBaseTool):  # takes any arguments: the schema has no fields, _run takes **kwargs
    name: str = "notify"
    description: str = "Send a notification"

    def _run(self, **fields: object) -> str:
        CALLS.append("notify")
        return ",".join(sorted(fields))


@crew_tool
def clock_time() -> str:
    """The current time."""
    CALLS.append("clock_time")
    return "12:00"


def test_crewai_arguments_a_tool_without_argument_fields_cannot_take_are_a_caller_error():
    with Toolbox([Ping(), Notify(), clock_time], encoder=HashEncoder(64)) as box:
        assert box.retriever.tool("ping").parameters["properties"] == {}
        for tool_id in ("ping", "clock_time"):
            with pytest.raises(
                TypeError, match=f"arguments for tool '{tool_id}' do not fit it: unexpected 'host'"
            ):
                box.run(tool_id, {"host": "example.com"})
            with pytest.raises(TypeError, match="unexpected 'host'"):
                asyncio.run(box.arun(tool_id, '{"host": "example.com"}'))
        assert CALLS == []  # refused before the tool ran (CrewAI passes them on: _run would raise)
        assert (box.run("ping"), box.run("clock_time", {}), box.run("notify", {"b": 1, "a": 2})) == (
            "pong",
            "12:00",
            "a,b",
        )
        assert log(box, "ping") == ["caller_error", "caller_error", "success"]
        assert log(box, "clock_time") == ["caller_error", "caller_error", "success"]
        assert log(box, "notify") == ["success"]
        assert box.retriever.health("ping").healthy


def test_crewai_async_runs_in_a_worker_thread(crew_box):
    assert asyncio.run(crew_box.arun("serper_search", {"query": "rated"})) == ["rated"]
    assert log(crew_box, "serper_search") == ["success"]


# ------------------------------------------------------------------------------------------------ MCP
def test_an_mcp_tool_is_selected_but_not_called():
    mcp_types = pytest.importorskip("mcp.types")
    issue = mcp_types.Tool(
        name="create_issue", description="Create a GitHub issue", inputSchema={"type": "object"}
    )
    with Toolbox([issue, multiply], encoder=HashEncoder(64)) as box:
        [best] = box.select("create an issue on GitHub", k=1)
        assert (best.id, best.obj) == ("create_issue", issue)
        with pytest.raises(
            ConfigError, match="'create_issue' is an MCP tool, not a callable: call it through"
        ):
            best.run({"title": "x"})
        assert box.retriever.outcomes(None) == []
        with box.retriever.track("create_issue", query="create an issue") as call:  # the documented way
            call.report_status(201)
        assert log(box, "create_issue") == ["success"]
