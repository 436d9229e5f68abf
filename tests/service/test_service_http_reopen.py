"""An index rebuilt under the running HTTP service with another encoder or policy: every route serves the
new one after a single reopen (it answered 503 until the service was restarted), or says why it cannot;
/health and a metrics scrape report the rebuild without reopening it."""

from __future__ import annotations

import re
import sqlite3
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from fastapi.testclient import TestClient

from rated import Tool
from rated.encode.testing import HashEncoder
from rated.errors import StoreError
from rated.retriever import Retriever
from rated.service import Settings, create_app
from rated.service import reopen as reopen_module

QUERY = "send an email message"
TOOLS = [
    Tool(id="mail.a", name="send_email", description="Send an email message"),
    Tool(id="weather", name="weather_forecast", description="Weather forecast for a city"),
]
REBUILT = [Tool(id="mail.new", name="email_sender", description="Send an email message quickly"), TOOLS[1]]
REOPENED = "was rebuilt"  # what reopen logs, once per reopen
SLOW_OPEN = 1.5  # seconds a reopen takes in the probe test: a probe that reopened would take as long

# every route that reads the index: (method, path, body, what it answers from the rebuilt index only)
ROUTES: dict[str, tuple[str, str, dict[str, Any] | None, Any]] = {
    "retrieve": ("POST", "/retrieve", {"query": QUERY, "k": 1}, lambda b: b["hits"][0]["id"] == "mail.new"),
    "retrieve_batch": (
        "POST",
        "/retrieve/batch",
        {"queries": [QUERY, "weather in Oslo"], "k": 1},
        lambda b: [r["hits"][0]["id"] for r in b["results"]] == ["mail.new", "weather"],
    ),
    "feedback": (
        "POST",
        "/feedback",
        {"tool_id": "mail.new", "outcome": "success"},
        lambda b: b["recorded"] and b["tool_id"] == "mail.new" and b["healthy"] is True,
    ),
    "tools": ("GET", "/tools", None, lambda b: {t["id"] for t in b["data"]} == {"mail.new", "weather"}),
    "tool": ("GET", "/tools/mail.new", None, lambda b: b["id"] == "mail.new"),
    "dashboard": ("GET", "/dashboard?refresh=0", None, lambda page: "hash-32-s0" in page),
}  # /health reads it too, but never reopens it (a probe must stay cheap): its own tests below


def own_encoder(dim: int) -> HashEncoder:
    """An encoder rated cannot load by its name: an index built with it cannot be reopened alone."""
    encoder = HashEncoder(dim)
    encoder.name = "my-own-encoder"
    return encoder


@pytest.fixture
def db(tmp_path) -> str:
    path = tmp_path / "svc.db"
    Retriever.from_catalog(TOOLS, db=path, encoder=HashEncoder(64)).close()
    return str(path)


def rebuild(db: str, tools: list[Tool] = REBUILT, **settings: Any) -> None:
    """As `rated index --force --db` does from another process."""
    Retriever.from_catalog(tools, db=db, **{"encoder": HashEncoder(64), **settings}, overwrite=True).close()


def call(client: TestClient, route: str) -> Any:
    """``route``'s answer, checked to be a 200 drawn from the rebuilt index."""
    method, path, body, from_rebuilt = ROUTES[route]
    r = client.request(method, path, json=body)
    assert r.status_code == 200, (route, r.text)
    answer = r.text if r.headers["content-type"].startswith("text/html") else r.json()
    assert from_rebuilt(answer), (route, answer)
    return answer


def reopen_count(metrics: str) -> float:
    found = re.search(r"^rated_index_reopens_total (\S+)$", metrics, re.MULTILINE)
    assert found, "rated_index_reopens_total not exposed"
    return float(found.group(1))


def reopens(caplog: pytest.LogCaptureFixture) -> int:
    return sum(REOPENED in r.getMessage() for r in caplog.records if r.name == "rated.service.reopen")


