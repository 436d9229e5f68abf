"""``PUT /tools``: sync the live catalog with a whole one. New tools are added, changed ones updated in
place with their learned state kept, ``prune`` removes the rest; errors change nothing, the changes are
counted, and the API key comes first."""

from __future__ import annotations

import re

import pytest
from fastapi.testclient import TestClient

from rated import Tool
from rated.encode.testing import HashEncoder
from rated.retriever import Retriever
from rated.service import Settings, create_app

KEY = "s3cret-key"
TOOLS = [
    Tool(id="mail.a", name="send_email", description="Send an email message"),
    Tool(id="weather", name="weather_forecast", description="Weather forecast for a city"),
    Tool(id="ns/with/slash", name="calendar", description="Create a calendar event"),
]
RECORDS = [t.model_dump(mode="json") for t in TOOLS]
FLIGHTS = {**RECORDS[1], "description": "Book a flight ticket between two airports"}
SMS = {"id": "sms", "name": "send_sms", "description": "Send an SMS text message to a phone number"}


@pytest.fixture
def db(tmp_path) -> str:
    path = str(tmp_path / "sync.db")
    Retriever.from_catalog(TOOLS, db=path, encoder=HashEncoder(64)).close()
    return path


@pytest.fixture
def client(db):
    with TestClient(create_app(Settings(db=db))) as c:
        yield c


def metric(text: str, sample: str) -> float:
    found = re.search(rf"^{re.escape(sample)} (\S+)$", text, re.MULTILINE)
    assert found, f"{sample} not exposed"
    return float(found.group(1))


def test_put_adds_updates_and_keeps_learned_state(store_contents, client, db):
    for outcome in ("tool_error", "timeout"):
        body = {"tool_id": "weather", "outcome": outcome, "query": "weather in Oslo"}
        assert client.post("/feedback", json=body).status_code == 200
    states = store_contents(db)[5]
    r = client.put("/tools", json={"tools": [RECORDS[0], FLIGHTS, RECORDS[2], SMS]})
    assert r.status_code == 200, r.text
    assert r.json() == {
        "added": ["sms"],
        "updated": ["weather"],
        "removed": [],
        "unchanged": ["mail.a", "ns/with/slash"],
        "tools": 4,
    }
    assert store_contents(db)[5] == states  # weather keeps what it learned: same tool, new text
    assert client.get("/tools/weather").json()["failures"] == 2
    hits = client.post("/retrieve", json={"query": "book a flight ticket", "k": 4}).json()["hits"]
    best = max(hits, key=lambda h: h["semantic"])  # ranked down by its failures, matched by its new text
    assert best["id"] == "weather" and best["description"] == FLIGHTS["description"]


def test_put_with_prune_removes_the_tools_not_given(client, db):
    r = client.put("/tools", json={"tools": [RECORDS[0], SMS], "prune": True})
    assert r.status_code == 200 and r.json()["removed"] == ["weather", "ns/with/slash"]
    assert r.json()["tools"] == 2 and client.get("/tools/weather").status_code == 404


def test_an_identical_put_changes_nothing(store_contents, client, db):
    body = {"tools": [RECORDS[0], FLIGHTS, SMS], "prune": True}
    assert client.put("/tools", json=body).status_code == 200
    before = store_contents(db)
    r = client.put("/tools", json=body)
    assert r.status_code == 200 and r.json()["unchanged"] == ["mail.a", "weather", "sms"]
    assert store_contents(db) == before


def test_another_retriever_on_the_store_answers_as_a_fresh_open(client, db):
    with Retriever.open(db) as other:
        other.retrieve("weather forecast")
        assert client.put("/tools", json={"tools": [FLIGHTS, SMS], "prune": True}).status_code == 200
        with Retriever.open(db) as fresh:
            for query in ("book a flight ticket", "send an sms", "calendar"):
                got = [(h.id, h.score) for h in other.retrieve(query, k=3)]
                assert got == [(h.id, h.score) for h in fresh.retrieve(query, k=3)]


@pytest.mark.parametrize(
    ("body", "status", "error", "said"),
    [
        ({"tools": [{"id": "x", "name": "x"}], "prune": True}, 409, "LastToolError", "every indexed tool"),
        ({"tools": [SMS, SMS]}, 422, "CatalogError", "'sms'"),
        ({"tools": []}, 422, "CatalogError", "no tools"),
        ({"tools": [SMS], "prune": "yes"}, 422, "RequestValidationError", "prune"),
        ({"tools": [SMS], "extra": 1}, 422, "RequestValidationError", "extra"),
    ],
)
def test_errors_map_to_status_codes_and_change_nothing(store_contents, client, db, body, status, error, said):
    before = store_contents(db)
    r = client.put("/tools", json=body)
    assert r.status_code == status, r.text
    assert r.json()["error"] == error and said in r.json()["detail"]
    assert store_contents(db) == before


def test_changes_are_counted_by_kind(client):
    text = client.get("/metrics").text
    assert metric(text, 'rated_catalog_changes_total{change="updated"}') == 0
    body = {"tools": [RECORDS[0], FLIGHTS, SMS, {"id": "fax", "name": "send_fax"}], "prune": True}
    assert client.put("/tools", json=body).status_code == 200
    assert client.put("/tools", json=body).status_code == 200  # nothing to do: nothing counted
    text = client.get("/metrics").text
    assert metric(text, 'rated_catalog_changes_total{change="added"}') == 2
    assert metric(text, 'rated_catalog_changes_total{change="updated"}') == 1
    assert metric(text, 'rated_catalog_changes_total{change="removed"}') == 1
    assert metric(text, 'rated_http_requests_total{route="/tools",status="200"}') == 2


def test_the_openapi_schema_documents_put(client):
    put = client.get("/openapi.json").json()["paths"]["/tools"]["put"]
    assert put["operationId"] == "sync_tools" and {"200", "409", "413", "422"} <= set(put["responses"])


def test_the_api_key_comes_first(store_contents, db):
    before = store_contents(db)
    with TestClient(create_app(Settings(db=db, api_key=KEY))) as c:
        for body in ({"tools": [SMS], "prune": True}, {"tools": [{"name": ""}], "junk": 1}):
            r = c.put("/tools", json=body, headers={"Authorization": "Bearer wrong"})
            assert r.status_code == 401 and r.json()["error"] == "Unauthorized"
        assert store_contents(db) == before
        auth = {"Authorization": f"Bearer {KEY}"}
        assert c.put("/tools", json={"tools": [SMS]}, headers=auth).status_code == 200
    with Retriever.open(db) as r:
        assert len(r) == 4
