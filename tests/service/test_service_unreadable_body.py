"""A JSON body the parser fails on gets a 422 saying what is wrong with it, on every route with a body.

FastAPI answered a number over 4,300 digits, nesting past the recursion limit and bytes that are not UTF-8
with one generic 400 "There was an error parsing the body", and a syntax error with "body.0: JSON decode
error" (an offset, not what was wrong).
"""

from __future__ import annotations

import gzip
import json
import re
import zlib

import pytest
from fastapi.testclient import TestClient

from rated import Tool
from rated.encode.testing import HashEncoder
from rated.retriever import Retriever
from rated.service import Settings, create_app
from rated.service.unreadable import parser_depth, unreadable_body

WRITES = [("POST", "/retrieve"), ("POST", "/retrieve/batch"), ("POST", "/feedback")]
WRITES += [("POST", "/tools"), ("PUT", "/tools")]
JSON = {"content-type": "application/json"}
DEEP = 20_000  # 40 KB: far past the parser's depth, well under the body limit
BODIES = {
    "digits": (
        b'{"query": "x", "k": -' + b"7" * 5000 + b"}",
        "a number in the body has more than 4,300 digits",
    ),
    "deep": (
        b'{"query": ' + b"[" * DEEP + b"]" * DEEP + b"}",
        "the body nests arrays and objects deeper than",
    ),
    "deep objects": (b'{"a":' * DEEP + b"1" + b"}" * DEEP, "the body nests arrays and objects deeper than"),
    "latin-1": (
        '{"query": "caf\u00e9"}'.encode("latin-1"),
        "body is not UTF-8: invalid continuation byte at byte 14",
    ),
    "binary": (b"\x80{}", "body is not UTF-8: invalid start byte at byte 0"),
    "bom, then latin-1": (  # read as utf-8-sig, which counts from after the mark: byte 14 before
        b"\xef\xbb\xbf" + '{"query": "caf\u00e9"}'.encode("latin-1"),
        "body is not UTF-8: invalid continuation byte at byte 17",
    ),
    "utf-16 bom": (
        b"\xff\xfe{",
        "body is not UTF-8 (nor UTF-16-LE, as its first bytes suggest): truncated data",
    ),
    "not json": (b"query=send+an+email", "body is not valid JSON: Expecting value at line 1 column 1"),
    "cut short": (b'{"query": "x",\n "k": ', "body is not valid JSON: Expecting value at line 2 column 7"),
    "two bodies": (
        b'{"query": "x"}\n{"query": "y"}',
        "body is not valid JSON: Extra data at line 2 column 1",
    ),
    "control char": (
        b'{"query": "a\x01b"}',
        "body is not valid JSON: Invalid control character at line 1 column 13",
    ),
}


@pytest.fixture(scope="module")
def client():
    tools = [Tool(id="mail", name="send_email", description="Send an email message")]
    with (
        Retriever.from_catalog(tools, encoder=HashEncoder(32)) as r,
        TestClient(create_app(Settings(), retriever=r), raise_server_exceptions=False) as c,
    ):
        yield c


@pytest.mark.parametrize(("method", "route"), WRITES)
@pytest.mark.parametrize("case", sorted(BODIES))
def test_an_unreadable_body_gets_a_422_saying_what_is_wrong(client, method, route, case):
    raw, says = BODIES[case]
    r = client.request(method, route, content=raw, headers=JSON)
    assert r.status_code == 422, (r.status_code, r.text[:300])  # a generic 400 before (422 for syntax)
    assert r.json() == {"error": "RequestValidationError", "detail": r.json()["detail"]}
    detail = r.json()["detail"]
    assert detail.startswith(says), detail
    assert len(detail) < 200 and "There was an error parsing the body" not in detail
    # for a nesting error: the level the parser stops at, measured, not a guess
    if case.startswith("deep"):
        levels = int(re.search(r"about ([\d,]+) levels", detail)[1].replace(",", ""))
        assert 100 < levels < DEEP


