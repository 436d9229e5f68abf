"""``POST /feedback`` with the tool's HTTP status (and headers) instead of an outcome name: classified by
rated, the answer says what was recorded, and the learned health follows the classification."""

from __future__ import annotations

import pytest

from rated.encode.testing import HashEncoder
from rated.retriever import Retriever
from rated.service.tool_headers import MAX_HEADER_NAME, MAX_HEADER_VALUE, MAX_HEADERS
from retired_catalog import TOOLS

QUERY = "send an email message"


@pytest.fixture
def retriever(now):
    """The retired-endpoint tests' catalog (``retired_catalog``) with no history: each status decides."""
    r = Retriever.from_catalog(TOOLS, encoder=HashEncoder(64), clock=lambda: now[0])
    yield r
    r.close()


def top(client) -> str:
    return client.post("/retrieve", json={"query": QUERY, "k": 1}).json()["hits"][0]["id"]


@pytest.mark.parametrize(
    ("status", "headers", "outcome", "retry_after", "demoted"),
    [
        (200, None, "success", None, False),
        (400, None, "caller_error", None, False),  # the agent's own arguments: no demotion
        (401, {"www-authenticate": "Bearer"}, "auth_error", None, True),
        (429, {"Retry-After": "30"}, "rate_limited", 30.0, True),
        (503, None, "tool_error", None, True),
        (503, {"retry-after": "120"}, "rate_limited", 120.0, True),
        (403, None, "auth_error", None, True),
        (403, {"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": "60"}, "rate_limited", 60.0, True),
    ],
)
def test_a_status_is_recorded_as_its_outcome(
    client, retriever, status, headers, outcome, retry_after, demoted
):
    first = top(client)
    assert first == "mail.a"
    body = {"tool_id": first, "status": status, "query": QUERY}
    if headers is not None:
        body["headers"] = headers
    r = client.post("/feedback", json=body)
    assert r.status_code == 200, r.text
    assert r.json() == {
        "recorded": True,
        "tool_id": first,
        "outcome": outcome,
        "retry_after": retry_after,
        "healthy": not demoted,
    }
    assert (top(client) != first) is demoted
    row = client.get(f"/tools/{first}").json()
    assert row["last_outcome"] == outcome and row["caller_errors"] == (outcome == "caller_error")
    [record] = retriever.outcomes()
    assert (record.outcome, record.retry_after) == (outcome, retry_after)
    assert f'rated_feedback_total{{outcome="{outcome}"}} 1.0' in client.get("/metrics").text


def test_a_429_keeps_the_tool_out_only_as_long_as_it_said_and_a_503_without_a_hint_longer(client, now):
    reliability = client.get("/tools/mail.a").json()["components"]["reliability"]
    limited = {"tool_id": "mail.a", "status": 429, "headers": {"Retry-After": "30"}}
    assert client.post("/feedback", json=limited).json()["outcome"] == "rate_limited"
    assert (
        client.post("/feedback", json={"tool_id": "mail.b", "status": 503}).json()["outcome"] == "tool_error"
    )
    now[0] = 1029.0
    assert client.get("/tools/mail.a").json()["healthy"] is False
    now[0] = 1031.0
    row = client.get("/tools/mail.a").json()
    assert row["healthy"] is True and row["components"]["reliability"] == reliability  # not held against it
    assert top(client) == "mail.a"
    assert client.get("/tools/mail.b").json()["healthy"] is False  # an outage: still demoted


def test_an_explicit_retry_after_replaces_the_headers_hint(client, now):
    body = {"tool_id": "mail.a", "status": 429, "headers": {"Retry-After": "300"}, "retry_after": 5}
    assert client.post("/feedback", json=body).json()["retry_after"] == 5.0
    now[0] = 1006.0
    assert client.get("/tools/mail.a").json()["healthy"] is True
    out = client.post("/feedback", json={"tool_id": "mail.b", "status": 503, "retry_after": 60}).json()
    assert (out["outcome"], out["retry_after"]) == ("rate_limited", 60.0)


