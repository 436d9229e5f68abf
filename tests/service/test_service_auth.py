"""The optional API key (``RATED_API_KEY``): who gets in, how a refusal looks, what stays open."""

from __future__ import annotations

import base64
import logging

import pytest
from fastapi.testclient import TestClient

from rated import Tool
from rated.encode.testing import HashEncoder
from rated.errors import ConfigError
from rated.retriever import Retriever
from rated.service import Settings, create_app

KEY = "s3cret-key"
TOOLS = [
    Tool(id="mail", name="send_email", description="Send an email message"),
    Tool(id="weather", name="weather_forecast", description="Weather forecast for a city"),
]
KEYED = [  # every data route: (method, path, json body)
    ("post", "/retrieve", {"query": "send an email"}),
    ("post", "/retrieve/batch", {"queries": ["send an email"]}),
    ("post", "/feedback", {"tool_id": "mail", "outcome": "tool_error"}),
    ("get", "/tools", None),
    ("get", "/tools/mail", None),
    ("get", "/metrics", None),
    ("get", "/dashboard", None),
    ("get", "/dashboard/outcomes.png", None),
]


@pytest.fixture
def retriever():
    r = Retriever.from_catalog(TOOLS, encoder=HashEncoder(32), clock=lambda: 1000.0)
    yield r
    r.close()


def client(retriever, key=KEY) -> TestClient:
    return TestClient(create_app(Settings(api_key=key), retriever=retriever))


def call(c: TestClient, method: str, path: str, body, **headers):
    return c.request(method, path, json=body, headers=headers)


@pytest.mark.parametrize(("method", "path", "body"), KEYED)
def test_every_data_route_needs_the_key(retriever, method, path, body):
    with client(retriever) as c:
        for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": f"Bearer {KEY}x"}):
            r = call(c, method, path, body, **headers)
            assert r.status_code == 401, (path, headers, r.status_code)
            assert r.json()["error"] == "Unauthorized" and KEY not in r.text
            assert r.headers["WWW-Authenticate"] == 'Bearer, Basic realm="rated"'
        assert call(c, method, path, body, Authorization=f"Bearer {KEY}").status_code == 200
    expected = ["tool_error"] if path == "/feedback" else []  # the refused calls changed nothing
    assert [o.outcome for o in retriever.outcomes()] == expected


def test_a_browser_gives_the_key_as_the_basic_auth_password(retriever):
    basic = base64.b64encode(f"anyone:{KEY}".encode()).decode()
    with client(retriever) as c:
        assert c.get("/dashboard", headers={"Authorization": f"Basic {basic}"}).status_code == 200
        wrong = base64.b64encode(b"anyone:nope").decode()
        assert c.get("/dashboard", headers={"Authorization": f"Basic {wrong}"}).status_code == 401


def test_health_and_the_docs_stay_open_and_the_schema_declares_the_schemes(retriever):
    with client(retriever) as c:
        assert c.get("/health").status_code == 200
        assert c.get("/docs").status_code == 200
        schema = c.get("/openapi.json").json()
    assert {"HTTPBearer", "HTTPBasic"} <= set(schema["components"]["securitySchemes"])
    assert "security" in schema["paths"]["/retrieve"]["post"]
    assert "security" not in schema["paths"]["/health"]["get"]


def test_without_a_key_the_service_is_open_and_ignores_credentials(retriever):
    with client(retriever, key=None) as c:
        assert c.post("/retrieve", json={"query": "send an email"}).status_code == 200
        assert c.get("/tools", headers={"Authorization": "Basic not-base64!"}).status_code == 200
        assert "securitySchemes" not in c.get("/openapi.json").json().get("components", {})


def test_the_key_comes_from_the_environment_is_never_shown_and_may_not_be_blank(retriever, caplog):
    settings = Settings.from_env({"RATED_API_KEY": KEY})
    assert settings.api_key is not None and settings.api_key.get_secret_value() == KEY
    assert KEY not in repr(settings) and KEY not in str(settings)
    with pytest.raises(ConfigError, match="RATED_API_KEY"):
        Settings.from_env({"RATED_API_KEY": "  "})
    with caplog.at_level(logging.DEBUG), client(retriever) as c:
        call(c, "post", "/retrieve", {"query": "x"}, Authorization="Bearer wrong")
        call(c, "post", "/retrieve", {"query": "x"}, Authorization=f"Bearer {KEY}")
    assert KEY not in caplog.text


