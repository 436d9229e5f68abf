"""``POST /tools`` and ``DELETE /tools/{tool_id}``: the live catalog changes, every other tool keeps what it
learned, other retrievers on the store follow, errors change nothing, and the API key comes first."""

from __future__ import annotations

import json
import re
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest
from fastapi.testclient import TestClient

from rated import Tool
from rated.encode.testing import HashEncoder
from rated.errors import ModelError
from rated.retriever import Retriever
from rated.service import Settings, create_app

KEY = "s3cret-key"
TOOLS = [
    Tool(id="mail.a", name="send_email", description="Send an email message"),
    Tool(id="mail.b", name="email_send", description="Send an email message"),
    Tool(id="weather", name="weather_forecast", description="Weather forecast for a city"),
    Tool(id="ns/with/slash", name="calendar", description="Create a calendar event"),
]
SMS = {"id": "sms", "name": "send_sms", "description": "Send an SMS text message to a phone number"}
SMS_QUERY = "send an sms text message to a phone"


@pytest.fixture
def db(tmp_path) -> str:
    path = str(tmp_path / "edit.db")
    Retriever.from_catalog(TOOLS, db=path, encoder=HashEncoder(64)).close()
    return path


@pytest.fixture
def client(db):
    with TestClient(create_app(Settings(db=db))) as c:
        yield c


def rows(c: TestClient) -> dict[str, dict]:
    """GET /tools by id, without the components (they move with the wall clock as a failing tool
    recovers; the stored states are compared byte for byte instead)."""
    r = c.get("/tools")
    assert r.status_code == 200
    return {t["id"]: {k: v for k, v in t.items() if k != "components"} for t in r.json()["data"]}


def top(c: TestClient, query: str) -> str:
    r = c.post("/retrieve", json={"query": query, "k": 1})
    assert r.status_code == 200
    return r.json()["hits"][0]["id"]


def metric(text: str, sample: str) -> float:
    found = re.search(rf"^{re.escape(sample)} (\S+)$", text, re.MULTILINE)
    assert found, f"{sample} not exposed"
    return float(found.group(1))


def test_post_adds_tools_that_retrieve_finds(client):
    assert top(client, SMS_QUERY) != "sms"
    fax = {"id": "fax", "name": "send_fax", "description": "Send a fax"}
    r = client.post("/tools", json={"tools": [SMS, fax]})
    assert r.status_code == 201
    assert r.json() == {"added": ["sms", "fax"], "count": 2, "tools": 6}
    assert top(client, SMS_QUERY) == "sms"
    assert client.get("/tools/sms").json()["name"] == "send_sms"


def test_post_takes_openai_and_mcp_definitions_as_rated_add_does(client):
    body = {
        "tools": [
            {"type": "function", "function": {"name": "get_stock_price", "description": "Stock price"}},
            {"name": "book_flight", "description": "Book a flight", "inputSchema": {"type": "object"}},
        ]
    }
    r = client.post("/tools", json=body)
    assert r.status_code == 201 and r.json()["added"] == ["openai:get_stock_price", "mcp:book_flight"]
    assert top(client, "book a flight") == "mcp:book_flight"


def test_learned_state_of_other_tools_survives_an_add_and_a_remove(store_contents, client, db):
    for outcome in ("tool_error", "timeout"):
        body = {"tool_id": "weather", "outcome": outcome, "query": "weather in Oslo"}
        assert client.post("/feedback", json=body).status_code == 200
    assert client.post("/feedback", json={"tool_id": "mail.a", "outcome": "success"}).status_code == 200
    before, states = rows(client), store_contents(db)[5]
    assert before["weather"]["healthy"] is False and before["weather"]["failures"] == 2

    assert client.post("/tools", json={"tools": [SMS]}).status_code == 201
    after = rows(client)
    assert {k: after[k] for k in before} == before and store_contents(db)[5] == states

    r = client.delete("/tools/mail.a")
    assert r.status_code == 200 and r.json() == {"removed": "mail.a", "tools": 4}
    after = rows(client)
    assert set(after) == {"mail.b", "weather", "ns/with/slash", "sms"}
    assert {k: after[k] for k in after if k != "sms"} == {k: v for k, v in before.items() if k != "mail.a"}
    assert "mail.a" in states and store_contents(db)[5] == {k: v for k, v in states.items() if k != "mail.a"}
    assert client.get("/tools/mail.a").status_code == 404


def test_delete_takes_an_id_with_slashes(client):
    r = client.delete("/tools/ns/with/slash")
    assert r.status_code == 200 and r.json()["removed"] == "ns/with/slash"
    assert client.get("/tools/ns/with/slash").status_code == 404


