"""Tools read from live objects (``rated.catalog.objects``): the JSON schema of a function's signature, its
docstring, each framework's tool shape (LangChain for real when installed, LlamaIndex and CrewAI through
stand-ins copying their attributes, MCP's ``Tool`` for real), dicts through the loaders, and the errors.

No ``from __future__ import annotations`` here: the tools defined inside tests use local classes in their
annotations, which a string annotation could not resolve (tested on its own below)."""

import dataclasses
import datetime
import doctest
import enum
import functools
import json
from typing import Annotated, Any, Literal, Optional

import pytest
from pydantic import BaseModel, Field
from typing_extensions import TypedDict

from framework_standins import CrewBaseTool, FunctionTool, ToolMetadata
from rated.catalog import objects, signature
from rated.catalog.objects import read_objects, tools_from_objects
from rated.catalog.schema import Tool
from rated.errors import CatalogError, ConfigError


class Address(BaseModel):
    street: str
    zip_code: int = 0


def book_flight(
    origin: str,
    destination: str,
    passengers: int = 1,
    seats: list[int] | None = None,
    cabin: Literal["economy", "business"] = "economy",
    note: Optional[str] = None,  # noqa: UP045 - the spelling under test
    *,
    address: Address | None = None,
    budget: Annotated[float, Field(description="most to pay, in EUR", ge=0)] = 500.0,
) -> str:
    """Book a flight between two airports.

    Books the cheapest fare.

    Args:
        origin: IATA code of the departure airport,
            e.g. OSL.
        destination (str): IATA code of the arrival airport.
        budget: overridden by the annotation's own description.

    Returns:
        the booking reference.
    """
    return "ref"


def read(obj: Any, **options: Any) -> Tool:
    [tool] = tools_from_objects([obj], **options)
    return tool


# ---------------------------------------------------------------------------------------- functions
def test_a_function_is_its_name_docstring_prose_and_signature_schema():
    tool = read(book_flight)
    assert (tool.id, tool.name, tool.source) == ("book_flight", "book_flight", "python")
    assert tool.description == "Book a flight between two airports. Books the cheapest fare."
    params = tool.parameters
    assert params["type"] == "object"
    assert params["required"] == ["origin", "destination"]
    props = params["properties"]
    assert list(props) == [
        "origin",
        "destination",
        "passengers",
        "seats",
        "cabin",
        "note",
        "address",
        "budget",
    ]
    assert props["origin"] == {
        "type": "string",
        "description": "IATA code of the departure airport, e.g. OSL.",
    }
    assert props["destination"]["description"] == "IATA code of the arrival airport."
    assert props["passengers"] == {"type": "integer", "default": 1}
    assert props["seats"] == {
        "anyOf": [{"type": "array", "items": {"type": "integer"}}, {"type": "null"}],
        "default": None,
    }
    assert props["cabin"] == {"type": "string", "enum": ["economy", "business"], "default": "economy"}
    assert props["note"]["anyOf"] == [{"type": "string"}, {"type": "null"}]
    assert props["address"]["anyOf"][0] == {"$ref": "#/$defs/Address"}
    assert params["$defs"]["Address"]["required"] == ["street"]
    assert props["budget"] == {
        "type": "number",
        "minimum": 0,
        "default": 500.0,
        "description": "most to pay, in EUR",
    }
    assert "additionalProperties" not in params  # no **kwargs
    assert not any("title" in p for p in props.values())


def test_kwargs_allow_other_names_and_args_positional_only_with_defaults_are_left_out():
    def tool(query: str, /, limit=10, *args: int, flag: bool = False, **options: str) -> None:
        """Search."""

    with pytest.raises(CatalogError) as err:
        read(tool)
    assert "item 0, field 'parameters': tool(): parameter 'query' is positional-only" in str(err.value)

    def tool2(mode: str = "a", /, limit=10, *args: int, flag: bool = False, **options: str) -> None:
        """Search."""

    params = read(tool2).parameters
    assert params["properties"] == {"limit": {"default": 10}, "flag": {"type": "boolean", "default": False}}
    assert params["additionalProperties"] is True
    assert "required" not in params