def test_a_key_no_client_could_send_is_refused_at_start_not_by_every_request(retriever):
    """HTTP headers carry bytes that Starlette reads as Latin-1, and Basic-auth passwords are decoded as
    ASCII: a non-ASCII key (or one with edge spaces, which servers strip) would answer 401 to everyone,
    its own holder included. It is a settings error naming the variable, never echoing the key."""
    for bad in ("cl\u00e9-secr\u00e8te", " padded-key", "tab\tkey"):
        with pytest.raises(ConfigError, match="RATED_API_KEY") as info:
            Settings.from_env({"RATED_API_KEY": bad})
        assert bad.strip() not in str(info.value)
    with client(retriever, key="with inner spaces is-fine") as c:
        auth = {"Authorization": "Bearer with inner spaces is-fine"}
        assert c.post("/retrieve", json={"query": "x"}, headers=auth).status_code == 200


@pytest.mark.parametrize(("method", "path", "body"), KEYED)
def test_the_key_is_checked_before_the_request_is_parsed_routed_or_measured(retriever, method, path, body):
    """FastAPI parses a JSON body before any dependency runs: a caller without the key sending a broken
    body got a 422 naming the schema's fields. Every refusal a keyed path can give is a 401 first."""
    malformed = {"content": b'{"query": ', "headers": {"Content-Type": "application/json"}}
    with client(retriever) as c:
        for attempt in [
            c.request(method, path, **malformed),  # was a 422 on the POST routes
            c.request("put", path, **malformed),  # a method the route lacks: was a 405
            c.request(method, path, content=b"x" * 2_000_000),  # over max_body_bytes: was a 413
            c.request(method, path, headers={"Authorization": "Basic not-base64!"}),  # was an HTTPError 401
            c.request(method, f"{path}/no-such-part", **malformed),  # below a keyed prefix: was a 404
        ]:
            assert attempt.status_code == 401, (attempt.request.method, attempt.request.url, attempt.text)
            assert attempt.json()["error"] == "Unauthorized"
            assert attempt.headers["WWW-Authenticate"] == 'Bearer, Basic realm="rated"'
        keyed = {"Authorization": f"Bearer {KEY}", "Content-Type": "application/json"}
        if method == "post":  # with the key, the same body is the caller's problem again
            assert c.request(method, path, content=b'{"query": ', headers=keyed).status_code == 422
        metrics = c.get("/metrics", headers=keyed).text
    assert 'rated_errors_total{error="Unauthorized"} 5.0' in metrics  # the refusals are still counted
    assert [o.outcome for o in retriever.outcomes()] == []


def test_open_paths_and_unknown_paths_answer_as_before_with_a_key_set(retriever):
    with client(retriever) as c:
        assert c.get("/health").status_code == 200
        assert c.get("/openapi.json").status_code == 200
        assert c.get("/healthz").status_code == 404  # not under a keyed prefix: nothing to guard
        assert c.get("/retrieveX").status_code == 404
        assert c.post("/health", content=b"{").status_code == 405


def test_a_root_path_that_only_begins_a_keyed_path_does_not_skip_the_early_check(retriever):
    """Starlette strips a ``root_path`` only up to a ``/``: under root ``/re``, ``/retrieve`` is routed to
    the retrieve route. The early check cut ``/re`` off (``trieve``, no keyed prefix), so a broken body
    got the schema's 422 instead of a 401."""
    app = create_app(Settings(api_key=KEY), retriever=retriever)
    with TestClient(app, root_path="/re") as c:
        broken = {"content": b'{"query": ', "headers": {"Content-Type": "application/json"}}
        r = c.post("/retrieve", **broken)
        assert r.status_code == 401 and r.json()["error"] == "Unauthorized", r.text
        assert c.post("/re/retrieve", **broken).status_code == 401  # the root stripped at a "/"
        auth = {"Authorization": f"Bearer {KEY}"}
        assert c.post("/retrieve", json={"query": "send an email"}, headers=auth).status_code == 200
