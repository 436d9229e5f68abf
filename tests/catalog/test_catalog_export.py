"""Tools as OpenAI / Anthropic / MCP definitions: valid unique names, the way back to ids, round trips."""

from __future__ import annotations

import hashlib
import random
import re

import pytest

from rated import Tool
from rated.catalog.export import (
    FORMATS,
    anthropic_tools,
    mcp_tools,
    openai_responses_tools,
    openai_tools,
    tool_definitions,
)
from rated.catalog.loaders import load_catalog
from rated.errors import ConfigError, RatedError, UnknownToolError, UnknownToolNameError
from rated.hits import Hit

API_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")  # OpenAI and Anthropic
MCP_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,128}$")  # MCP 2025-11-25
SCHEMA = {
    "type": "object",
    "properties": {"to": {"type": "string"}, "body": {"type": "string"}},
    "required": ["to"],
}

AWKWARD = [
    Tool(id="gmail.send", name="send_email", description="Send an email via Gmail", parameters=SCHEMA),
    Tool(id="outlook.send", name="send_email", description="Send an email via Outlook"),
    Tool(id="n8n:Slack/send message", name="send message", description="Post to Slack"),
    Tool(id="calendar.create", name="calendar.create_event", description="Create an event"),
    Tool(id="café:créer", name="créer un événement", description="Créer un événement"),
    Tool(id="jp.search", name="検索", description="search in Japanese"),
    Tool(id="cn.search", name="搜索", description="search in Chinese"),
    Tool(id="a" * 200, name="b" * 200, description="a 200-character id and name"),
    Tool(id="a" * 199 + "z", name="b" * 200, description="the same but its last character"),
]


def names_of(fmt: str, tools: list[Tool]) -> dict[str, str]:
    return dict(tool_definitions(tools, fmt).names)


def definition_name(definition: dict) -> str:
    return definition["function"]["name"] if "function" in definition else definition["name"]


@pytest.mark.parametrize("fmt", FORMATS)
def test_every_name_is_valid_unique_and_maps_back_to_its_tool(fmt):
    defs = tool_definitions(AWKWARD, fmt)
    pattern = MCP_NAME if fmt == "mcp" else API_NAME
    names = [definition_name(d) for d in defs.definitions]
    assert len(names) == len(set(names)) == len(AWKWARD)
    assert all(pattern.fullmatch(n) for n in names), names
    assert [t.id for t in defs.tools] == [t.id for t in AWKWARD]
    for tool, name in zip(AWKWARD, names, strict=True):
        assert defs.names[tool.id] == name
        assert defs.tool_id(name) == tool.id
        assert defs.tool(name) is tool
        assert defs.name(tool.id) == name


def test_names_for_openai_say_what_the_tool_is():
    names = names_of("openai", AWKWARD)
    # its own name when valid and unclashed; else the name made valid
    assert names["n8n:Slack/send message"] == "send_message"
    assert names["calendar.create"] == "calendar_create_event"
    assert names["café:créer"] == "creer_un_evenement"  # accents dropped, not the letters
    # a name two tools share: each is called by its id made valid
    assert names["gmail.send"] == "gmail_send" and names["outlook.send"] == "outlook_send"
    assert names["jp.search"] == "jp_search" and names["cn.search"] == "cn_search"  # both names were "tool"
    # ids alike in their first 64 characters: cut, with 8 hex digits of a hash of the id
    long_a, long_z = names["a" * 200], names["a" * 199 + "z"]
    assert len(long_a) == len(long_z) == 64 and long_a != long_z
    assert re.fullmatch(r"a{55}_[0-9a-f]{8}", long_a)


def test_mcp_keeps_dots_and_longer_names():
    names = names_of("mcp", AWKWARD)
    assert names["calendar.create"] == "calendar.create_event"
    assert names["gmail.send"] == "gmail.send"
    assert len(names["a" * 200]) == 128