def test_another_retriever_on_the_store_follows_and_the_service_follows_it(client, db):
    with Retriever.open(db) as other:  # another replica, or `rated search` in a shell
        assert other.retrieve(SMS_QUERY, k=1)[0].id != "sms"
        assert client.post("/tools", json={"tools": [SMS]}).status_code == 201
        assert other.retrieve(SMS_QUERY, k=1)[0].id == "sms"
        assert client.delete("/tools/weather").status_code == 200
        assert "weather" not in {t.tool.id for t in other.tools()}
        # and the other way round: the service serves what the other process changed
        other.add_tools([Tool(id="fax", name="send_fax", description="Send a fax document")])
        other.remove_tools(["sms"])
    assert top(client, "send a fax document") == "fax"
    assert "sms" not in rows(client)


@pytest.mark.parametrize(
    ("request_args", "status", "error", "said"),
    [
        (
            ("post", "/tools", {"tools": [SMS, {"id": "weather", "name": "w"}]}),
            409,
            "ToolExistsError",
            "'weather'",
        ),
        (("post", "/tools", {"tools": [SMS, SMS]}), 422, "CatalogError", "'sms'"),
        (
            ("post", "/tools", {"tools": [SMS, {"id": "x", "name": ""}, {"name": "y", "tags": 5}]}),
            422,
            "CatalogError",
            "3 problem(s)",
        ),
        (("post", "/tools", {"tools": []}), 422, "CatalogError", "no tools"),
        (("post", "/tools", {"tools": [SMS, 3]}), 422, "RequestValidationError", "tools.1"),
        (("post", "/tools", {"tools": [SMS], "extra": 1}), 422, "RequestValidationError", "extra"),
        (("post", "/tools", [SMS]), 422, "RequestValidationError", "body"),
        (("delete", "/tools/nope", None), 404, "UnknownToolError", "'nope'"),
    ],
)
def test_errors_map_to_status_codes_and_change_nothing(
    store_contents, client, db, request_args, status, error, said
):
    method, path, body = request_args
    before = store_contents(db)
    r = client.request(method, path, json=body)
    assert r.status_code == status, r.text
    assert r.json()["error"] == error and said in r.json()["detail"]
    assert store_contents(db) == before


def test_invalid_tools_are_listed_each_with_its_place(client):
    r = client.post("/tools", json={"tools": [SMS, {"id": "x", "name": ""}, {"name": "y", "tags": 5}]})
    detail = r.json()["detail"]
    assert r.status_code == 422 and "tools[1], field 'name'" in detail and "tools[2], field 'tags'" in detail


def test_the_last_tool_cannot_be_removed(store_contents, client, db):
    for tool_id in ("mail.a", "mail.b", "weather"):
        assert client.delete(f"/tools/{tool_id}").status_code == 200
    before = store_contents(db)
    r = client.delete("/tools/ns/with/slash")
    assert (
        r.status_code == 409 and r.json()["error"] == "LastToolError" and "every tool" in r.json()["detail"]
    )
    assert store_contents(db) == before and list(rows(client)) == ["ns/with/slash"]


class _FailingEncoder(HashEncoder):
    def encode_tools(self, texts, *, batch_size=64, progress=False):
        raise ModelError("the model went away")


def test_an_encoder_failure_stores_nothing(store_contents, db):
    with Retriever.open(db, encoder=_FailingEncoder(64)) as r, TestClient(create_app(retriever=r)) as c:
        before = store_contents(db)
        resp = c.post("/tools", json={"tools": [SMS]})
        assert resp.status_code == 500 and resp.json()["error"] == "ModelError"
        assert store_contents(db) == before and "sms" not in rows(c)


class _SlowEncoder(HashEncoder):
    """Tool encoding waits for a signal: a stand-in for a real model encoding many new tools."""

    def __init__(self, dim: int):
        super().__init__(dim)
        self.started, self.release = threading.Event(), threading.Event()

    def encode_tools(self, texts, *, batch_size=64, progress=False):
        self.started.set()
        assert self.release.wait(10), "never released"
        return super().encode_tools(texts, batch_size=batch_size, progress=progress)


def test_retrieval_is_served_while_new_tools_are_encoded(db):
    encoder = _SlowEncoder(64)
    with Retriever.open(db, encoder=encoder) as r, TestClient(create_app(retriever=r)) as c:
        with ThreadPoolExecutor(1) as pool:
            adding = pool.submit(c.post, "/tools", json={"tools": [SMS]})
            assert encoder.started.wait(10)
            try:  # neither the event loop nor the retriever is held up by the encoding
                assert top(c, "send an email message") in {"mail.a", "mail.b"}
                assert (
                    c.post("/feedback", json={"tool_id": "weather", "outcome": "success"}).status_code == 200
                )
                assert not adding.done()
            finally:
                encoder.release.set()
            assert adding.result(10).status_code == 201
        assert top(c, SMS_QUERY) == "sms"


