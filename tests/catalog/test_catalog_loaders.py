"""load_catalog / save_catalog: every accepted format, stable generated ids, and every problem reported."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rated.catalog.loaders import MAX_NESTING, load_catalog, save_catalog
from rated.catalog.schema import AuthType, Tool
from rated.errors import CatalogError

RECORDS = [
    {"id": "a", "name": "send_email", "description": "Send an email.", "source": "langchain"},
    {"id": "b", "name": "weather", "description": "Current weather.", "auth": {"type": "api_key"}},
]


def _problems(exc: pytest.ExceptionInfo[CatalogError]) -> list[tuple[str, str]]:
    return [(p.location, p.field) for p in exc.value.problems]


def test_jsonl_roundtrip(tmp_path: Path) -> None:
    tools = [Tool.model_validate(r) for r in RECORDS]
    path = save_catalog(tools, tmp_path / "sub" / "cat.jsonl")
    loaded = load_catalog(path)
    assert loaded == tools
    assert loaded[1].auth.type is AuthType.API_KEY
    assert load_catalog(str(path)) == tools


def test_json_list_file_and_objects(tmp_path: Path) -> None:
    p = tmp_path / "cat.json"
    p.write_text(json.dumps(RECORDS, indent=2))
    assert [t.id for t in load_catalog(p)] == ["a", "b"]
    assert [t.id for t in load_catalog(RECORDS)] == ["a", "b"]
    assert [t.id for t in load_catalog(json.dumps(RECORDS))] == ["a", "b"]


def test_jsonl_without_jsonl_suffix_is_detected(tmp_path: Path) -> None:
    p = tmp_path / "cat.txt"
    p.write_text("\n".join(json.dumps(r) for r in RECORDS) + "\n")
    assert [t.id for t in load_catalog(p)] == ["a", "b"]


def test_openai_tools_and_bare_functions() -> None:
    defs = [
        {
            "type": "function",
            "function": {
                "name": "get_weather",
                "description": "Weather.",
                "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
                "strict": True,
            },
        },
        {"type": "function", "function": {"name": "get_weather", "description": "Weather again."}},
    ]
    tools = load_catalog(defs)
    assert [t.id for t in tools] == ["openai:get_weather", "openai:get_weather#2"]
    assert tools[0].source == "openai"
    assert tools[0].parameters["properties"]["city"]["type"] == "string"
    assert tools[0].extra == {"strict": True}
    bare = load_catalog([{"name": "f", "description": "d", "parameters": {}}], source_name="myapp")
    assert bare[0].id == "myapp:f" and bare[0].source == "myapp"


def test_mcp_tools_list_and_jsonrpc_envelope(tmp_path: Path) -> None:
    result = {
        "tools": [
            {
                "name": "read_file",
                "description": "Read a file",
                "inputSchema": {"type": "object", "properties": {"path": {"type": "string"}}},
                "annotations": {"readOnlyHint": True},
            },
            {"name": "write_file", "inputSchema": {"type": "object"}},
        ]
    }
    tools = load_catalog(result)
    assert [t.id for t in tools] == ["mcp:read_file", "mcp:write_file"]
    assert tools[0].parameters["properties"]["path"] == {"type": "string"}
    assert tools[0].extra["annotations"] == {"readOnlyHint": True}
    assert tools[1].description == ""
    p = tmp_path / "mcp.json"
    p.write_text(json.dumps({"jsonrpc": "2.0", "id": 1, "result": result}))
    named = load_catalog(p, source_name="fs-server")
    assert [t.id for t in named] == ["fs-server:read_file", "fs-server:write_file"]
    assert named[0].provider == "fs-server"
    # stable: the same input gives the same ids
    assert [t.id for t in load_catalog(p, source_name="fs-server")] == [t.id for t in named]


def test_generated_ids_avoid_explicit_ones() -> None:
    tools = load_catalog([{"id": "openai:f", "name": "x"}, {"name": "f", "description": "d"}])
    assert [t.id for t in tools] == ["openai:f", "openai:f#2"]


def test_every_problem_is_listed_with_line_and_field(tmp_path: Path) -> None:
    p = tmp_path / "bad.jsonl"
    lines = [
        json.dumps({"id": "a", "name": "ok"}),
        "{not json",
        json.dumps({"id": "b", "name": "   "}),
        json.dumps({"id": "a", "name": "dup"}),
        json.dumps({"id": "c", "name": "x", "colour": "red"}),
        json.dumps(["a", "list"]),
        json.dumps({"name": "no id", "source": "s"}),
    ]
    p.write_bytes(("\n".join(lines) + "\n").encode() + b'{"id": "d", "name": "\xff"}\n')
    with pytest.raises(CatalogError) as exc:
        load_catalog(p)
    got = _problems(exc)
    assert ("line 2", "") in got
    assert ("line 3", "name") in got
    assert ("line 4", "id") in got and "duplicate" in str(exc.value)
    assert ("line 5", "colour") in got
    assert ("line 6", "") in got
    assert ("line 7", "id") in got
    assert ("line 8", "") in got and "UTF-8" in str(exc.value)
    assert len(got) == 7
    assert str(p) in str(exc.value)


def test_mcp_item_problems_use_the_mcp_field_names() -> None:
    with pytest.raises(CatalogError) as exc:
        load_catalog(
            {"tools": [{"name": "a", "inputSchema": "nope"}, {"description": "x", "inputSchema": {}}, 3]}
        )
    got = _problems(exc)
    assert got == [("tools[0]", "inputSchema"), ("tools[1]", "name"), ("tools[2]", "")]  # in item order


def test_invalid_json_document_names_the_line(tmp_path: Path) -> None:
    p = tmp_path / "bad.json"
    p.write_text('[\n  {"id": "a", "name": "x"},\n  {"id": "b" "name": "y"}\n]\n')
    with pytest.raises(CatalogError) as exc:
        load_catalog(p)
    assert _problems(exc) == [("line 3", "")]


@pytest.mark.parametrize("payload", ["", "\n\n", "[]", '{"tools": []}'])
def test_empty_catalog_is_an_error(tmp_path: Path, payload: str) -> None:
    p = tmp_path / "empty.json"
    p.write_text(payload)
    with pytest.raises(CatalogError, match="no tools"):
        load_catalog(p)


def test_wrong_shapes_and_missing_file(tmp_path: Path) -> None:
    with pytest.raises(CatalogError, match="not found"):
        load_catalog(tmp_path / "nope.jsonl")
    with pytest.raises(CatalogError, match="expected a tool list"):
        load_catalog({"functions": []})
    with pytest.raises(CatalogError, match="JSON-RPC response is an error"):
        load_catalog({"jsonrpc": "2.0", "id": 1, "error": {"code": -32601, "message": "no such method"}})


def test_save_refuses_duplicates(tmp_path: Path) -> None:
    t = Tool(id="x", name="x")
    with pytest.raises(CatalogError, match="duplicate"):
        save_catalog([t, t], tmp_path / "c.jsonl")
    assert not (tmp_path / "c.jsonl").exists()


@pytest.mark.parametrize(
    ("content", "name"),
    [
        ("[" * 100_000, "cat.json"),  # deeper than Python's recursion limit: json.loads raises RecursionError
        ('{"a":' * 100_000, "cat.json"),
        ('{"id": "ok", "name": "n", "description": "d"}\n' + "[" * 100_000 + "\n", "cat.jsonl"),
    ],
)
def test_absurdly_nested_json_is_a_catalog_error(tmp_path, content, name):
    path = tmp_path / name
    path.write_text(content)
    with pytest.raises(CatalogError) as info:
        load_catalog(path)
    assert "nested" in str(info.value) or "invalid JSON" in str(info.value)


def test_parameters_nested_beyond_the_limit_are_rejected_by_name():
    deep: dict = {"type": "string"}
    for _ in range(MAX_NESTING + 5):
        deep = {"type": "object", "properties": {"x": deep}}
    tools = [
        {"id": "ok", "name": "fine", "description": "d", "parameters": {"type": "object", "properties": {}}},
        {"id": "deep", "name": "deep", "description": "d", "parameters": deep},
    ]
    with pytest.raises(CatalogError) as info:
        load_catalog(tools)
    (problem,) = info.value.problems
    assert problem.location == "item 1" and "nested more than" in problem.reason


def test_a_directory_is_not_a_catalog(tmp_path):
    with pytest.raises(CatalogError, match="is a directory"):
        load_catalog(tmp_path)


@pytest.mark.parametrize("bom", [b"", b"\xef\xbb\xbf"])
def test_bytes_that_are_not_utf8_are_named_as_the_file_holds_them_after_a_byte_order_mark_too(tmp_path, bom):
    """The UTF-8 decoder that skips a byte-order mark counts from after it: the byte it names and the line
    were those three bytes earlier in the file."""
    p = tmp_path / "catalog.json"
    p.write_bytes(bom + b'[{"id": "a",\n"name": "caf\xe9"}]')
    with pytest.raises(CatalogError) as exc:
        load_catalog(p)
    assert _problems(exc) == [("line 2", "")]
    assert "not valid UTF-8 (byte 0xe9)" in str(exc.value)
