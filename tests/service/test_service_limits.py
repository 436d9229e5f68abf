"""The request-size limit: bodies over ``max_body_bytes`` are 413 in the error shape, before being read."""

from __future__ import annotations

import json

import anyio
import pytest
from fastapi.testclient import TestClient

from rated import Tool
from rated.encode.testing import HashEncoder
from rated.retriever import Retriever
from rated.service import Settings, create_app
from rated.service.limits import BodyLimit

LIMIT = 2_000


@pytest.fixture
def client():
    tools = [Tool(id="mail", name="send_email", description="Send an email message")]
    r = Retriever.from_catalog(tools, encoder=HashEncoder(64))
    with TestClient(create_app(Settings(max_body_bytes=LIMIT), retriever=r)) as c:
        yield c
    r.close()


def _body(size: int) -> bytes:
    """A valid /retrieve body of exactly ``size`` bytes."""
    empty = len(json.dumps({"query": ""}).encode())
    return json.dumps({"query": "e" * (size - empty)}).encode()


def _chunks(data: bytes, n: int = 500):
    for i in range(0, len(data), n):
        yield data[i : i + n]


def test_body_over_the_limit_is_413_in_the_error_shape(client):
    r = client.post("/retrieve", content=_body(LIMIT + 1), headers={"content-type": "application/json"})
    assert r.status_code == 413
    assert r.json()["error"] == "RequestTooLarge" and "max_body_bytes" in r.json()["detail"]
    text = client.get("/metrics").text
    assert 'rated_errors_total{error="RequestTooLarge"} 1.0' in text
    assert 'rated_http_requests_total{route="unmatched",status="413"} 1.0' in text


def test_body_at_the_limit_passes(client):
    r = client.post("/retrieve", content=_body(LIMIT), headers={"content-type": "application/json"})
    assert r.status_code == 200 and r.json()["hits"][0]["id"] == "mail"


def test_chunked_body_without_content_length_is_counted_as_it_comes(client):
    headers = {"content-type": "application/json"}
    big = client.post("/retrieve", content=_chunks(_body(LIMIT + 1)), headers=headers)
    assert big.status_code == 413 and big.json()["error"] == "RequestTooLarge"
    ok = client.post("/retrieve", content=_chunks(_body(LIMIT)), headers=headers)
    assert ok.status_code == 200 and ok.json()["hits"][0]["id"] == "mail"


def test_declared_length_over_the_limit_is_refused_without_reading_the_body():
    called = []

    async def app(scope, receive, send):  # pragma: no cover - must not run
        called.append(scope)

    async def receive():
        raise AssertionError("the body was read")

    sent = []

    async def send(message):
        sent.append(message)

    scope = {"type": "http", "headers": [(b"content-length", b"100000000")]}
    anyio.run(BodyLimit(app, max_bytes=LIMIT), scope, receive, send)
    assert not called and sent[0]["status"] == 413
    assert "100,000,000 bytes" in json.loads(sent[1]["body"])["detail"]


def test_default_limit_fits_a_full_batch_of_long_queries():
    s = Settings()
    batch = json.dumps({"queries": ["e" * 10_000] * s.max_batch, "k": s.max_k}).encode()
    assert len(batch) <= s.max_body_bytes
