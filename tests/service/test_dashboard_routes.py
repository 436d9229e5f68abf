"""GET /dashboard and GET /dashboard/outcomes.png through the app: content, order, escaping, errors."""

from __future__ import annotations

import inspect
import re

import pytest
from fastapi.testclient import TestClient

from rated import Tool
from rated.encode.testing import HashEncoder
from rated.retriever import Retriever
from rated.service.routes import dashboard as dashboard_routes

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
EVIL = "<script>alert(1)</script>"


def catalog() -> list[Tool]:
    return [
        Tool(id="mail.a", name="send_email", description="Send an email message"),
        Tool(id="weather", name="weather_forecast", description="Weather forecast for a city"),
        Tool(id=EVIL, name='<img src=x onerror="alert(2)">', description="Create a calendar event"),
    ]


@pytest.fixture
def retriever(tmp_path):
    r = Retriever.from_catalog(catalog(), tmp_path / "rated.db", encoder=HashEncoder(64))
    yield r
    r.close()


def tool_rows(page: str) -> list[str]:
    """The (escaped) ids in the tools table, in page order."""
    table = page.split("<h2>Tools with state", 1)[1].split("<h2>Recent outcomes", 1)[0]
    return re.findall(r'<td class="id">(.*?)(?:<br>|</td>)', table)


def report(client: TestClient, tool_id: str, outcome: str, **extra: object) -> None:
    r = client.post("/feedback", json={"tool_id": tool_id, "outcome": outcome, **extra})
    assert r.status_code == 200, r.text


def test_page_without_state(client, tmp_path):
    r = client.get("/dashboard")
    assert r.status_code == 200
    assert r.headers["content-type"].startswith("text/html")
    assert r.headers["cache-control"] == "no-store"
    page = r.text
    assert "<b>3</b> tools indexed" in page and "<b>0</b> unhealthy now" in page
    assert "<b>0</b> outcomes in the last 60 min (none reported)" in page
    assert "No tool has state yet" in page and "No outcomes reported yet" in page
    assert "policy <b>rated</b>" in page and "encoder <b>hash-64" in page
    assert str(tmp_path / "rated.db") in page
    assert '<meta http-equiv="refresh" content="10">' in page  # the default
    assert '<img src="dashboard/outcomes.png?minutes=60"' in page
    # self-contained: nothing fetched from elsewhere, no script at all
    assert "<script" not in page and "http://" not in page and "https://" not in page
    assert "<link" not in page


def test_failures_put_unhealthy_tools_first_with_their_streak(client, retriever):
    report(client, "weather", "tool_error")
    report(client, "weather", "timeout")
    report(client, "mail.a", "caller_error")
    report(client, "mail.a", "success")  # the most recent outcome, but mail.a is healthy
    assert [t.tool.id for t in retriever.tools() if not t.healthy] == ["weather"]

    page = client.get("/dashboard").text
    assert tool_rows(page) == ["weather", "mail.a"]  # unhealthy first; EVIL has no state: not listed
    assert '<b class="bad">1</b> unhealthy now' in page
    assert "<b>4</b> outcomes in the last 60 min" in page and "50.0% failed" in page
    weather = page.split('<tr class="unhealthy">', 1)[1].split("</tr>", 1)[0]
    assert "UNHEALTHY" in weather and "timeout" in weather
    assert weather.count(" ago</span>") == 2  # last outcome and failing since
    assert re.findall(r'<td class="num">(\d+)</td>', weather) == ["2", "2", "0"]  # calls, failures, caller
    assert "availability" in page and "reliability" in page and 'class="bar"' in page
    recent = page.split("<h2>Recent outcomes", 1)[1]
    assert re.findall(r'<td class="id">(.*?)</td>', recent) == ["mail.a", "mail.a", "weather", "weather"]


