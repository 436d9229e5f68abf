"""Tool ids starting with ``provider:`` are refused: the policy keeps the state a provider's tools share
under ``provider:NAME``, so a tool with id ``provider:acme`` shared provider acme's state, and adding it
dropped that state. Each way a tool is made says so the same way (a catalog's problem listing: location,
field, reason naming the id); a database that already holds such an id fails clearly when the record is
first read (one error, no traceback; the CLI exits non-zero), and ``rated sync --prune`` with the tool
renamed repairs it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from old_provider_db import index_before_the_rule
from rated import Tool
from rated.catalog import load_catalog
from rated.catalog.objects import tools_from_objects
from rated.encode.testing import HashEncoder
from rated.errors import CatalogError, IndexFormatError
from rated.retriever import Retriever
from rated.toolbox import Toolbox

RESERVED = "reserved"  # what each refusal's reason says


def problems(exc: pytest.ExceptionInfo[CatalogError]) -> list[tuple[str, str, str]]:
    return [(p.location, p.field, p.reason) for p in exc.value.problems]


@pytest.mark.parametrize("tool_id", ["provider:acme", "  provider:acme", "provider:", "provider:a:b"])
def test_an_id_starting_with_provider_is_refused_naming_it(tool_id: str) -> None:
    with pytest.raises(ValidationError) as exc:
        Tool(id=tool_id, name="x")
    [err] = exc.value.errors()
    assert err["loc"] == ("id",)
    assert repr(tool_id.strip()) in err["msg"] and RESERVED in err["msg"]


@pytest.mark.parametrize("tool_id", ["provider", "Provider:acme", "acme.provider:x", "providers:x", "mcp:x"])
def test_other_ids_are_kept(tool_id: str) -> None:
    assert Tool(id=tool_id, name="x").id == tool_id


def test_a_jsonl_catalog_lists_it_with_its_line_and_field(tmp_path: Path) -> None:
    path = tmp_path / "tools.jsonl"
    rows = [{"id": "a", "name": "a"}, {"id": "provider:acme", "name": "b"}, {"id": "", "name": "c"}]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    with pytest.raises(CatalogError) as exc:
        load_catalog(path)
    listed = problems(exc)
    assert [(loc, field) for loc, field, _ in listed] == [("line 2", "id"), ("line 3", "id")]
    assert "'provider:acme'" in listed[0][2] and RESERVED in listed[0][2]
    assert "line 2" in str(exc.value) and "provider:acme" in str(exc.value)


@pytest.mark.parametrize(
    "document",
    [
        [{"type": "function", "function": {"name": "search", "description": "d"}}],  # OpenAI
        {"tools": [{"name": "search", "description": "d", "inputSchema": {"type": "object"}}]},  # MCP
        [{"name": "search", "description": "d", "input_schema": {"type": "object"}}],  # Anthropic
    ],
    ids=["openai", "mcp", "anthropic"],
)
def test_ids_made_from_a_source_named_provider_are_refused(document: Any) -> None:
    """A definition's id is ``SOURCE:NAME``: the source name ``provider`` makes reserved ids."""
    with pytest.raises(CatalogError) as exc:
        load_catalog(document, source_name="provider")
    [(_, field, reason)] = problems(exc)
    assert field == "id" and "'provider:search'" in reason and "source name" in reason
    assert len(load_catalog(document, source_name="acme")) == 1


class NamedTool:
    """A LangChain-shaped tool (``name``, ``description``, ``invoke``, ``args_schema``)."""

    args_schema = None

    def __init__(self, name: str) -> None:
        self.name, self.description = name, "search the acme docs"

    def invoke(self, tool_input: Any) -> str:
        return "ok"


def test_a_tool_object_named_so_is_refused_at_its_position() -> None:
    with pytest.raises(CatalogError) as exc:
        tools_from_objects([NamedTool("fine"), NamedTool("provider:acme")])
    [(loc, field, reason)] = problems(exc)
    assert (loc, field) == ("item 1", "id") and "'provider:acme'" in reason


def test_a_toolbox_refuses_it_and_add_tools_changes_nothing() -> None:
    with pytest.raises(CatalogError, match="provider:acme"):
        Toolbox([NamedTool("provider:acme")], encoder=HashEncoder(32))
    box = Toolbox([NamedTool("fine")], encoder=HashEncoder(32))
    try:
        with pytest.raises(CatalogError, match="provider:acme"):
            box.add_tools([NamedTool("provider:acme")])
        assert "provider:acme" not in box and len(box.retriever) == 1
    finally:
        box.close()


# -------------------------------------------------------------------- a database holding one already
def cli(capsys: pytest.CaptureFixture[str], *argv: object) -> tuple[int, str, str]:
    """``rated *argv`` in-process: its exit code, stdout and stderr."""
    from rated.cli import main

    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def old_db(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A database indexed before such ids were refused: ``provider:acme`` and ``b``, both of provider acme."""
    return index_before_the_rule(tmp_path / "old.db", monkeypatch)


def test_a_stored_one_fails_clearly_when_read(old_db: Path) -> None:
    r = Retriever.open(old_db, encoder=HashEncoder(32))
    try:
        with pytest.raises(IndexFormatError) as exc:
            r.tool("provider:acme")
        assert "'provider:acme'" in str(exc.value) and RESERVED in str(exc.value)
        assert r.tool("b").id == "b"  # the other tools are unaffected
    finally:
        r.close()


def test_the_cli_exits_non_zero_with_one_message_and_sync_repairs_it(
    old_db: Path, tmp_path: Path, capsys
) -> None:
    code, out, err = cli(capsys, "tools", "--db", old_db)
    assert code != 0 and "Traceback" not in out + err
    assert err.count("error:") == 1 and "'provider:acme'" in err and RESERVED in err
    fixed = tmp_path / "fixed.jsonl"
    rows = [
        {"id": "acme.search", "name": "acme_search", "description": "search", "provider": "acme"},
        {"id": "b", "name": "weather", "description": "weather forecast", "provider": "acme"},
    ]
    fixed.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    code, out, err = cli(capsys, "sync", "--db", old_db, "--prune", fixed)
    assert code == 0, err
    code, out, err = cli(capsys, "tools", "--db", old_db, "--json")
    assert code == 0, err
    assert "provider:acme" not in out and "acme.search" in out


def test_the_mcp_collector_refuses_a_server_name_that_makes_them() -> None:
    """``rated catalog mcp --name provider:acme``: its tools' ids (``NAME.TOOL``) would start with it."""
    from rated.catalog.collect.mcp_servers import McpServer, _convert

    raw = [{"name": "search", "description": "d", "inputSchema": {"type": "object"}}]
    server = McpServer("http", url="http://mcp.test/mcp", name="provider:acme")
    with pytest.raises(CatalogError) as exc:
        _convert(server, (None, None), raw)
    [(_, field, reason)] = problems(exc)
    assert field == "id" and "'provider:acme.search'" in reason and RESERVED in reason
    assert _convert(McpServer("http", url="http://mcp.test/mcp", name="acme"), (None, None), raw)[1]
