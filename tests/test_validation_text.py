"""Every listing of pydantic validation problems drops pydantic's "Value error, " prefix (rated's
validators raise ``ValueError``): the catalog loader, the dataset loader and an MCP server's tools kept it
("line 1, field 'id': Value error, must not be blank"), while stored records and settings dropped it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rated.bench.dataset import load_dataset
from rated.catalog.loaders import load_catalog
from rated.errors import CatalogError, DataError
from rated.validation_text import pydantic_reason


def test_pydantic_reason_drops_only_the_prefix() -> None:
    assert pydantic_reason({"msg": "Value error, must not be blank"}) == "must not be blank"
    assert pydantic_reason({"msg": "Field required"}) == "Field required"
    assert pydantic_reason({"msg": "a Value error, inside"}) == "a Value error, inside"


def test_catalog_listing(tmp_path: Path) -> None:
    p = tmp_path / "cat.jsonl"
    p.write_text(json.dumps({"id": " ", "name": "a"}) + "\n")
    with pytest.raises(CatalogError) as exc:
        load_catalog(p)
    assert [(x.location, x.field, x.reason) for x in exc.value.problems] == [
        ("line 1", "id", "must not be blank")
    ]
    assert "Value error" not in str(exc.value)


def test_dataset_listing(tmp_path: Path) -> None:
    (tmp_path / "tools.jsonl").write_text(json.dumps({"id": "a", "name": " "}) + "\n")
    (tmp_path / "queries.jsonl").write_text("")
    with pytest.raises(DataError) as exc:
        load_dataset(tmp_path)
    assert "line 1, field 'name': must not be blank" in str(exc.value)
    assert "Value error" not in str(exc.value)


def test_mcp_server_tools_listing() -> None:
    pytest.importorskip("mcp")
    from rated.catalog.collect.mcp_servers import McpServer, _convert

    server = McpServer(transport="stdio", command=("srv",), name="provider:acme")
    raw = [{"name": "look", "inputSchema": {"type": "object"}}]
    with pytest.raises(CatalogError) as exc:
        _convert(server, (None, None), raw)
    [problem] = exc.value.problems
    assert problem.field == "id" and problem.reason.startswith("'provider:acme.look' starts with")


def test_service_request_listing() -> None:
    pytest.importorskip("fastapi")
    from fastapi.exceptions import RequestValidationError

    from rated.service.errors import validation_detail

    error = {"loc": ("body", "k"), "msg": "Value error, too big", "type": "value_error"}
    exc = RequestValidationError([error])
    assert validation_detail(exc) == "body.k: too big"