def test_every_user_string_is_escaped(client):
    report(client, EVIL, "rate_limited", retry_after=30)
    report(client, EVIL, "tool_error", query="<b>bold</b> & friends")
    page = client.get("/dashboard").text
    assert "<script" not in page and "<img src=x" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "&lt;img src=x onerror=&quot;alert(2)&quot;&gt;" in page
    assert tool_rows(page)[0] == "&lt;script&gt;alert(1)&lt;/script&gt;"
    assert "30 s" in page  # the retry-after of the rate-limited call


def test_refresh_parameter(client):
    assert '<meta http-equiv="refresh" content="3">' in client.get("/dashboard?refresh=3").text
    page = client.get("/dashboard", params={"refresh": 0, "minutes": 15}).text
    assert 'http-equiv="refresh"' not in page and "auto-refresh off" in page
    assert "outcomes in the last 15 min" in page and "outcomes.png?minutes=15" in page


@pytest.mark.parametrize(
    ("path", "where"),
    [
        ("/dashboard?refresh=abc", "query.refresh"),
        ("/dashboard?refresh=-1", "query.refresh"),
        ("/dashboard?refresh=2.5", "query.refresh"),
        ("/dashboard?refresh=3601", "query.refresh"),
        ("/dashboard?minutes=0", "query.minutes"),
        ("/dashboard?recent=100000", "query.recent"),
        ("/dashboard/outcomes.png?minutes=abc", "query.minutes"),
        ("/dashboard/outcomes.png?minutes=1441", "query.minutes"),
    ],
)
def test_bad_parameters_are_422_in_the_error_shape(client, path, where):
    r = client.get(path)
    assert r.status_code == 422
    body = r.json()
    assert body["error"] == "RequestValidationError" and body["detail"].startswith(where)


def test_chart_is_a_png_with_and_without_outcomes(client):
    empty = client.get("/dashboard/outcomes.png")
    assert empty.status_code == 200 and empty.headers["content-type"] == "image/png"
    assert empty.content[:8] == PNG_MAGIC and empty.headers["cache-control"] == "no-store"
    for outcome in ("success", "tool_error", "timeout", "rate_limited", "auth_error", "caller_error"):
        report(client, "mail.a", outcome)
    full = client.get("/dashboard/outcomes.png", params={"minutes": 5})
    assert full.status_code == 200 and full.content[:8] == PNG_MAGIC
    assert full.content != empty.content


def test_the_dashboard_never_writes_to_the_store(client, retriever):
    report(client, "weather", "tool_error")
    store = retriever.store
    before = (store.version(), store.catalog_version(), len(store.outcomes(limit=None)))
    for path in ("/dashboard", "/dashboard/outcomes.png", "/dashboard?refresh=0&recent=1"):
        assert client.get(path).status_code == 200
    assert (store.version(), store.catalog_version(), len(store.outcomes(limit=None))) == before


def test_handlers_run_in_the_thread_pool_like_every_route():
    # plain functions: FastAPI runs them in its thread pool, so store reads and drawing never block the loop
    for handler in (dashboard_routes.dashboard, dashboard_routes.outcomes_chart):
        assert not inspect.iscoroutinefunction(handler)


def test_openapi_documents_html_png_and_errors(client):
    paths = client.get("/openapi.json").json()["paths"]
    page, chart = paths["/dashboard"]["get"], paths["/dashboard/outcomes.png"]["get"]
    assert list(page["responses"]["200"]["content"]) == ["text/html"]
    assert list(chart["responses"]["200"]["content"]) == ["image/png"]
    for op in (page, chart):
        assert op["responses"]["422"]["content"]["application/json"]["schema"]["$ref"].endswith("/ErrorOut")
    assert {p["name"] for p in page["parameters"]} == {"refresh", "minutes", "recent"}
    assert {p["name"] for p in chart["parameters"]} == {"minutes"}


def test_dashboard_is_counted_in_metrics(client):
    client.get("/dashboard")
    client.get("/dashboard?refresh=x")
    text = client.get("/metrics").text
    assert 'rated_http_requests_total{route="/dashboard",status="200"} 1.0' in text
    assert 'rated_http_requests_total{route="/dashboard",status="422"} 1.0' in text
