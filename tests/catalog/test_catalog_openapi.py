"""OpenAPI 3.0/3.1 and Swagger 2.0 documents load as one tool per operation, with $refs inlined safely."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from rated.catalog.loaders import load_catalog
from rated.catalog.schema import AuthType
from rated.errors import CatalogError

PET = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "description": "The pet's name"},
        "parent": {"$ref": "#/components/schemas/Pet"},  # recursive
    },
    "required": ["name"],
}

SPEC_30: dict[str, Any] = {
    "openapi": "3.0.3",
    "info": {"title": "Petstore", "version": "1"},
    "servers": [
        {
            "url": "https://{region}.pets.example.com/{version}",
            "variables": {"region": {"default": "eu"}, "version": {"default": "v2"}},
        }
    ],
    "security": [{"key": []}],
    "components": {
        "securitySchemes": {"key": {"type": "apiKey", "in": "header", "name": "X-API-Key"}},
        "schemas": {
            "Pet": PET,
            "A": {"$ref": "#/components/schemas/B"},
            "B": {"$ref": "#/components/schemas/A"},
        },
        "parameters": {"Limit": {"name": "limit", "in": "query", "schema": {"type": "integer"}}},
    },
    "paths": {
        "/pets/{petId}": {
            "parameters": [{"name": "petId", "in": "path", "required": True, "schema": {"type": "string"}}],
            "get": {
                "operationId": "getPet",
                "summary": "Get a pet",
                "description": "Find a pet by id.",
                "tags": ["pets"],
            },
            "put": {
                "summary": "Update a pet",
                "requestBody": {
                    "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Pet"}}}
                },
            },
        },
        "/pets": {
            "get": {
                "operationId": "listPets",
                "parameters": [{"$ref": "#/components/parameters/Limit"}],
                "security": [],
            },
            "post": {
                "operationId": "cyclic",
                "requestBody": {
                    "content": {"application/json": {"schema": {"$ref": "#/components/schemas/A"}}}
                },
            },
        },
        "/ext": {"get": {"operationId": "external", "parameters": [{"$ref": "other.json#/Limit"}]}},
    },
}


def test_openapi_30_operations_become_tools() -> None:
    tools = {t.id: t for t in load_catalog(SPEC_30)}
    assert list(tools) == [
        "openapi:getPet",
        "openapi:put_pets_petId",
        "openapi:listPets",
        "openapi:cyclic",
        "openapi:external",
    ]
    get = tools["openapi:getPet"]
    assert get.description == "Get a pet Find a pet by id."
    assert get.endpoint == "https://eu.pets.example.com/v2/pets/{petId}"
    assert get.provider == "eu.pets.example.com" and get.tags == ("pets",)
    assert (get.auth.type, get.auth.credential) == (AuthType.API_KEY, "X-API-Key")
    assert get.parameters["properties"]["petId"]["type"] == "string"  # from the path-level parameters
    assert get.parameters["required"] == ["petId"]
    assert get.extra == {"method": "GET", "path": "/pets/{petId}"}
    assert tools["openapi:listPets"].auth.type is AuthType.NONE  # security: [] overrides the document's
    assert tools["openapi:listPets"].parameters["properties"]["limit"]["type"] == "integer"


def test_recursive_and_unresolvable_refs_stay_refs() -> None:
    tools = {t.id: t for t in load_catalog(SPEC_30)}
    put = tools["openapi:put_pets_petId"].parameters
    assert set(put["properties"]) == {"petId", "name", "parent"}  # the Pet body merged in
    assert put["properties"]["name"]["description"] == "The pet's name"
    parent = put["properties"]["parent"]  # inlined once, then the cycle is cut
    assert parent["properties"]["parent"] == {"$ref": "#/components/schemas/Pet"}
    assert tools["openapi:cyclic"].parameters["properties"]["body"] == {"$ref": "#/components/schemas/A"}
    assert tools["openapi:external"].parameters["properties"] == {}


def test_swagger_20_and_openapi_31(tmp_path: Path) -> None:
    swagger = {
        "swagger": "2.0",
        "info": {"title": "Shop"},
        "host": "api.shop.example",
        "basePath": "/v1",
        "schemes": ["https"],
        "securityDefinitions": {"basic": {"type": "basic"}},
        "security": [{"basic": []}],
        "definitions": {
            "Item": {"type": "object", "properties": {"sku": {"type": "string"}}, "required": ["sku"]}
        },
        "paths": {
            "/items": {
                "post": {
                    "operationId": "createItem",
                    "parameters": [
                        {
                            "name": "item",
                            "in": "body",
                            "required": True,
                            "schema": {"$ref": "#/definitions/Item"},
                        },
                        {
                            "name": "dry_run",
                            "in": "query",
                            "type": "boolean",
                            "description": "Only validate.",
                        },
                    ],
                }
            }
        },
    }
    (tool,) = load_catalog(swagger, source_name="shop")
    assert tool.id == "shop:createItem" and tool.source == "shop"
    assert tool.endpoint == "https://api.shop.example/v1/items" and tool.auth.type is AuthType.BASIC
    props = tool.parameters["properties"]
    assert props["sku"] == {"type": "string"} and props["dry_run"]["description"] == "Only validate."
    assert tool.parameters["required"] == ["sku"]
    spec_31 = {
        "openapi": "3.1.0",
        "info": {"title": "Untitled"},
        "paths": {"/health": {"get": {"responses": {}}}, "/": {"delete": {}}},
    }
    p = tmp_path / "openapi.json"
    p.write_text(json.dumps(spec_31))
    tools = load_catalog(p)
    assert [t.id for t in tools] == ["openapi:get_health", "openapi:delete"]
    assert tools[0].provider == "Untitled" and tools[0].endpoint is None


def test_huge_interlinked_spec_stays_bounded() -> None:
    schemas = {
        f"S{i}": {
            "type": "object",
            "properties": {
                "a": {"$ref": f"#/components/schemas/S{(i + 1) % 20}"},
                "b": {"$ref": f"#/components/schemas/S{(i + 2) % 20}"},
            },
        }
        for i in range(20)
    }
    body = {"content": {"application/json": {"schema": {"$ref": "#/components/schemas/S0"}}}}
    spec = {
        "openapi": "3.0.0",
        "info": {"title": "Big"},
        "components": {"schemas": schemas},
        "paths": {f"/r{i}": {"post": {"operationId": f"op{i}", "requestBody": body}} for i in range(200)},
    }
    tools = load_catalog(spec)
    assert len(tools) == 200
    assert max(len(json.dumps(t.parameters)) for t in tools) < 20_000


def test_malformed_openapi_lists_every_problem(tmp_path: Path) -> None:
    spec = {
        "openapi": "3.0.0",
        "info": {},
        "paths": {"/a": "oops", "/b": {"get": [], "post": {"operationId": "ok"}}},
    }
    with pytest.raises(CatalogError) as exc:
        load_catalog(spec)
    assert [(p.location, p.field) for p in exc.value.problems] == [("paths./a", ""), ("paths./b.get", "")]
    with pytest.raises(CatalogError, match="'paths'"):
        load_catalog({"swagger": "2.0", "info": {}})
    y = tmp_path / "openapi.yaml"
    y.write_text("openapi: 3.0.0\n")
    with pytest.raises(CatalogError, match="YAML"):
        load_catalog(y)


@pytest.mark.parametrize("required", [True, 5, None, "name"])
def test_a_body_schema_whose_required_is_not_a_list_still_loads(required: Any) -> None:
    """JSON Schema draft 3 wrote ``"required": true`` on the schema itself: not a list of names, so it
    names no required property (it was a TypeError traceback out of load_catalog)."""
    body = {"type": "object", "properties": {"name": {"type": "string"}}, "required": required}
    spec = {
        "openapi": "3.0.3",
        "paths": {
            "/pets": {
                "post": {
                    "operationId": "add",
                    "requestBody": {"content": {"application/json": {"schema": body}}},
                }
            }
        },
    }
    (tool,) = load_catalog(spec)
    assert list(tool.parameters["properties"]) == ["name"]
    assert "required" not in tool.parameters