@pytest.mark.parametrize(
    ("body", "error", "message"),
    [
        ({"outcome": "success", "status": 200}, "ConfigError", "not both"),
        ({}, "ConfigError", "give outcome"),
        ({"retry_after": 30}, "ConfigError", "give outcome"),
        ({"outcome": "rate_limited", "headers": {"Retry-After": "5"}}, "ConfigError", "only with status"),
        ({"status": 600}, "RequestValidationError", "body.status: Input should be less than or equal to 599"),
        ({"status": 99}, "RequestValidationError", "body.status: Input should be greater than or equal"),
        ({"status": True}, "RequestValidationError", "body.status"),
        ({"status": "429"}, "RequestValidationError", "body.status"),
        ({"status": 429.0}, "RequestValidationError", "body.status"),
        ({"status": 10**30}, "RequestValidationError", "body.status"),
        ({"status": 429, "headers": [["Retry-After", "5"]]}, "RequestValidationError", "got a list"),
        ({"status": 429, "headers": "Retry-After: 5"}, "RequestValidationError", "got a string"),
        ({"status": 429, "headers": {"Retry-After": 5}}, "RequestValidationError", "not a string"),
        ({"status": 429, "headers": {"a": {"b": "c"}}}, "RequestValidationError", "not a string"),
        (
            {"status": 429, "headers": {f"x-{i}": "1" for i in range(MAX_HEADERS + 1)}},
            "RequestValidationError",
            f"{MAX_HEADERS + 1} headers; at most {MAX_HEADERS}",
        ),
        (
            {"status": 429, "headers": {"n" * 300_000: "1"}},
            "RequestValidationError",
            f"a header name is 300,000 characters long; at most {MAX_HEADER_NAME}",
        ),
        (
            {"status": 429, "headers": {"Retry-After": "9" * (MAX_HEADER_VALUE + 1)}},
            "RequestValidationError",
            f"the value of 'Retry-After' is 8,193 characters long; at most {MAX_HEADER_VALUE:,}",
        ),
        (
            {"status": 429, "headers": {"v" * 5000: 7}},
            "RequestValidationError",
            "a header name is 5,000 characters long",
        ),
        (
            {"status": 200, "headers": {"Retry-After": "1"}, "extra": 1},
            "RequestValidationError",
            "body.extra",
        ),
    ],
)
def test_a_wrong_report_is_a_422_saying_what_and_records_nothing(client, retriever, body, error, message):
    r = client.post("/feedback", json={"tool_id": "mail.a", **body})
    assert r.status_code == 422, r.text
    assert r.json()["error"] == error and message in r.json()["detail"], r.json()
    assert len(r.text) < 500  # nothing the caller sent echoed in full
    assert retriever.outcomes() == []


def test_headers_at_the_limits_are_taken(client):
    headers = {f"x-{i}": "v" for i in range(MAX_HEADERS - 2)}
    headers["n" * MAX_HEADER_NAME] = "1"
    headers["Retry-After"] = "7".rjust(MAX_HEADER_VALUE, " ")  # surrounding spaces are allowed
    r = client.post("/feedback", json={"tool_id": "mail.a", "status": 429, "headers": headers})
    assert r.status_code == 200 and r.json()["retry_after"] == 7.0


def test_an_unknown_tool_with_a_status_is_a_404(client, retriever):
    r = client.post("/feedback", json={"tool_id": "nope", "status": 500})
    assert r.status_code == 404 and r.json()["error"] == "UnknownToolError"
    assert retriever.outcomes() == []


def test_the_openapi_schema_documents_status_and_headers(client):
    schemas = client.get("/openapi.json").json()["components"]["schemas"]
    props = schemas["FeedbackIn"]["properties"]
    assert schemas["FeedbackIn"]["required"] == ["tool_id"]
    status = props["status"]
    assert {"type": "integer", "minimum": 100, "maximum": 599} in status["anyOf"]
    assert "caller_error" in status["description"]
    assert (
        props["headers"]["maxProperties"] == MAX_HEADERS and "Retry-After" in props["headers"]["description"]
    )
    assert "or status" in props["outcome"]["description"]
    assert "retry_after" in schemas["FeedbackOut"]["properties"]
