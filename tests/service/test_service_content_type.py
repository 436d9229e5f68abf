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