def test_a_valid_name_is_kept_exactly():
    tools = [Tool(id="x", name="Get__Weather-v2"), Tool(id="y", name="a" * 64)]
    assert list(names_of("openai", tools).values()) == ["Get__Weather-v2", "a" * 64]
    assert names_of("openai", [Tool(id="z", name="a" * 65)])["z"] == "a" * 64


def test_names_do_not_depend_on_the_order_of_the_list_nor_on_the_process():
    shuffled = AWKWARD[:]
    random.Random(7).shuffle(shuffled)
    for fmt in FORMATS:
        assert names_of(fmt, shuffled) == names_of(fmt, AWKWARD)
    # pinned: the hash is of the id (blake2b), the same in every process and release
    assert names_of("openai", AWKWARD)["a" * 200] == "a" * 55 + "_d63a4694"


def test_a_name_that_takes_another_tools_fallback_pushes_it_further():
    tools = [
        Tool(id="x", name="gmail_send"),  # valid, unclashed: kept
        Tool(id="gmail.send", name="send"),
        Tool(id="outlook.send", name="send"),
    ]
    names = names_of("openai", tools)
    assert names["x"] == "gmail_send"
    assert re.fullmatch(r"gmail_send_[0-9a-f]{8}", names["gmail.send"])  # its id made valid was taken
    assert names["outlook.send"] == "outlook_send"


def test_names_crafted_to_match_every_hashed_name_still_leave_each_tool_a_unique_one():
    clash = [Tool(id="p.q", name="same"), Tool(id="p:q", name="same")]  # both ids become "p_q"
    digests = {t.id: hashlib.blake2b(t.id.encode(), digest_size=16).hexdigest() for t in clash}
    assert names_of("openai", clash) == {i: f"p_q_{h[:8]}" for i, h in digests.items()}
    crafted = [f"p_q_{h[:d]}" for h in digests.values() for d in (8, 16, 32)]  # every hashed name, taken
    tools = clash + [Tool(id=f"own{i}", name=name) for i, name in enumerate(crafted)]
    names = names_of("openai", tools)
    assert len(set(names.values())) == len(tools)
    assert all(API_NAME.fullmatch(n) for n in names.values())
    assert names["p.q"] == f"p_q_{digests['p.q'][:8]}_2" and names["p:q"] == f"p_q_{digests['p:q'][:8]}_2"


def test_tool_id_refuses_names_it_did_not_issue():
    defs = openai_tools(AWKWARD[:3])
    for foreign in ("send_email", "gmail.send", "", "multi_tool_use.parallel", "x" * 10_000):
        with pytest.raises(UnknownToolNameError) as info:
            defs.tool_id(foreign)
        assert isinstance(info.value, UnknownToolError) and isinstance(info.value, RatedError)
        message = str(info.value)
        assert message.startswith("unknown tool name") and "gmail_send" in message and len(message) < 600
    with pytest.raises(UnknownToolNameError):
        defs.tool_id(["not", "a", "name"])  # type: ignore[arg-type]
    other = openai_tools([Tool(id="w", name="weather")])
    with pytest.raises(UnknownToolNameError):
        defs.tool_id(other.names["w"])  # issued, but for another list
    with pytest.raises(UnknownToolError, match="unknown tool id"):
        defs.name("w")


def test_shapes_of_each_format():
    tool = AWKWARD[0]
    said = {"name": "send_email", "description": "Send an email via Gmail"}
    function = {**said, "parameters": SCHEMA}
    assert openai_tools([tool]).definitions == [{"type": "function", "function": function}]
    assert openai_responses_tools([tool]).definitions == [{"type": "function", **function}]
    assert anthropic_tools([tool]).definitions == [{**said, "input_schema": SCHEMA}]
    assert mcp_tools([tool]).definitions == [{**said, "inputSchema": SCHEMA}]


