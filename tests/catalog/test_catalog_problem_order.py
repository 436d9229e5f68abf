"""A catalog's problems are listed in the order of the lines (JSONL, or a JSON document's syntax error) or
items (a list, an MCP ``tools`` array) they are at, whichever step found them (reading the JSON, converting
a definition, validating its fields), and in the order found for the same line: a reader fixes the file
from top to bottom."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rated.catalog import load_catalog
from rated.errors import CatalogError


def listed(source: object) -> list[tuple[str, str]]:
    with pytest.raises(CatalogError) as exc:
        load_catalog(source)  # type: ignore[arg-type]
    return [(p.location, p.field) for p in exc.value.problems]


def test_jsonl_problems_are_in_line_order(tmp_path: Path) -> None:
    lines = [
        json.dumps({"id": "a", "name": "a"}),
        json.dumps({"id": "b", "bogus": 1}),  # two field problems: in the order validation gives them
        "{not json",
        json.dumps({"id": "c", "name": "c", "extra_field": 1}),
        "[1]",
        json.dumps({"type": "function"}),  # an OpenAI definition without its function object
    ]
    path = tmp_path / "tools.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert listed(path) == [
        ("line 2", "name"),
        ("line 2", "bogus"),
        ("line 3", ""),
        ("line 4", "extra_field"),
        ("line 5", ""),
        ("line 6", "function"),
    ]


def test_list_items_are_in_item_order() -> None:
    items = [{"id": "a"}, 3, {"type": "function"}, {"id": "b", "name": "b"}, {"id": "a", "name": "x"}]
    assert listed(items) == [("item 0", "name"), ("item 1", ""), ("item 2", "function")]


def test_items_past_nine_are_ordered_as_numbers() -> None:
    items = [{"id": f"t{i}", "name": f"t{i}"} for i in range(12)]
    items[2], items[11] = {"id": "t2"}, "not an object"
    assert listed({"tools": items}) == [("tools[2]", "name"), ("tools[11]", "")]