def test_parameter_names_that_a_pydantic_model_reserves_are_kept():
    def export(json: str, copy: bool, model_config: int = 1, _hidden: str = "") -> None:
        """Export."""

    params = read(export).parameters
    assert list(params["properties"]) == ["json", "copy", "model_config", "_hidden"]
    assert params["required"] == ["json", "copy"]


def test_a_default_json_cannot_hold_is_left_out_of_the_schema():
    sentinel = object()

    def fetch(url: str, retry: object = sentinel) -> None:
        """Fetch."""

    assert "default" not in read(fetch).parameters["properties"]["retry"]


def test_a_type_without_json_schema_names_the_parameter():
    class Client:
        pass

    def fetch(url: str, client: Client) -> None:
        """Fetch."""

    with pytest.raises(CatalogError) as err:
        read(fetch)
    assert "item 0, field 'parameters': fetch(): parameter 'client': its type cannot be written" in str(
        err.value
    )


def test_the_parameter_named_is_the_one_without_json_schema_after_models_and_dataclasses():
    @dataclasses.dataclass
    class Point:
        x: float

    class Client:
        pass

    def fetch(where: Point, address: Address, client: Client) -> None:
        """Fetch."""

    with pytest.raises(CatalogError) as err:
        read(fetch)
    assert "fetch(): parameter 'client': its type cannot be written as JSON schema" in str(err.value)


class Colour(enum.Enum):
    RED = "red"
    GREEN = "green"


@dataclasses.dataclass
class Point:
    x: float
    y: float = 0.0


class Node(BaseModel):
    name: str
    children: list["Node"] = []


class Options(TypedDict, total=False):
    verbose: bool


def plot(
    colour: Colour = Colour.RED,
    at: Point = Point(1.0, 2.0),  # noqa: B008 - a dataclass default, written as JSON
    when: datetime.datetime = datetime.datetime(2024, 1, 1),  # noqa: B008
    day: datetime.date | None = None,
    tree: Node | None = None,
    options: Options | None = None,
    size: int | str = 1,
    pair: tuple[int, str] = (1, "a"),
    tags: frozenset[str] = frozenset(),
    limit: float = float("inf"),
    ratio: float = float("nan"),
    bounds: list[float] = [0.0, float("-inf")],  # noqa: B006
) -> None:
    """Plot a point."""


def test_schemas_are_valid_json_schema_and_strict_json():
    validator = pytest.importorskip("jsonschema").Draft202012Validator
    params = read(plot).parameters
    validator.check_schema(params)
    json.dumps(params, allow_nan=False)  # no Infinity or NaN, which JSON cannot hold
    props = params["properties"]
    assert props["colour"] == {"$ref": "#/$defs/Colour", "default": "red"}
    assert params["$defs"]["Colour"]["enum"] == ["red", "green"]
    assert props["at"]["default"] == {"x": 1.0, "y": 2.0}
    assert props["when"] == {"type": "string", "format": "date-time", "default": "2024-01-01T00:00:00"}
    assert params["$defs"]["Node"]["properties"]["children"]["items"] == {"$ref": "#/$defs/Node"}
    assert props["options"]["anyOf"][0] == {"$ref": "#/$defs/Options"}
    assert props["limit"] == {"type": "number"} and props["ratio"] == {"type": "number"}  # defaults left out
    assert "default" not in props["bounds"]
    assert props["pair"]["default"] == [1, "a"]


def test_a_string_annotation_naming_nothing_names_the_parameter():
    def fetch(url: str, client: "list[Missing]") -> None:  # noqa: F821 - the name under test
        """Fetch."""

    with pytest.raises(CatalogError) as err:
        read(fetch)
    assert (
        "fetch(): parameter 'client': its annotation 'list[Missing]' cannot be resolved "
        "(name 'Missing' is not defined)"
    ) in str(err.value)