@pytest.mark.parametrize(
    ("parameters", "schema"),
    [
        ({}, {"type": "object", "properties": {}}),
        ({"type": "object"}, {"type": "object", "properties": {}}),  # OpenAI refuses an object without
        (
            {"properties": {"q": {"type": "string"}}},
            {"type": "object", "properties": {"q": {"type": "string"}}},
        ),
        ({"type": "dict", "properties": {}}, {"type": "object", "properties": {}}),  # BFCL's word
        ({"type": ["object", "null"]}, {"type": "object", "properties": {}}),
        (
            {"type": "string", "description": "a city"},
            {
                "type": "object",
                "properties": {"input": {"type": "string", "description": "a city"}},
                "required": ["input"],
                "additionalProperties": False,  # closed: OpenAI's strict mode requires it of every object
            },
        ),
    ],
)
def test_parameters_are_always_an_object_schema(parameters, schema):
    tool = Tool(id="t", name="t", parameters=parameters)
    for fmt in FORMATS:
        definition = tool_definitions([tool], fmt).definitions[0]
        got = {"openai": lambda d: d["function"]["parameters"], "anthropic": lambda d: d["input_schema"]}.get(
            fmt, lambda d: d.get("parameters", d.get("inputSchema"))
        )(definition)
        assert got == schema
    assert tool.parameters == parameters  # a copy: the tool is untouched


def test_openai_descriptions_are_cut_to_1024_characters_and_others_are_not():
    tool = Tool(id="t", name="t", description="word " * 500)
    cut = openai_tools([tool]).definitions[0]["function"]["description"]
    assert len(cut) == 1024 and cut.endswith("\u2026") and tool.description.startswith(cut[:-1])
    assert len(openai_responses_tools([tool]).definitions[0]["description"]) == 1024
    assert anthropic_tools([tool]).definitions[0]["description"] == tool.description
    assert mcp_tools([tool]).definitions[0]["description"] == tool.description
    assert len(anthropic_tools([tool], max_description=100).definitions[0]["description"]) == 100
    long = openai_tools([tool], max_description=10_000).definitions[0]["function"]["description"]
    assert long == tool.description


def test_hits_are_taken_like_tools_and_a_repeated_tool_is_defined_once():
    tool = AWKWARD[0]
    hit = Hit(tool=tool, score=1, semantic=1, prior=0.5, bandit=None, healthy=True, degraded=False, rank=1)
    defs = openai_tools([hit, AWKWARD[1], tool])
    assert [t.id for t in defs.tools] == ["gmail.send", "outlook.send"] and len(defs) == 2
    assert openai_tools([hit]).definitions == openai_tools([tool]).definitions


def test_bad_arguments_are_named():
    with pytest.raises(ConfigError, match="unknown tool format 'gemini'"):
        tool_definitions(AWKWARD, "gemini")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="max_description"):
        tool_definitions(AWKWARD, "openai", max_description=0)
    with pytest.raises(TypeError, match="Tool or Hit"):
        tool_definitions([{"id": "x", "name": "y"}], "openai")


# ----------------------------------------------------------------------------------------- round trips

ROUND_TRIP = [
    Tool(id="w", name="get_weather", description="Weather for a city", parameters=SCHEMA),
    Tool(id="s", name="search-v2", description="", parameters={"type": "object", "properties": {}}),
    Tool(
        id="strict",
        name="lookup",
        description="Strict lookup",
        parameters={**SCHEMA, "additionalProperties": False},
        extra={"strict": True},
    ),
]


@pytest.mark.parametrize("fmt", FORMATS)
def test_loading_the_definitions_gives_back_the_same_tools(fmt):
    defs = tool_definitions(ROUND_TRIP, fmt)
    source = {"tools": defs.definitions} if fmt == "mcp" else defs.definitions
    loaded = load_catalog(source)
    assert [(t.name, t.description, t.parameters) for t in loaded] == [
        (t.name, t.description, t.parameters) for t in ROUND_TRIP
    ]
    if fmt.startswith("openai"):  # the strict flag travels with OpenAI definitions
        assert loaded[2].extra == {"strict": True}
    # and the loaded tools define as they were defined
    assert tool_definitions(loaded, fmt).definitions == defs.definitions


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_loaded_catalog_exports_back_to_what_was_loaded(fmt):
    original = tool_definitions(ROUND_TRIP, fmt).definitions
    source = {"tools": original} if fmt == "mcp" else original
    assert tool_definitions(load_catalog(source), fmt).definitions == original