def test_the_digit_count_comes_from_the_parser_and_the_body_is_never_echoed(client):
    secret = "9" * 4999 + "1"
    r = client.post("/retrieve", content=f'{{"query": "x", "k": {secret}}}'.encode(), headers=JSON)
    assert r.status_code == 422
    assert r.json()["detail"] == "a number in the body has more than 4,300 digits (one has 5,000)"
    cut = client.post("/retrieve", content=b'{"query": "' + b"q" * 50_000 + b'"', headers=JSON)
    assert cut.status_code == 422 and len(cut.text) < 200  # JSON decode error: no 50 KB echo


def test_unreadable_bodies_are_counted_as_validation_errors(client):
    def counted() -> float:
        text = client.get("/metrics").text
        found = re.search(r'^rated_errors_total\{error="RequestValidationError"\} (\S+)$', text, re.M)
        return float(found[1]) if found else 0.0

    before = counted()
    for raw, _ in BODIES.values():
        client.post("/feedback", content=raw, headers=JSON)
    assert counted() == before + len(BODIES)


def test_a_readable_body_and_other_errors_are_unchanged(client):
    assert client.post("/retrieve", json={"query": "send an email"}).status_code == 200
    bom = b"\xef\xbb\xbf" + json.dumps({"query": "mail"}).encode()  # UTF-8 with a BOM: read
    assert client.post("/retrieve", content=bom, headers=JSON).status_code == 200
    assert client.post("/retrieve", json={"k": 2}).json()["detail"] == "body.query: Field required"
    assert client.get("/nowhere").json() == {"error": "HTTPError", "detail": "Not Found"}


def test_other_exceptions_are_not_taken_for_an_unreadable_body():
    assert unreadable_body(None) is None
    assert unreadable_body(ValueError("some other value error")) is None
    assert unreadable_body(OSError("disk")) is None
    assert 100 < parser_depth() < 1_000_000


CODED = {
    "gzip": gzip.compress(json.dumps({"query": "send an email", "queries": ["send an email"]}).encode()),
    "deflate": zlib.compress(json.dumps({"tool_id": "mail", "outcome": "success"}).encode()),
    "br": b"\x1b\x0f\x00\xf8\xa5\x40\x82\x24\x9c\xd4\x89\x47",  # compressed bytes: not JSON in any reading
}


@pytest.mark.parametrize(("method", "route"), WRITES)
@pytest.mark.parametrize("coding", sorted(CODED))
def test_a_compressed_body_is_refused_as_an_encoding_the_service_does_not_decode(
    client, method, route, coding
):
    headers = {**JSON, "content-encoding": coding}
    r = client.request(method, route, content=CODED[coding], headers=headers)
    assert r.status_code == 415, (r.status_code, r.text)  # 422 'body is not UTF-8: ... at byte 1' before
    assert r.json() == {
        "error": "UnsupportedContentEncoding",
        "detail": f"the body is sent with Content-Encoding: {coding}, which the service does not decode: "
        "send it uncompressed",
    }
    assert r.headers["accept-encoding"] == "identity"  # RFC 9110: the codings it does accept


def test_a_readable_body_is_read_whatever_its_declared_coding_and_a_long_one_is_not_echoed(client):
    plain = json.dumps({"query": "send an email"}).encode()
    for coding in ("identity", "gzip"):  # a client that says gzip but sent it plain: nothing to refuse
        r = client.post("/retrieve", content=plain, headers={**JSON, "content-encoding": coding})
        assert r.status_code == 200, r.text
    r = client.post("/retrieve", content=b"\x80", headers={**JSON, "content-encoding": "identity"})
    assert r.status_code == 422 and r.json()["detail"].startswith("body is not UTF-8")
    r = client.post("/retrieve", content=b"abc", headers={**JSON, "content-encoding": "x-custom"})
    assert r.status_code == 415  # UTF-8 but not JSON: the syntax-error path says the same
    long = ", ".join(["x-" + "z" * 100] * 50)
    r = client.post("/retrieve", content=CODED["gzip"], headers={**JSON, "content-encoding": long})
    assert r.status_code == 415 and len(r.json()["detail"]) < 200