def test_methods_partials_callable_objects_and_wrapped_functions():
    class Mailer:
        """Sends mail through one account."""

        def send(self, to: str, body: str = "") -> None:
            """Send an email message."""

        def __call__(self, to: str) -> None:
            pass

    def decorate(fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            return fn(*args, **kwargs)

        return wrapper

    method, instance = read(Mailer().send), read(Mailer())
    assert (method.name, method.description, method.parameters["required"]) == (
        "send",
        "Send an email message.",
        ["to"],
    )
    assert (instance.name, instance.description) == ("Mailer", "Sends mail through one account.")
    assert list(instance.parameters["properties"]) == ["to"]
    bound = read(functools.partial(book_flight, "OSL"))
    assert (bound.name, bound.description[:13]) == ("book_flight", "Book a flight")
    assert bound.parameters["required"] == ["destination"]  # origin is given
    wrapped = read(decorate(book_flight))
    assert wrapped.parameters == read(book_flight).parameters


@pytest.mark.parametrize(
    ("doc", "expected"),
    [
        (
            "Do.\n\nArgs:\n    a (int): first\n        more\n    b: second\n\nReturns:\n    x",
            {"a": "first more", "b": "second"},
        ),
        (
            "Do.\n\nParameters\n----------\na : int\n    first\nb : str\n    second\n\nReturns\n-------\nint",
            {"a": "first", "b": "second"},
        ),
        ("Do.\n\n:param a: first\n:param int b: second\n:returns: x", {"a": "first", "b": "second"}),
        ("Do.\n\nArgs: none here", {}),
    ],
    ids=["google", "numpy", "rest", "not-a-section"],
)
def test_docstring_parameter_descriptions(doc, expected):
    assert signature.param_docs(doc) == expected
    assert signature.docstring_prose(doc) == ("Do. Args: none here" if not expected else "Do.")


def test_lambdas_and_classes_are_refused_with_their_position_and_type():
    class Thing:
        pass

    with pytest.raises(CatalogError) as err:
        tools_from_objects([book_flight, lambda x: x, Thing, 42, Thing()])
    text = str(err.value)
    assert "4 problem(s)" in text
    assert "item 1, field 'name': a <lambda> has no name" in text
    assert (
        "item 2: a class (test_lambdas_and_classes_are_refused_with_their_position_and_type.<locals>.Thing)"
        in text
    )
    assert "item 3: cannot read an object of type int as a tool" in text
    assert "item 4: cannot read an object of type test_catalog_objects." in text
    assert [p.location for p in err.value.problems] == ["item 1", "item 2", "item 3", "item 4"]


def test_duplicate_names_are_one_error_listing_them_with_unreadable_objects():
    def search(q: str) -> None:
        """Search A."""

    other = search

    with pytest.raises(CatalogError) as err:
        tools_from_objects([search, 7, book_flight, other])
    reasons = [str(p) for p in err.value.problems]
    assert reasons == [
        "item 1: cannot read an object of type int as a tool; expected a function or other callable, a "
        "LangChain, LlamaIndex or CrewAI tool, an MCP Tool, a rated Tool or a catalog dict",
        "item 3, field 'id': duplicate id 'search' (first at item 0)",
    ]


def test_not_a_list_empty_and_bad_options():
    with pytest.raises(CatalogError, match="expected a list of tool objects, got a function"):
        tools_from_objects(book_flight)  # type: ignore[arg-type]
    with pytest.raises(CatalogError, match="no tool objects given"):
        tools_from_objects([])
    with pytest.raises(ConfigError, match="source must be a non-empty string"):
        tools_from_objects([book_flight], source=" ")


def test_source_and_provider_options():
    tool = read(book_flight, source="travel", provider="amadeus")
    assert (tool.source, tool.provider) == ("travel", "amadeus")
    record = Tool(id="x.y", name="y", provider="own")
    assert read(record, provider="amadeus").provider == "own"  # a provider named is kept


# --------------------------------------------------------------------------------------------- dicts
def test_dicts_are_read_by_the_loaders_and_named_by_their_name():
    openai = {
        "type": "function",
        "function": {"name": "get_weather", "description": "Weather", "parameters": {}},
    }
    anthropic = {"name": "send_email", "description": "Mail", "input_schema": {"type": "object"}}
    mcp = {"name": "search", "inputSchema": {"type": "object"}, "annotations": {"readOnlyHint": True}}
    record = {"id": "crm.lookup", "name": "lookup", "description": "Find a contact"}
    tools = tools_from_objects([openai, anthropic, mcp, record, Tool(id="t.1", name="one")])
    assert [(t.id, t.source) for t in tools] == [
        ("get_weather", "openai"),
        ("send_email", "anthropic"),
        ("search", "mcp"),
        ("crm.lookup", "custom"),
        ("t.1", "custom"),
    ]
    assert tools[2].extra == {"annotations": {"readOnlyHint": True}}
    assert read(openai, source="weather").source == "weather"


def test_bad_dicts_and_whole_documents_name_their_position():
    with pytest.raises(CatalogError) as err:
        tools_from_objects([book_flight, {"name": ""}, {"tools": []}, {"id": "x", "name": "x", "colour": 1}])
    assert [str(p) for p in err.value.problems] == [
        "item 1, field 'name': missing or empty tool name",
        "item 2: a whole catalog: read it with rated.catalog.load_catalog and pass its tools",
        "item 3, field 'colour': unknown field (put custom data under 'extra')",
    ]


# ------------------------------------------------------------------------------------------------ MCP
def test_mcp_tool_objects():
    mcp_types = pytest.importorskip("mcp.types")
    tool = mcp_types.Tool(
        name="create_issue",
        description="Create a GitHub issue",
        inputSchema={"type": "object", "properties": {"title": {"type": "string"}}, "required": ["title"]},
        annotations=mcp_types.ToolAnnotations(destructiveHint=False),
    )
    [read_] = read_objects([tool], provider="github")
    assert read_.kind == "mcp" and read_.obj is tool
    assert (read_.tool.id, read_.tool.source, read_.tool.provider) == ("create_issue", "mcp", "github")
    assert read_.tool.parameters["required"] == ["title"]
    assert read_.tool.extra == {"annotations": {"destructiveHint": False}}


def test_an_object_shaped_like_an_mcp_tool_without_pydantic():
    class McpTool:  # mcp 1.x attribute names, no model_dump
        name = "list_files"
        description = "List the files of a folder"
        inputSchema = {"type": "object", "properties": {"path": {"type": "string"}}}

    [read_] = read_objects([McpTool()])
    assert (read_.kind, read_.tool.id, read_.tool.parameters["properties"]) == (
        "mcp",
        "list_files",
        {"path": {"type": "string"}},
    )


# ------------------------------------------------------------------------------------------ LangChain
def test_langchain_tool_decorator_and_subclass():
    lc = pytest.importorskip("langchain_core.tools")

    @lc.tool
    def web_search(query: str, max_results: int = 5) -> str:
        """Search the web for pages.

        Args:
            query: what to look for
        """
        return query

    @lc.tool(parse_docstring=True)
    def lookup(city: str) -> str:
        """Look a city up.

        Args:
            city: the city's name
        """
        return city

    class Inputs(BaseModel):
        ticker: str = Field(description="a stock symbol")

    class StockPrice(lc.BaseTool):
        name: str = "stock_price"
        description: str = "Latest price of a stock"
        args_schema: type[BaseModel] = Inputs

        def _run(self, ticker: str) -> float:
            return 1.0

    reads = read_objects([web_search, lookup, StockPrice()])
    assert [r.kind for r in reads] == ["langchain"] * 3
    search, city, stock = (r.tool for r in reads)
    assert (search.id, search.source) == ("web_search", "langchain")
    assert search.description.startswith("Search the web for pages.")  # LangChain's description, as it is
    assert search.parameters == {
        "type": "object",
        "properties": {"query": {"type": "string"}, "max_results": {"type": "integer", "default": 5}},
        "required": ["query"],
    }
    assert city.description == "Look a city up."
    assert city.parameters["properties"]["city"] == {"type": "string", "description": "the city's name"}
    assert (stock.id, stock.description) == ("stock_price", "Latest price of a stock")
    assert stock.parameters["properties"] == {"ticker": {"type": "string", "description": "a stock symbol"}}


def test_langchain_single_input_tools_take_one_string_as_langchain_sends_them():
    lc = pytest.importorskip("langchain_core.tools")
    convert = pytest.importorskip("langchain_core.utils.function_calling").convert_to_openai_tool

    legacy = lc.Tool(name="lookup", func=lambda q: q, description="Look a word up.")

    class Plain(lc.BaseTool):  # no args_schema: LangChain reads _run's signature
        name: str = "plain"
        description: str = "Plain tool"

        def _run(self, query: str, limit: int = 3) -> str:
            return query

    one, plain = (r.tool for r in read_objects([legacy, Plain()]))
    assert one.parameters == {
        "type": "object",
        "properties": {"__arg1": {"type": "string"}},
        "required": ["__arg1"],
    }
    sent = convert(legacy)["function"]["parameters"]
    assert one.parameters["properties"].keys() == sent["properties"].keys()
    assert one.parameters["required"] == sent["required"]
    assert plain.parameters == {
        "type": "object",
        "properties": {"query": {"type": "string"}, "limit": {"type": "integer", "default": 3}},
        "required": ["query"],
    }


def test_langchain_injected_arguments_are_not_in_the_schema():
    lc = pytest.importorskip("langchain_core.tools")

    @lc.tool
    def save_note(text: str, user_id: Annotated[str, lc.InjectedToolArg]) -> str:
        """Save a note for the user."""
        return text

    assert list(read(save_note).parameters["properties"]) == ["text"]  # tool_call_schema: what a model gives


# ----------------------------------------------------------------------------- LlamaIndex and CrewAI
def test_llamaindex_tools_through_a_standin():
    def multiply(a: int, b: int = 2) -> int:
        """Multiply two integers."""
        return a * b

    tool = FunctionTool.from_defaults(multiply)
    bare = FunctionTool(lambda input: input, ToolMetadata(description="Echo", name="echo", fn_schema=None))
    reads = read_objects([tool, bare])
    assert [r.kind for r in reads] == ["llamaindex", "llamaindex"]
    first, echo = (r.tool for r in reads)
    assert (first.id, first.source) == ("multiply", "llamaindex")
    assert first.description == "multiply(a: int, b: int = 2) -> int\nMultiply two integers."  # LlamaIndex's
    assert first.parameters["required"] == ["a"]
    assert first.parameters["properties"]["b"] == {"type": "integer", "default": 2}
    assert echo.parameters["required"] == ["input"]  # get_parameters_dict(): LlamaIndex's own default

    nameless = FunctionTool(multiply, ToolMetadata(description="x", name=None))
    with pytest.raises(
        CatalogError, match="item 0, field 'name': an object of type .*FunctionTool has no name"
    ):
        read(nameless)


def test_crewai_tools_through_a_standin():
    class Query(BaseModel):
        query: str = Field(description="the search query")

    class SerperSearch(CrewBaseTool):
        name: str = "serper_search"
        description: str = "Search the internet with Serper"
        args_schema: type[BaseModel] = Query

        def _run(self, query: str) -> str:
            return query

    [read_] = read_objects([SerperSearch()])
    assert read_.kind == "crewai"
    assert (read_.tool.id, read_.tool.source, read_.tool.description) == (
        "serper_search",
        "crewai",
        "Search the internet with Serper",
    )
    assert read_.tool.parameters == {
        "type": "object",
        "properties": {"query": {"type": "string", "description": "the search query"}},
        "required": ["query"],
    }


def test_a_framework_attribute_that_raises_is_reported():
    class Flaky:  # a CrewAI-shaped tool whose description property fails
        name = "flaky"
        args_schema = None

        @property
        def description(self) -> str:
            raise RuntimeError("no description today")

        def run(self) -> None:
            pass

    with pytest.raises(CatalogError) as err:
        read(Flaky())
    assert str(err.value.problems[0]) == (
        "item 0: an object of type test_catalog_objects.test_a_framework_attribute_that_raises_is_reported."
        "<locals>.Flaky could not be read: RuntimeError('no description today')"
    )


def test_module_doctests():
    for module in (objects, signature):
        assert doctest.testmod(module).failed == 0