def test_mcp_round_trip_keeps_title_annotations_and_output_schema():
    listed = {
        "tools": [
            {
                "name": "fs.read",
                "title": "Read a file",
                "description": "Read a file",
                "inputSchema": {"type": "object", "properties": {"path": {"type": "string"}}},
                "outputSchema": {"type": "object", "properties": {"text": {"type": "string"}}},
                "annotations": {"readOnlyHint": True},
            }
        ]
    }
    tools = load_catalog(listed, source_name="fs")
    assert mcp_tools(tools).definitions == listed["tools"]
    assert tools[0].id == "fs:fs.read"
    assert mcp_tools(tools).tool_id("fs.read") == "fs:fs.read"
    assert openai_tools(tools).tool_id("fs_read") == "fs:fs.read"


def test_renamed_tools_come_back_under_the_names_they_were_called_by():
    defs = openai_tools(AWKWARD)
    loaded = load_catalog(defs.definitions)
    assert [t.name for t in loaded] == list(defs.names.values())
    assert [t.description for t in loaded] == [t.description for t in AWKWARD]


@pytest.mark.parametrize(
    ("parameters", "schema"),
    [
        # "properties": null or a list, and "required" not a list of names: OpenAI and Anthropic refuse them
        ({"type": "object", "properties": None}, {"type": "object", "properties": {}}),
        ({"properties": [{"name": "q"}]}, {"type": "object", "properties": {}}),
        (
            {"type": "object", "properties": {"q": {}}, "required": "q"},
            {"type": "object", "properties": {"q": {}}, "required": ["q"]},
        ),
        (
            {"type": "object", "properties": {"q": {}}, "required": ["q", 3, None]},
            {"type": "object", "properties": {"q": {}}, "required": ["q"]},
        ),
        ({"type": "object", "required": None}, {"type": "object", "properties": {}}),
        (  # a value schema wrapped as "input": the definitions its references name stay at the root
            {"type": "array", "items": {"$ref": "#/$defs/City"}, "$defs": {"City": {"type": "string"}}},
            {
                "type": "object",
                "properties": {"input": {"type": "array", "items": {"$ref": "#/$defs/City"}}},
                "required": ["input"],
                "additionalProperties": False,
                "$defs": {"City": {"type": "string"}},
            },
        ),
        (  # a named schema (zod-to-json-schema): the object it names is put at the root
            {
                "$ref": "#/definitions/Args",
                "definitions": {"Args": {"type": "object", "properties": {"q": {}}, "required": ["q"]}},
            },
            {
                "type": "object",
                "properties": {"q": {}},
                "required": ["q"],
                "definitions": {"Args": {"type": "object", "properties": {"q": {}}, "required": ["q"]}},
            },
        ),
        (  # a reference to nothing it defines is left as it is
            {"$ref": "#/$defs/Missing", "$defs": {}},
            {"type": "object", "properties": {}, "$ref": "#/$defs/Missing", "$defs": {}},
        ),
    ],
)
def test_malformed_object_schemas_are_made_ones_the_apis_take(parameters, schema):
    tool = Tool(id="t", name="t", parameters=parameters)
    for fmt in FORMATS:
        definition = tool_definitions([tool], fmt).definitions[0]
        got = definition.get("function", definition)
        got = got.get("parameters", got.get("input_schema", got.get("inputSchema")))
        assert got == schema, fmt
    assert tool.parameters == parameters  # a copy: the tool is untouched


def params_of(definition: dict) -> dict:
    got = definition.get("function", definition)
    return got.get("parameters", got.get("input_schema", got.get("inputSchema")))


