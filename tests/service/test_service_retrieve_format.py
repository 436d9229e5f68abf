"""``"format"`` on POST /retrieve and /retrieve/batch, and on MCP find_tools: each hit also as a model API's
tool definition with the name it is called by; without it, the answers are what they always were."""

from __future__ import annotations

import json
import re

import anyio
import pytest
from fastapi.testclient import TestClient

from rated import Tool
from rated.catalog.export import FORMATS
from rated.catalog.loaders import load_catalog
from rated.encode.testing import HashEncoder
from rated.retriever import Retriever
from rated.service import Settings, create_app

QUERY = "send an email message"
SCHEMA = {"type": "object", "properties": {"to": {"type": "string"}}}
CATALOG = [
    Tool(id="gmail.send", name="send_email", description="Send an email message", parameters=SCHEMA),
    Tool(id="outlook.send", name="send_email", description="Send an email message now"),
    Tool(id="n8n:Slack/send message", name="send message", description="Send a message on Slack"),
    Tool(id="weather", name="weather_forecast", description="Weather forecast for a city"),
]
# the keys of a hit, in order, as clients have always received them
HIT_KEYS = [
    "rank",
    "id",
    "name",
    "description",
    "parameters",
    "endpoint",
    "source",
    "provider",
    "score",
    "semantic",
    "bandit",
    "prior",
    "healthy",
    "components",
]


@pytest.fixture
def retriever():
    r = Retriever.from_catalog(CATALOG, encoder=HashEncoder(64), clock=lambda: 1000.0)
    yield r
    r.close()


@pytest.fixture
def client(retriever):
    with TestClient(create_app(Settings(default_k=3, max_k=4, max_batch=2), retriever=retriever)) as c:
        yield c


def without_format(doc: dict) -> dict:
    """``doc`` with what a format adds taken out."""
    for hit in doc["hits"]:
        del hit["call_name"], hit["definition"]
    return doc


def test_without_format_the_answer_is_unchanged(client):
    plain = client.post("/retrieve", json={"query": QUERY, "k": 3})
    assert b"call_name" not in plain.content and b"definition" not in plain.content
    assert all(list(hit) == HIT_KEYS for hit in plain.json()["hits"])
    assert client.post("/retrieve", json={"query": QUERY, "k": 3, "format": None}).content == plain.content
    batch = client.post("/retrieve/batch", json={"queries": [QUERY], "k": 3})
    assert b"call_name" not in batch.content
    assert batch.json()["results"][0] == plain.json()


@pytest.mark.parametrize("fmt", FORMATS)
def test_format_adds_each_hits_definition_and_call_name_and_nothing_else(client, fmt):
    plain = client.post("/retrieve", json={"query": QUERY, "k": 3}).json()
    doc = client.post("/retrieve", json={"query": QUERY, "k": 3, "format": fmt}).json()
    pattern = r"[A-Za-z0-9_.-]{1,128}" if fmt == "mcp" else r"[A-Za-z0-9_-]{1,64}"
    names = [h["call_name"] for h in doc["hits"]]
    assert len(set(names)) == 3 and all(re.fullmatch(pattern, n) for n in names)
    for hit in doc["hits"]:
        assert list(hit) == [*HIT_KEYS, "call_name", "definition"]
        definition = hit["definition"]
        assert (definition["function"] if fmt == "openai" else definition)["name"] == hit["call_name"]
    # the definitions load back as the tools they define
    definitions = [h["definition"] for h in doc["hits"]]
    loaded = load_catalog({"tools": definitions})
    assert [t.name for t in loaded] == names
    assert [t.description for t in loaded] == [h["description"] for h in doc["hits"]]
    assert without_format(doc) == plain


def test_names_shared_or_invalid_are_made_valid_and_unique(client):
    doc = client.post("/retrieve", json={"query": QUERY, "k": 3, "format": "openai"}).json()
    assert {h["id"]: h["call_name"] for h in doc["hits"]} == {
        "gmail.send": "gmail_send",  # two tools are named send_email: each called by its id made valid
        "outlook.send": "outlook_send",
        "n8n:Slack/send message": "send_message",
    }


def test_batch_takes_a_format_for_every_result(client):
    body = {"queries": [QUERY, "weather in Oslo"], "k": 1, "format": "anthropic"}
    doc = client.post("/retrieve/batch", json=body).json()
    for result in doc["results"]:
        hit = result["hits"][0]
        assert hit["definition"]["name"] == hit["call_name"]
        assert hit["definition"]["input_schema"]["type"] == "object"
    assert doc["results"][1]["hits"][0]["call_name"] == "weather_forecast"


@pytest.mark.parametrize("bad", ["gemini", "OPENAI", 1, True, ["openai"]])
def test_an_unknown_format_is_a_422_naming_the_formats(client, bad):
    r = client.post("/retrieve", json={"query": QUERY, "format": bad})
    assert r.status_code == 422 and r.json()["error"] == "RequestValidationError"
    assert "format" in r.json()["detail"] and "openai_responses" in r.json()["detail"]
    batch = client.post("/retrieve/batch", json={"queries": [QUERY], "format": bad})
    assert batch.status_code == 422


def test_the_format_is_documented(client):
    schemas = client.get("/openapi.json").json()["components"]["schemas"]
    enum = schemas["RetrieveIn"]["properties"]["format"]["anyOf"][0]["enum"]
    assert enum == list(FORMATS)
    hit = schemas.get("HitOut") or schemas["HitOut-Output"]
    assert {"call_name", "definition"} <= set(hit["properties"]) and "call_name" not in hit["required"]


# -------------------------------------------------------------------------------------------------- MCP


def test_mcp_find_tools_takes_a_format(retriever):
    pytest.importorskip("mcp")
    from mcp import Client

    from rated.service.mcp_server import build_mcp_server

    server = build_mcp_server(retriever)

    async def session() -> None:
        async with Client(server) as client:
            listed = {t.name: t for t in (await client.list_tools()).tools}
            fmt_schema = listed["find_tools"].input_schema["properties"]["format"]
            assert json.dumps(fmt_schema).count("openai_responses") == 1
            plain = await client.call_tool("find_tools", {"query": QUERY, "k": 3})
            assert all(list(h) == HIT_KEYS for h in plain.structured_content["hits"])
            found = await client.call_tool("find_tools", {"query": QUERY, "k": 3, "format": "mcp"})
            assert not found.is_error, found.content
            hits = found.structured_content["hits"]
            assert {h["id"]: h["call_name"] for h in hits} == {
                "gmail.send": "gmail.send",  # dots are valid MCP names
                "outlook.send": "outlook.send",
                "n8n:Slack/send message": "send_message",
            }
            assert all(h["definition"]["inputSchema"]["type"] == "object" for h in hits)
            assert without_format({"hits": hits}) == {"hits": plain.structured_content["hits"]}
            bad = await client.call_tool("find_tools", {"query": QUERY, "format": "gemini"})
            assert bad.is_error and "openai_responses" in bad.content[0].text

    anyio.run(session)
