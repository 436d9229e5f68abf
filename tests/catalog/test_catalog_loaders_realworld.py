"""load_catalog on catalogs shaped the way users really have them: other vendors' tool formats, Windows
encodings and line endings, odd field types, and ids that only look different."""

from __future__ import annotations

import json
import unicodedata
from pathlib import Path

import pytest

from rated.catalog.loaders import load_catalog, save_catalog
from rated.catalog.schema import Tool
from rated.errors import CatalogError


def _reasons(exc: pytest.ExceptionInfo[CatalogError]) -> list[tuple[str, str, str]]:
    return [(p.location, p.field, p.reason) for p in exc.value.problems]


def test_non_list_tags_are_a_problem_not_a_crash(tmp_path: Path) -> None:
    p = tmp_path / "cat.jsonl"
    rows = [{"id": "a", "name": "a", "tags": 5}, {"id": "b", "name": "b", "tags": {"x": 1}}]
    p.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    with pytest.raises(CatalogError) as exc:
        load_catalog(p)
    assert [(loc, field) for loc, field, _ in _reasons(exc)] == [("line 1", "tags"), ("line 2", "tags")]
    assert all("list" in reason for _, _, reason in _reasons(exc))


def test_integer_longer_than_python_allows_is_a_problem(tmp_path: Path) -> None:
    big = "9" * 5000
    p = tmp_path / "cat.jsonl"
    p.write_text(f'{{"id": "a", "name": "a"}}\n{{"id": "b", "name": "b", "extra": {{"n": {big}}}}}\n')
    with pytest.raises(CatalogError) as exc:
        load_catalog(p)
    assert [(loc, field) for loc, field, _ in _reasons(exc)] == [("line 2", "")]
    q = tmp_path / "cat.json"
    q.write_text(f'[{{"id": "b", "name": "b", "extra": {{"n": {big}}}}}]')
    with pytest.raises(CatalogError, match="invalid JSON"):
        load_catalog(q)


def test_anthropic_tool_definitions() -> None:
    defs = [
        {
            "name": "get_weather",
            "description": "Weather in a city.",
            "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}},
            "cache_control": {"type": "ephemeral"},
        },
        {"type": "custom", "name": "get_time", "input_schema": {"type": "object"}},
    ]
    tools = load_catalog(defs)
    assert [(t.id, t.source) for t in tools] == [
        ("anthropic:get_weather", "anthropic"),
        ("anthropic:get_time", "anthropic"),
    ]
    assert tools[0].parameters["properties"]["city"] == {"type": "string"}
    assert tools[0].description == "Weather in a city."


def test_openai_responses_api_flat_functions() -> None:
    defs = [
        {"type": "function", "name": "get_weather", "description": "W.", "parameters": {"type": "object"}}
    ]
    (tool,) = load_catalog(defs)
    assert (tool.id, tool.name, tool.description) == ("openai:get_weather", "get_weather", "W.")
    assert tool.parameters == {"type": "object"}


def test_chat_request_tools_keep_their_own_source() -> None:
    body = {"model": "m", "tools": [{"type": "function", "function": {"name": "f", "description": "d"}}]}
    assert [(t.id, t.source) for t in load_catalog(body)] == [("openai:f", "openai")]
    mcp = {"tools": [{"name": "read", "description": "Read a file."}]}  # a server that omits inputSchema
    assert [(t.id, t.source) for t in load_catalog(mcp)] == [("mcp:read", "mcp")]


def test_jsonl_of_vendor_definitions(tmp_path: Path) -> None:
    p = tmp_path / "defs.jsonl"
    rows = [
        {"name": "read_file", "inputSchema": {"type": "object"}},
        {"type": "function", "function": {"name": "write_file"}},
        {"id": "native", "name": "native"},
    ]
    p.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    assert [t.id for t in load_catalog(p)] == ["mcp:read_file", "openai:write_file", "native"]


@pytest.mark.parametrize("codec", ["utf-16", "utf-16-be", "utf-32"])
def test_utf16_and_utf32_files_with_a_bom(tmp_path: Path, codec: str) -> None:
    text = json.dumps([{"id": "café", "name": "café"}])
    data = text.encode(codec)
    if not data.startswith((b"\xff\xfe", b"\xfe\xff")):  # the -be codec writes no BOM: add it
        data = "\ufeff".encode(codec) + data
    p = tmp_path / "cat.json"
    p.write_bytes(data)
    assert [t.id for t in load_catalog(p)] == ["café"]


def test_broken_utf16_is_one_clear_problem(tmp_path: Path) -> None:
    p = tmp_path / "cat.json"
    p.write_bytes(b"\xff\xfe[\x00\x00\xd8")  # a lone high surrogate
    with pytest.raises(CatalogError, match="UTF-16"):
        load_catalog(p)


def test_old_mac_line_endings(tmp_path: Path) -> None:
    p = tmp_path / "cat.jsonl"
    p.write_bytes(b'{"id": "a", "name": "a"}\r{"id": "b", "name": "b"}\r\r{"id": "c", "name": 5}\r')
    with pytest.raises(CatalogError) as exc:
        load_catalog(p)
    assert [(loc, field) for loc, field, _ in _reasons(exc)] == [("line 4", "name")]


def test_ids_equal_up_to_unicode_normalisation_are_duplicates(tmp_path: Path) -> None:
    nfc, nfd = unicodedata.normalize("NFC", "café"), unicodedata.normalize("NFD", "café")
    assert nfc != nfd
    p = tmp_path / "cat.jsonl"
    p.write_text(json.dumps({"id": nfc, "name": "x"}) + "\n" + json.dumps({"id": nfd, "name": "y"}) + "\n")
    with pytest.raises(CatalogError) as exc:
        load_catalog(p)
    ((loc, field, reason),) = _reasons(exc)
    assert (loc, field) == ("line 2", "id")
    assert "normalisation" in reason and "line 1" in reason
    with pytest.raises(CatalogError, match="normalisation"):
        save_catalog([Tool(id=nfc, name="x"), Tool(id=nfd, name="y")], tmp_path / "out.jsonl")


def test_ids_differing_in_case_are_distinct() -> None:
    tools = load_catalog([{"id": "Search", "name": "Search"}, {"id": "search", "name": "search"}])
    assert [t.id for t in tools] == ["Search", "search"]


def test_ids_with_control_characters_are_rejected() -> None:
    with pytest.raises(CatalogError) as exc:
        load_catalog(
            [{"id": "tab\tid", "name": "a"}, {"id": "new\nline", "name": "b"}, {"id": "ok", "name": "c"}]
        )
    assert [(loc, field) for loc, field, _ in _reasons(exc)] == [("item 0", "id"), ("item 1", "id")]
    assert "control characters" in _reasons(exc)[0][2]
    # not printable, yet no control character: a zero-width joiner (Cf) and a no-break space (Zs) pass
    odd = load_catalog([{"id": "a\u200db", "name": "a"}, {"id": "no\u00a0break", "name": "b"}])
    assert [t.id for t in odd] == ["a\u200db", "no\u00a0break"]
