"""Catalog gauges read at scrape time, and the reopen counter."""

from __future__ import annotations

import re

from fastapi.testclient import TestClient

from rated import Tool
from rated.encode.testing import HashEncoder
from rated.retriever import Retriever
from rated.service import Settings, create_app

TOOLS = [
    Tool(id="mail.a", name="send_email", description="Send an email message"),
    Tool(id="mail.b", name="email_send", description="Send an email message"),
    Tool(id="weather", name="weather_forecast", description="Weather forecast for a city"),
]


def metric(text: str, name: str) -> float:
    found = re.search(rf"^{name} (\S+)$", text, re.MULTILINE)
    assert found, f"{name} not exposed"
    return float(found.group(1))


def test_tool_gauges_follow_feedback_and_the_reopen_counter_a_rebuild(tmp_path):
    db = str(tmp_path / "m.db")
    Retriever.from_catalog(TOOLS, db=db, encoder=HashEncoder(64)).close()
    with TestClient(create_app(Settings(db=db))) as c:
        text = c.get("/metrics").text
        assert metric(text, "rated_tools") == 3 and metric(text, "rated_unhealthy_tools") == 0
        assert metric(text, "rated_index_reopens_total") == 0
        assert c.post("/feedback", json={"tool_id": "weather", "outcome": "tool_error"}).status_code == 200
        assert metric(c.get("/metrics").text, "rated_unhealthy_tools") == 1  # no other request needed
        rebuilt = [*TOOLS, Tool(id="calendar", name="create_event", description="Create a calendar event")]
        Retriever.from_catalog(rebuilt, db=db, encoder=HashEncoder(32), overwrite=True).close()
        assert c.post("/retrieve", json={"query": "send an email"}).status_code == 200
        text = c.get("/metrics").text
        assert metric(text, "rated_index_reopens_total") == 1
        assert metric(text, "rated_tools") == 4 and metric(text, "rated_unhealthy_tools") == 0


def test_a_scrape_survives_a_store_that_is_gone(tmp_path):
    db = tmp_path / "gone.db"
    Retriever.from_catalog(TOOLS, db=db, encoder=HashEncoder(64)).close()
    with TestClient(create_app(Settings(db=str(db)))) as c:
        c.app.state.serving.current.store.close()  # the store fails under the service
        r = c.get("/metrics")
        assert r.status_code == 200 and metric(r.text, "rated_tools") != metric(r.text, "rated_tools")  # NaN
