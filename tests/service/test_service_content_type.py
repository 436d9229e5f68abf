"""A body sent without a JSON content type gets a 422 that says to send JSON."""

from fastapi.testclient import TestClient

from rated import Tool
from rated.encode.testing import HashEncoder
from rated.retriever import Retriever
from rated.service import Settings, create_app


def test_a_form_encoded_body_is_told_to_send_json_and_a_json_one_is_served():
    tools = [Tool(id="mail", name="send_email", description="Send an email message")]
    with (
        Retriever.from_catalog(tools, encoder=HashEncoder(32)) as r,
        TestClient(create_app(Settings(), retriever=r)) as c,
    ):
        body = '{"query": "send an email"}'
        form = c.post(
            "/retrieve", content=body, headers={"content-type": "application/x-www-form-urlencoded"}
        )
        assert form.status_code == 422
        assert "Content-Type: application/json" in form.json()["detail"]
        assert "x-www-form-urlencoded" in form.json()["detail"]
        bare = c.post("/retrieve", content=body)  # no content type at all
        assert bare.status_code == 422 and "no content type" in bare.json()["detail"]
        ok = c.post("/retrieve", content=body, headers={"content-type": "application/json"})
        assert ok.status_code == 200
        wrong = c.post("/retrieve", json={"k": 2})  # JSON, but a field missing: no content-type hint
        assert wrong.status_code == 422 and "Content-Type" not in wrong.json()["detail"]


def test_a_type_that_only_contains_json_is_not_parsed_as_json_and_gets_the_hint():
    """FastAPI parses application/json and application/*+json only; text/json or application/jsonl bodies
    reach validation unparsed, so they need the hint too (a substring test for "json" left them without)."""
    tools = [Tool(id="mail", name="send_email", description="Send an email message")]
    body = '{"query": "send an email"}'
    with (
        Retriever.from_catalog(tools, encoder=HashEncoder(32)) as r,
        TestClient(create_app(Settings(), retriever=r)) as c,
    ):
        for kind in ["text/json", "application/jsonl", "application/x-json"]:
            bad = c.post("/retrieve", content=body, headers={"content-type": kind})
            assert bad.status_code == 422 and "Content-Type: application/json" in bad.json()["detail"], kind
        for kind in ["application/json; charset=utf-8", "Application/JSON", "application/vnd.api+json"]:
            assert c.post("/retrieve", content=body, headers={"content-type": kind}).status_code == 200, kind
            listed = c.post("/retrieve", content="[1]", headers={"content-type": kind})  # parsed: no hint
            assert listed.status_code == 422 and "Content-Type" not in listed.json()["detail"], kind
