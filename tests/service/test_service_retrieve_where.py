"""``"where"`` on POST /retrieve and /retrieve/batch: the library's filtered answer, strict validation
(unknown keys and wrong types are a 422 naming them), unknown ids a 404 naming the key, nothing allowed an
empty 200, and the field documented in the OpenAPI schema."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from rated.encode.testing import HashEncoder
from rated.retriever import Retriever
from rated.service import Settings, create_app
from rated.tool_filter import FILTER_KEYS

QUERY = "send an email message"
FILTERS = [
    {"exclude": ["gmail.send"]},
    {"exclude": "gmail.send"},
    {"tools": ["weather", "slack.post", "smtp.send"]},
    {"source": "N8N"},
    {"tags": ["office", "chat"]},
    {"provider": "smtp.send"},  # a tool without a provider is its own, under its id
    {"auth": ["oauth2", "API_KEY"], "exclude": ["outlook.send"]},
    {"source": ["mcp", "langchain"], "tags": "mail"},
]


@pytest.fixture(scope="module")
def retriever(filter_catalog):
    with Retriever.from_catalog(filter_catalog, encoder=HashEncoder(64), clock=lambda: 1000.0) as r:
        yield r


@pytest.fixture(scope="module")
def client(retriever):
    with TestClient(create_app(Settings(default_k=3, max_k=5, max_batch=2), retriever=retriever)) as c:
        yield c


def ranked(hits) -> list[tuple[str, float]]:
    return [(h["id"], h["score"]) if isinstance(h, dict) else (h.id, h.score) for h in hits]


@pytest.mark.parametrize("where", FILTERS)
def test_the_filtered_answer_is_the_librarys(client, retriever, where):
    resp = client.post("/retrieve", json={"query": QUERY, "k": 3, "where": where})
    assert resp.status_code == 200, resp.text
    doc = resp.json()
    expected = retriever.retrieve(QUERY, k=3, where=where)
    assert expected and ranked(doc["hits"]) == ranked(expected)
    assert doc["count"] == len(expected) and [h["rank"] for h in doc["hits"]] == list(
        range(1, len(expected) + 1)
    )
    assert ranked(expected) != ranked(retriever.retrieve(QUERY, k=3))  # the filter changed the answer


def test_excluding_the_best_tool_gives_the_next_ones(client):
    top = [h["id"] for h in client.post("/retrieve", json={"query": QUERY, "k": 4}).json()["hits"]]
    doc = client.post("/retrieve", json={"query": QUERY, "k": 3, "where": {"exclude": [top[0]]}}).json()
    assert [h["id"] for h in doc["hits"]] == top[1:4]


def test_the_batch_takes_one_filter_for_every_query(client, retriever):
    queries = [QUERY, "weather in Oslo"]
    where = {"source": ["n8n", "mcp"], "exclude": "smtp.send"}
    resp = client.post("/retrieve/batch", json={"queries": queries, "k": 2, "where": where})
    assert resp.status_code == 200, resp.text
    expected = retriever.retrieve_many(queries, k=2, where=where)
    assert [ranked(r["hits"]) for r in resp.json()["results"]] == [ranked(e) for e in expected]


def test_no_filter_an_empty_one_and_null_answer_as_without(client):
    plain = client.post("/retrieve", json={"query": QUERY, "k": 3}).content
    for where in ({}, None, {"exclude": []}, {"source": None}):
        assert client.post("/retrieve", json={"query": QUERY, "k": 3, "where": where}).content == plain


@pytest.mark.parametrize("where", [{"tools": []}, {"source": "crewai"}, {"tags": "mail", "auth": "none"}])
def test_a_filter_that_allows_no_tool_is_an_empty_200(client, where):
    for extra in ({}, {"format": "openai"}):
        resp = client.post("/retrieve", json={"query": QUERY, "where": where, **extra})
        assert resp.status_code == 200, resp.text
        assert resp.json() | {"k": None} == {
            "query": QUERY,
            "k": None,
            "count": 0,
            "degraded": False,
            "hits": [],
        }
    batch = client.post("/retrieve/batch", json={"queries": [QUERY, "weather"], "where": where})
    assert batch.status_code == 200 and [r["hits"] for r in batch.json()["results"]] == [[], []]


@pytest.mark.parametrize(
    ("where", "problem"),
    [
        ({"platform": "n8n"}, "body.where.platform: Extra inputs are not permitted"),
        ({"exclude": 5}, "body.where.exclude: must be a string or a list of strings, got a number"),
        (
            {"exclude": ["weather", 1]},
            "body.where.exclude: must be a string or a list of strings; item 1 is a number",
        ),
        ({"tags": {"mail": True}}, "body.where.tags: must be a string or a list of strings, got an object"),
        ({"auth": [None] * 50}, "body.where.auth: must be a string or a list of strings; item 0 is null"),
        ("mcp", "body.where: Input should be a valid dictionary"),
        ([{"source": "mcp"}], "body.where: Input should be a valid dictionary"),
    ],
)
def test_unknown_keys_and_wrong_types_are_a_422_naming_them(client, where, problem):
    for path, body in (("/retrieve", {"query": QUERY}), ("/retrieve/batch", {"queries": [QUERY]})):
        resp = client.post(path, json={**body, "where": where})
        assert resp.status_code == 422, resp.text
        assert resp.json()["error"] == "RequestValidationError" and problem in resp.json()["detail"]
        assert ";" not in resp.json()["detail"].replace(problem, "")  # one problem, said once


def test_a_bad_auth_kind_is_a_422_and_an_unknown_id_a_404_naming_the_key(client):
    resp = client.post("/retrieve", json={"query": QUERY, "where": {"auth": ["oauth2", "token"]}})
    assert resp.status_code == 422
    assert resp.json() == {
        "error": "QueryError",
        "detail": "filter 'auth': unknown auth kind(s) ['token']; expected any of "
        "api_key, basic, none, oauth2, other, unknown",
    }
    for path, body in (("/retrieve", {"query": QUERY}), ("/retrieve/batch", {"queries": [QUERY]})):
        resp = client.post(path, json={**body, "where": {"tools": ["weather", "nope"]}})
        assert resp.status_code == 404, resp.text
        assert resp.json() == {
            "error": "UnknownToolError",
            "detail": "filter 'tools': unknown tool id: 'nope'",
        }
        # an id to exclude that the catalog does not hold (removed meanwhile) excludes nothing
        resp = client.post(path, json={**body, "where": {"exclude": ["nope"]}})
        assert resp.status_code == 200 and resp.json() == client.post(path, json=body).json()


def test_the_field_is_documented_in_the_openapi_schema(client):
    spec = client.get("/openapi.json").json()
    schemas = spec["components"]["schemas"]
    for body in ("RetrieveIn", "RetrieveManyIn"):
        where = schemas[body]["properties"]["where"]
        assert {"$ref": "#/components/schemas/WhereIn"} in where["anyOf"] and "rank only" in where[
            "description"
        ]
    where_in = schemas["WhereIn"]
    assert list(where_in["properties"]) == list(FILTER_KEYS) and where_in["additionalProperties"] is False
    assert all("a string or a list of strings" in p["description"] for p in where_in["properties"].values())
    assert "api_key" in where_in["properties"]["auth"]["description"]
    for path in ("/retrieve", "/retrieve/batch"):
        assert {"404", "422"} <= set(spec["paths"][path]["post"]["responses"])