@pytest.mark.parametrize("route", list(ROUTES))
def test_each_route_serves_an_index_rebuilt_with_another_encoder_as_the_first_request(db, route, caplog):
    with TestClient(create_app(Settings(db=db))) as c:
        assert c.get("/health").json()["encoder"].startswith("hash-64")
        rebuild(db, encoder=HashEncoder(32))
        with caplog.at_level("WARNING", logger="rated.service.reopen"):
            call(c, route)  # was a 503 ("re-indexed ... reopen it") until the service was restarted
    assert reopens(caplog) == 1


@pytest.mark.parametrize(
    ("settings", "encoder", "policy"),
    [({"encoder": HashEncoder(32)}, "hash-32", "rated"), ({"policy": "static"}, "hash-64", "static")],
    ids=["other-encoder", "other-policy"],
)
def test_every_route_keeps_serving_the_rebuilt_index_after_one_reopen(db, settings, encoder, policy, caplog):
    with TestClient(create_app(Settings(db=db))) as c:
        assert c.post("/retrieve", json={"query": QUERY, "k": 1}).json()["hits"][0]["id"] == "mail.a"
        rebuild(db, **settings)
        with caplog.at_level("WARNING", logger="rated.service.reopen"):
            for _ in range(2):
                for route in ROUTES:
                    if route == "dashboard":
                        assert encoder in c.get("/dashboard?refresh=0").text
                    else:
                        call(c, route)
                h = c.get("/health").json()
                assert (h["status"], h["tools"], h["policy"], h["reopen_pending"]) == ("ok", 2, policy, False)
                assert h["encoder"].startswith(encoder)
            chart = c.get("/dashboard/outcomes.png")
            assert chart.status_code == 200 and chart.headers["content-type"] == "image/png"
            gone = c.get("/tools/mail.a")  # a tool of the old index only
            assert gone.status_code == 404 and gone.json()["error"] == "UnknownToolError"
        metrics = c.get("/metrics").text
    assert reopens(caplog) == 1
    assert 'rated_http_requests_total{route="/health",status="200"} 2.0' in metrics
    assert 'rated_feedback_total{outcome="success"} 2.0' in metrics
    assert 'error="StoreError"' not in metrics  # no request failed on the way
    with Retriever.open(db) as r:
        assert [(o.tool_id, o.outcome) for o in r.outcomes()] == [("mail.new", "success")] * 2
        assert r.meta.policy == policy


def test_requests_failing_together_reopen_the_index_once(db, monkeypatch):
    opened: list[object] = []
    real_open = Retriever.open

    def slow_counting_open(*args: Any, **kwargs: Any) -> Retriever:
        opened.append(args[0])
        time.sleep(0.2)  # the other requests fail on the old index meanwhile and wait for this one
        return real_open(*args, **kwargs)

    routes = [r for r in ROUTES if r != "feedback"] * 2  # no writes: the answers do not depend on order
    start = threading.Barrier(len(routes))
    with TestClient(create_app(Settings(db=db))) as c:
        rebuild(db, encoder=HashEncoder(32))
        monkeypatch.setattr(reopen_module.Retriever, "open", slow_counting_open)

        def request(route: str) -> None:
            start.wait()
            call(c, route)

        with ThreadPoolExecutor(len(routes)) as pool:
            list(pool.map(request, routes))  # re-raises a failed request's assertion
        assert len(opened) == 1  # every request got the retriever the first one to fail reopened
        assert opened[0] is c.app.state.serving.current.store  # type: ignore[attr-defined]


def test_an_index_that_cannot_be_reopened_is_a_503_saying_why_and_what_to_do(db, caplog):
    with TestClient(create_app(Settings(db=db))) as c:
        rebuild(db, encoder=own_encoder(32))
        for route in ROUTES:
            method, path, body, _ = ROUTES[route]
            r = c.request(method, path, json=body)
            assert r.status_code == 503 and r.json()["error"] == "StoreError", (route, r.text)
            detail = r.json()["detail"]
            assert "re-indexed with encoder my-own-encoder" in detail, detail
            assert "which rated cannot load by itself" in detail, detail
            assert "restart the HTTP service (rated serve)" in detail, detail
        health = c.get("/health")  # says why too, once a reopen failed (without trying again)
        assert health.status_code == 503 and health.json()["detail"] == detail, health.text
        assert f'rated_errors_total{{error="StoreError"}} {float(len(ROUTES) + 1)}' in c.get("/metrics").text
        # the failed reopen left the store open: once the index is one rated can load, it is served
        rebuild(db, encoder=HashEncoder(32))
        with caplog.at_level("WARNING", logger="rated.service.reopen"):
            for route in ROUTES:
                call(c, route)
    assert reopens(caplog) == 1