@pytest.mark.parametrize(
    ("parameters", "schema"),
    [
        (  # a bare type name where a property's schema belongs, and a value that is no schema
            {"type": "object", "properties": {"a": "string", "b": None, "c": 3, "d": ["string", "null"]}},
            {
                "type": "object",
                "properties": {"a": {"type": "string"}, "b": {}, "c": {}, "d": {"type": ["string", "null"]}},
            },
        ),
        (  # BFCL's and Python's type names, at any depth; "any" is no type
            {
                "type": "dict",
                "properties": {
                    "point": {"type": "dict", "properties": {"x": {"type": "float"}, "y": "int"}},
                    "pair": {"type": "tuple", "items": "str"},
                    "whatever": {"type": "any", "description": "anything"},
                    "flag": "bool",
                },
            },
            {
                "type": "object",
                "properties": {
                    "point": {
                        "type": "object",
                        "properties": {"x": {"type": "number"}, "y": {"type": "integer"}},
                    },
                    "pair": {"type": "array", "items": {"type": "string"}},
                    "whatever": {"description": "anything"},
                    "flag": {"type": "boolean"},
                },
            },
        ),
        (  # items, additionalProperties, anyOf/oneOf/allOf and definitions, repaired as properties are
            {
                "type": "object",
                "properties": {
                    "tags": {"type": "array", "items": "string"},
                    "labels": {"type": "object", "additionalProperties": "string"},
                    "when": {"anyOf": ["string", {"type": "integer"}, None]},
                    "shape": {"oneOf": [{"$ref": "#/$defs/Box"}], "allOf": {"description": "one schema"}},
                    "rows": {
                        "type": "array",
                        "items": {"type": "object", "properties": None, "required": "x"},
                    },
                    "closed": {"type": "object", "properties": {}, "additionalProperties": False},
                },
                "$defs": {"Box": {"type": "object", "properties": {"side": "number"}}},
            },
            {
                "type": "object",
                "properties": {
                    "tags": {"type": "array", "items": {"type": "string"}},
                    "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                    "when": {"anyOf": [{"type": "string"}, {"type": "integer"}, {}]},
                    "shape": {"oneOf": [{"$ref": "#/$defs/Box"}], "allOf": [{"description": "one schema"}]},
                    "rows": {
                        "type": "array",
                        "items": {"type": "object", "properties": {}, "required": ["x"]},
                    },
                    "closed": {"type": "object", "properties": {}, "additionalProperties": False},
                },
                "$defs": {"Box": {"type": "object", "properties": {"side": {"type": "number"}}}},
            },
        ),
        (  # a value schema wrapped as "input" is repaired too
            {"type": "array", "items": "string"},
            {
                "type": "object",
                "properties": {"input": {"type": "array", "items": {"type": "string"}}},
                "required": ["input"],
                "additionalProperties": False,
            },
        ),
    ],
)
def test_schemas_below_the_root_are_repaired_as_the_root_is(parameters, schema):
    """``"properties": {"a": "string"}`` is no schema OpenAI or Anthropic take, at any depth."""
    tool = Tool(id="t", name="t", parameters=parameters)
    for fmt in FORMATS:
        assert params_of(tool_definitions([tool], fmt).definitions[0]) == schema, fmt
    assert tool.parameters == parameters  # a copy: the tool is untouched


def test_a_valid_nested_schema_is_kept_exactly_and_a_very_deep_one_is_passed_as_it_is():
    valid = {
        "type": "object",
        "properties": {
            "opts": {"type": "object"},  # no "properties" added below the root: valid as it is
            "any": {},
            "list": {"type": "array", "items": [{"type": "string"}, True], "minItems": 1},
            "name": {"type": ["string", "null"], "enum": ["a", None]},
        },
        "required": ["opts"],
        "additionalProperties": False,
    }
    tool = Tool(id="t", name="t", parameters=valid)
    assert params_of(openai_tools([tool]).definitions[0]) == valid
    deep: dict = {"type": "string"}
    for _ in range(5000):  # far past the recursion limit: no RecursionError
        deep = {"type": "array", "items": deep}
    tool = Tool(id="d", name="d", parameters={"type": "object", "properties": {"x": deep}})
    assert params_of(anthropic_tools([tool]).definitions[0])["properties"]["x"] == deep
