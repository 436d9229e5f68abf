"""The HTTP service through FastAPI's TestClient: routes, wire shapes, error codes, metrics."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from rated import Tool
from rated.encode.testing import HashEncoder
from rated.errors import ConfigError, StoreBusyError
from rated.retriever import Retriever
from rated.service import Settings, create_app

QUERY = "send an email message"


def catalog() -> list[Tool]:
    return [
        Tool(
            id="mail.a",
            name="send_email",
            description="Send an email message",
            parameters={"type": "object", "properties": {"to": {"type": "string"}}},
        ),
        Tool(id="mail.b", name="email_send", description="Send an email message"),
        Tool(id="weather", name="weather_forecast", description="Weather forecast for a city"),
        Tool(id="ns/with/slash", name="calendar", description="Create a calendar event"),
    ]


@pytest.fixture
def retriever():
    r = Retriever.from_catalog(catalog(), encoder=HashEncoder(64), clock=lambda: 1000.0)
    yield r
    r.close()


@pytest.fixture
def client(retriever):
    with TestClient(create_app(Settings(default_k=2, max_k=3, max_batch=2), retriever=retriever)) as c:
        yield c


def test_retrieve(client):
    r = client.post("/retrieve", json={"query": QUERY, "k": 2})
    assert r.status_code == 200
    body = r.json()
    assert body["count"] == 2 and body["degraded"] is False and body["k"] == 2
    assert {h["id"] for h in body["hits"]} == {"mail.a", "mail.b"}
    hit = next(h for h in body["hits"] if h["id"] == "mail.a")
    assert hit["parameters"]["properties"]["to"]["type"] == "string"
    assert {"score", "semantic", "bandit", "prior", "healthy", "components"} <= set(hit)
    assert client.post("/retrieve", json={"query": QUERY}).json()["k"] == 2  # the service default


def test_retrieve_batch(client):
    r = client.post("/retrieve/batch", json={"queries": [QUERY, "weather in Oslo"], "k": 1})
    assert r.status_code == 200
    assert [res["hits"][0]["id"] for res in r.json()["results"]][1] == "weather"
    assert client.post("/retrieve/batch", json={"queries": ["a", "b", "c"]}).status_code == 422


def test_feedback_demotes_and_tools_report_it(client):
    top = client.post("/retrieve", json={"query": QUERY, "k": 1}).json()["hits"][0]["id"]
    r = client.post("/feedback", json={"tool_id": top, "outcome": "tool_error", "query": QUERY})
    assert r.status_code == 200
    assert r.json() == {
        "recorded": True,
        "tool_id": top,
        "outcome": "tool_error",
        "retry_after": None,
        "healthy": False,
    }
    assert client.post("/retrieve", json={"query": QUERY, "k": 1}).json()["hits"][0]["id"] != top
    tools = client.get("/tools").json()
    assert tools["count"] == 4
    row = next(t for t in tools["data"] if t["id"] == top)
    assert row["healthy"] is False and row["failures"] == 1 and row["last_outcome"] == "tool_error"
    assert [t["id"] for t in client.get("/tools", params={"unhealthy": True}).json()["data"]] == [top]
    assert client.get(f"/tools/{top}").json()["failures"] == 1
    assert client.get("/tools/ns/with/slash").json()["id"] == "ns/with/slash"


@pytest.mark.parametrize(
    ("method", "path", "payload", "status", "error"),
    [
        ("post", "/retrieve", {"query": ""}, 422, "QueryError"),
        ("post", "/retrieve", {"query": "   "}, 422, "QueryError"),
        ("post", "/retrieve", {"query": "x" * 10_001}, 422, "QueryError"),
        ("post", "/retrieve", {"query": QUERY, "k": 4}, 422, "ConfigError"),
        ("post", "/retrieve", {"query": QUERY, "k": 0}, 422, "RequestValidationError"),
        ("post", "/retrieve", {"query": 42}, 422, "RequestValidationError"),
        ("post", "/retrieve", {"query": QUERY, "k": True}, 422, "RequestValidationError"),
        ("post", "/retrieve", {"query": QUERY, "k": 1.0}, 422, "RequestValidationError"),
        ("post", "/retrieve", {"query": QUERY, "k": "2"}, 422, "RequestValidationError"),
        ("post", "/retrieve/batch", {"queries": [QUERY], "k": True}, 422, "RequestValidationError"),
        ("post", "/retrieve/batch", {"queries": QUERY}, 422, "RequestValidationError"),
        ("post", "/feedback", {"tool_id": 1, "outcome": "success"}, 422, "RequestValidationError"),
        (
            "post",
            "/feedback",
            {"tool_id": "mail.a", "outcome": "rate_limited", "retry_after": "5"},
            422,
            "RequestValidationError",
        ),
        (
            "post",
            "/feedback",
            {"tool_id": "mail.a", "outcome": "rate_limited", "retry_after": True},
            422,
            "RequestValidationError",
        ),
        ("post", "/retrieve", {"q": QUERY}, 422, "RequestValidationError"),
        ("post", "/feedback", {"tool_id": "nope", "outcome": "success"}, 404, "UnknownToolError"),
        ("post", "/feedback", {"tool_id": "mail.a", "outcome": "exploded"}, 422, "ConfigError"),
        (
            "post",
            "/feedback",
            {"tool_id": "mail.a", "outcome": "timeout", "retry_after": -1},
            422,
            "RequestValidationError",
        ),
        ("get", "/tools/nope", None, 404, "UnknownToolError"),
        ("get", "/no/such/route", None, 404, "HTTPError"),
        ("get", "/retrieve", None, 405, "HTTPError"),
    ],
)
def test_errors_map_to_status_codes(client, method, path, payload, status, error):
    r = client.request(method.upper(), path, json=payload)
    assert r.status_code == status
    assert r.json()["error"] == error and r.json()["detail"]


@pytest.mark.parametrize(
    ("path", "raw"),
    [
        ("/retrieve", '{"query": "email \\ud800"}'),  # JSON's escape for a lone surrogate
        ("/retrieve/batch", '{"queries": ["email", "\\udcff"]}'),
        ("/feedback", '{"tool_id": "mail.a", "outcome": "success", "query": "a\\ud800"}'),
    ],
)
def test_lone_surrogates_are_a_query_error(client, path, raw):
    before = client.get("/tools/mail.a").json()
    r = client.post(path, content=raw, headers={"content-type": "application/json"})
    assert r.status_code == 422 and r.json()["error"] == "QueryError", r.text
    assert client.get("/tools/mail.a").json() == before  # nothing recorded


@pytest.mark.parametrize(
    ("path", "raw", "field"),
    [
        ("/retrieve", '{"query": NaN}', "body.query"),
        ("/retrieve", '{"query": "email", "k": NaN}', "body.k"),
        ("/retrieve/batch", '{"queries": [NaN]}', "body.queries.0"),
        ("/retrieve/batch", '{"queries": ["email"], "k": NaN}', "body.k"),
        (
            "/feedback",
            '{"tool_id": "mail.a", "outcome": "rate_limited", "retry_after": NaN}',
            "body.retry_after",
        ),
        ("/feedback", '{"tool_id": "mail.a", "outcome": "success", "query": NaN}', "body.query"),
        (
            "/feedback",
            '{"tool_id": "mail.a", "outcome": "success", "query": "x", "secret": NaN}',
            "body.secret",
        ),
        ("/feedback", "{not json", "body"),
        (
            "/feedback",
            '{"tool_id": "mail.a", "outcome": "timeout", "retry_after": Infinity}',
            "body.retry_after",
        ),
    ],
)
def test_invalid_bodies_are_422_in_the_error_shape_naming_the_field(retriever, path, raw, field):
    # raise_server_exceptions=False: a 500 (NaN echoed into strict JSON) shows up as a status, not a raise
    app = create_app(Settings(default_k=2, max_k=3, max_batch=2), retriever=retriever)
    with TestClient(app, raise_server_exceptions=False) as c:
        r = c.post(path, content=raw, headers={"content-type": "application/json"})
        assert r.status_code == 422
        body = r.json()
        assert set(body) == {"error", "detail"} and body["error"] == "RequestValidationError"
        assert body["detail"].startswith(field) and "NaN" not in body["detail"]
        if field == "body.retry_after":
            assert "finite number" in body["detail"]  # not "greater than or equal to 0"
        assert 'rated_errors_total{error="RequestValidationError"} 1.0' in c.get("/metrics").text


def test_strict_bodies_still_take_an_int_where_a_float_is_expected(client):
    r = client.post("/feedback", json={"tool_id": "mail.a", "outcome": "rate_limited", "retry_after": 30})
    assert r.status_code == 200 and r.json()["healthy"] is False


def test_busy_store_is_503_with_retry_after(client, retriever, monkeypatch):
    def busy(*a, **k):
        raise StoreBusyError("rated.db: database stayed locked for more than 5 s")

    monkeypatch.setattr(retriever.store, "update_states", busy)
    r = client.post("/feedback", json={"tool_id": "mail.a", "outcome": "success"})
    assert r.status_code == 503 and r.headers["retry-after"] == "1"
    assert r.json()["error"] == "StoreBusyError"


def test_health_and_metrics(client):
    h = client.get("/health").json()
    assert h["status"] == "ok" and h["tools"] == 4 and h["encoder"].startswith("hash-64") and h["policy"]
    client.post("/retrieve", json={"query": QUERY, "k": 1})
    client.post("/feedback", json={"tool_id": "mail.a", "outcome": "timeout"})
    client.post("/feedback", json={"tool_id": "nope", "outcome": "timeout"})
    text = client.get("/metrics").text
    assert 'rated_http_requests_total{route="/retrieve",status="200"} 1.0' in text
    assert 'rated_feedback_total{outcome="timeout"} 1.0' in text
    assert 'rated_errors_total{error="UnknownToolError"} 1.0' in text
    assert "rated_http_request_seconds_bucket" in text


def test_openapi_operation_ids_are_stable(client):
    ops = {
        op["operationId"]
        for path in client.get("/openapi.json").json()["paths"].values()
        for op in path.values()
    }
    assert {"retrieve", "retrieve_many", "feedback", "list_tools", "get_tool", "health", "metrics"} <= ops


def test_app_opens_and_closes_its_own_database(tmp_path):
    db = tmp_path / "svc.db"
    Retriever.from_catalog(catalog(), db=db, encoder=HashEncoder(64)).close()
    with TestClient(create_app(Settings(db=str(db)))) as c:
        assert c.get("/health").json()["tools"] == 4


def test_settings_from_env_and_validation():
    s = Settings.from_env({"RATED_DB": "x.db", "RATED_PORT": "9001"}, host="0.0.0.0")
    assert (s.db, s.port, s.host) == ("x.db", 9001, "0.0.0.0")
    with pytest.raises(ConfigError, match="RATED_PORT"):
        Settings.from_env({"RATED_PORT": "not a port"})
    with pytest.raises(ConfigError, match="default_k"):
        Settings.from_env({}, default_k=10, max_k=5)
    with pytest.raises(ConfigError, match="needs a database"):
        create_app(Settings())


def test_feedback_recorded_for_a_tool_removed_right_after_still_answers_recorded():
    from rated.errors import UnknownToolError
    from rated.service.actions import record_feedback

    class Stub:
        def feedback(self, tool_id, outcome, query=None):
            return outcome  # what the policy learned (Retriever.feedback returns it since 360f97f)

        def health(self, tool_id, stats=True):
            raise UnknownToolError(tool_id)  # another writer removed it in between

    out = record_feedback(Stub(), "gone", None, outcome="success")  # type: ignore[arg-type]
    assert out.recorded and out.healthy is None


def test_feedback_with_an_id_in_the_other_unicode_form_answers_for_the_tool():
    """Retriever.feedback accepts an id typed in the other normal form (NFD for an NFC id): the answer must
    name the tool as the catalog spells it, with its health, not ``healthy: null`` as for a removed tool."""
    composed, decomposed = "caf\u00e9.order", "cafe\u0301.order"
    tools = [*catalog(), Tool(id=composed, name="order_coffee", description="Order a coffee")]
    r = Retriever.from_catalog(tools, encoder=HashEncoder(64), clock=lambda: 1000.0)
    with TestClient(create_app(Settings(), retriever=r)) as c:
        for _ in range(3):
            resp = c.post("/feedback", json={"tool_id": decomposed, "outcome": "tool_error"})
            assert resp.status_code == 200
        assert resp.json()["tool_id"] == composed and resp.json()["healthy"] is False
    r.close()