def test_changes_are_counted_in_the_metrics(client):
    text = client.get("/metrics").text
    assert metric(text, 'rated_catalog_changes_total{change="added"}') == 0
    assert client.post("/tools", json={"tools": [SMS, {"id": "fax", "name": "send_fax"}]}).status_code == 201
    assert client.post("/tools", json={"tools": [SMS]}).status_code == 409
    assert client.delete("/tools/fax").status_code == 200
    assert client.delete("/tools/fax").status_code == 404
    text = client.get("/metrics").text
    assert metric(text, 'rated_catalog_changes_total{change="added"}') == 2
    assert metric(text, 'rated_catalog_changes_total{change="removed"}') == 1
    assert metric(text, 'rated_http_requests_total{route="/tools",status="201"}') == 1
    assert metric(text, 'rated_http_requests_total{route="/tools",status="409"}') == 1
    assert metric(text, 'rated_http_requests_total{route="/tools/{tool_id:path}",status="200"}') == 1
    assert metric(text, 'rated_http_requests_total{route="/tools/{tool_id:path}",status="404"}') == 1
    assert metric(text, 'rated_errors_total{error="ToolExistsError"}') == 1
    assert metric(text, 'rated_errors_total{error="UnknownToolError"}') == 1
    assert metric(text, "rated_tools") == 5


def test_the_openapi_schema_documents_the_new_operations(client):
    paths = client.get("/openapi.json").json()["paths"]
    post, delete = paths["/tools"]["post"], paths["/tools/{tool_id}"]["delete"]
    assert post["operationId"] == "add_tools" and {"201", "409", "413", "422"} <= set(post["responses"])
    assert delete["operationId"] == "remove_tool" and {"200", "404", "409"} <= set(delete["responses"])


# ---- the API key ---------------------------------------------------------------------------------------
KEYED = [  # (method, path, body): valid, invalid and unknown, all refused alike without the key
    ("post", "/tools", {"tools": [SMS]}),
    ("post", "/tools", {"tools": [{"name": ""}], "junk": True}),
    ("post", "/tools", "not json at all"),
    ("delete", "/tools/weather", None),
    ("delete", "/tools/no-such-tool", None),
]


@pytest.mark.parametrize(("method", "path", "body"), KEYED)
def test_without_the_key_a_write_is_refused_before_anything_looks_at_it(
    store_contents, db, method, path, body
):
    before = store_contents(db)
    with TestClient(create_app(Settings(db=db, api_key=KEY))) as c:
        for headers in ({}, {"Authorization": "Bearer wrong"}):
            content = body if isinstance(body, str) else None
            json_body = None if isinstance(body, str) else body
            r = c.request(method, path, json=json_body, content=content, headers=headers)
            assert r.status_code == 401, (headers, r.text)
            assert r.json()["error"] == "Unauthorized" and KEY not in r.text
    assert store_contents(db) == before


def test_with_the_key_writes_go_through(db):
    auth = {"Authorization": f"Bearer {KEY}"}
    with TestClient(create_app(Settings(db=db, api_key=KEY))) as c:
        assert c.post("/tools", json={"tools": [SMS]}, headers=auth).status_code == 201
        assert c.delete("/tools/weather", headers=auth).status_code == 200
        assert c.delete("/tools/weather", headers=auth).status_code == 404
    with Retriever.open(db) as r:
        assert {t.tool.id for t in r.tools()} == {"mail.a", "mail.b", "ns/with/slash", "sms"}


def test_an_unknown_field_is_named_short_not_echoed_back(store_contents, client, db):
    """A field name is the caller's: a 300,000-character key came back whole in the 422's detail."""
    before = store_contents(db)
    r = client.post("/tools", json={"tools": [{"id": "q", "name": "q", "k" * 300_000: 1}]})
    assert r.status_code == 422 and r.json()["error"] == "CatalogError"
    assert "tools[0], field 'kkk" in r.json()["detail"] and "unknown field" in r.json()["detail"]
    assert len(r.text) < 1000 and store_contents(db) == before


@pytest.mark.parametrize("method", ["post", "put"])
@pytest.mark.parametrize(
    ("tool", "field"),
    [
        ({"id": "q", "name": "q", "description": "a\udc00b"}, "description"),
        ({"id": "q", "name": "q", "extra": {"notes": ["ok", {"k\ud800": 1}]}}, "extra"),
    ],
)
def test_a_lone_surrogate_is_a_422_naming_its_field(store_contents, client, db, method, tool, field):
    """JSON may escape half of a surrogate pair ("\\udc00"): such text cannot be stored as UTF-8, and the
    write failed with a 500 (PydanticSerializationError) once the tool was already encoded."""
    body = json.dumps({"tools": [tool]})  # ASCII, with the surrogate as a JSON escape
    before = store_contents(db)
    r = client.request(method, "/tools", content=body, headers={"content-type": "application/json"})
    assert r.status_code == 422 and r.json()["error"] == "CatalogError", r.text
    assert f"tools[0], field '{field}'" in r.json()["detail"] and "surrogate" in r.json()["detail"]
    assert store_contents(db) == before