def test_an_app_that_opened_its_database_closes_it_after_a_reopen_and_a_passed_one_stays_open(db):
    with TestClient(create_app(Settings(db=db))) as c:
        rebuild(db, encoder=HashEncoder(32))
        call(c, "retrieve")
        reopened = c.app.state.serving.current  # type: ignore[attr-defined]
    with pytest.raises((StoreError, sqlite3.ProgrammingError)):  # closed at shutdown
        reopened.store.get_meta()

    with Retriever.open(db) as mine:
        with TestClient(create_app(Settings(), retriever=mine)) as c:
            rebuild(db, encoder=HashEncoder(16))
            call_16 = c.post("/retrieve", json={"query": QUERY, "k": 1}).json()
            assert call_16["hits"][0]["id"] == "mail.new"
            assert c.app.state.serving.current is not mine  # type: ignore[attr-defined]
        assert mine.store.get_meta()  # still the caller's, open after the service stopped


def test_health_and_a_scrape_report_a_rebuild_without_reopening_and_the_next_request_reopens(db, monkeypatch):
    """A liveness probe (and a Prometheus scrape) must stay cheap: a reopen loads the rebuilt index and its
    encoder (seconds for a real model), so they report the rebuild, and the next real request reopens."""
    opened: list[object] = []
    real_open = Retriever.open

    def slow_counting_open(*args: Any, **kwargs: Any) -> Retriever:
        opened.append(args[0])
        time.sleep(SLOW_OPEN)  # as loading a real encoder would take
        return real_open(*args, **kwargs)

    with TestClient(create_app(Settings(db=db))) as c:
        rebuild(db, encoder=HashEncoder(32))
        monkeypatch.setattr(reopen_module.Retriever, "open", slow_counting_open)
        for _ in range(2):
            start = time.perf_counter()
            r = c.get("/health")
            took = time.perf_counter() - start
            assert r.status_code == 200 and not opened and took < SLOW_OPEN, (r.text, opened, took)
            h = r.json()  # what it serves now, and that the next request will reopen
            assert (h["status"], h["reopen_pending"], h["tools"]) == ("ok", True, None), h
            assert h["encoder"].startswith("hash-64"), h
            assert reopen_count(c.get("/metrics").text) == 0 and not opened  # nor does a scrape reopen
        call(c, "retrieve")  # the first real request reopens
        assert len(opened) == 1
        h = c.get("/health").json()
        assert (h["status"], h["reopen_pending"], h["tools"]) == ("ok", False, 2), h
        assert h["encoder"].startswith("hash-32"), h
        assert reopen_count(c.get("/metrics").text) == 1 and len(opened) == 1


def test_health_after_a_failed_reopen_is_the_503_saying_why_until_the_store_changes(db):
    with TestClient(create_app(Settings(db=db))) as c:
        rebuild(db, encoder=own_encoder(32))
        assert c.get("/health").json()["reopen_pending"] is True  # nothing tried it yet
        assert c.post("/retrieve", json={"query": QUERY}).status_code == 503  # the reopen fails
        r = c.get("/health")
        assert r.status_code == 503 and "which rated cannot load by itself" in r.json()["detail"], r.text
        rebuild(db, encoder=HashEncoder(32))  # loadable again: pending, not the old failure
        h = c.get("/health").json()
        assert h["reopen_pending"] is True and h["encoder"].startswith("hash-64"), h
        call(c, "retrieve")
        assert c.get("/health").json()["reopen_pending"] is False
