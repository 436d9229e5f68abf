"""``rated_http_requests_total`` and ``rated_http_request_seconds`` label a request by the route that served
it: the app's API routes and FastAPI's own (``/docs``, ``/openapi.json``, ``/redoc``, the OAuth2 redirect)
by their path, anything else as ``unmatched``, so a scan of random URLs adds no label (bounded series)."""

from __future__ import annotations

import re

from starlette.routing import Route

OWN = ("/docs", "/openapi.json", "/redoc", "/docs/oauth2-redirect")


def route_labels(text: str) -> dict[tuple[str, str], float]:
    """``(route, status) -> count`` of ``rated_http_requests_total`` in a /metrics text."""
    found = re.findall(r'rated_http_requests_total\{route="([^"]*)",status="(\d+)"\} (\S+)', text)
    return {(route, status): float(value) for route, status, value in found}


def test_fastapis_own_routes_are_counted_under_their_path(client):
    for path in OWN:
        assert client.get(path).status_code == 200, path
    assert client.post("/docs").status_code == 405  # its path matched, not its method
    labels = route_labels(client.get("/metrics").text)
    assert all(labels[(path, "200")] == 1.0 for path in OWN), labels
    assert labels[("/docs", "405")] == 1.0
    assert ("unmatched", "200") not in labels
    latency = client.get("/metrics").text
    times = {path: 2.0 if path == "/docs" else 1.0 for path in OWN}
    assert all(f'rated_http_request_seconds_count{{route="{p}"}} {n}' in latency for p, n in times.items())


def test_paths_no_route_serves_stay_unmatched_and_every_label_is_a_route_of_the_app(client):
    for path in ("/docs/extra", "/redoc.html", "/openapi.yaml", "/no/such/route", "/.env"):
        assert client.get(path).status_code == 404, path
    labels = route_labels(client.get("/metrics").text)
    assert labels[("unmatched", "404")] == 5.0
    served = {route.path for route in client.app.routes if isinstance(route, Route)}
    assert {route for route, _ in labels} <= served | {"unmatched"}
