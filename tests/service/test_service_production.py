"""The HTTP service as it runs in production: truthful health and metrics, concurrent writers on one
SQLite file, a bug answered in the error shape, and an OpenAPI schema that says what is sent. (An index
rebuilt under the service: test_service_http_reopen.py.)"""

from __future__ import annotations

import itertools
from concurrent.futures import ThreadPoolExecutor

import pytest
from fastapi.testclient import TestClient

from rated import Tool
from rated.encode.testing import HashEncoder
from rated.retriever import Retriever
from rated.service import Settings, create_app

QUERY = "send an email message"
TOOLS = [Tool(id=f"t{i}", name=f"tool_{i}", description=f"Send email message number {i}") for i in range(6)]


@pytest.fixture
def db(tmp_path):
    path = tmp_path / "svc.db"
    Retriever.from_catalog(TOOLS, db=path, encoder=HashEncoder(64)).close()
    return str(path)


def test_health_counts_tools_another_process_added(db):
    with TestClient(create_app(Settings(db=db))) as c:
        assert c.get("/health").json()["tools"] == len(TOOLS)
        with Retriever.open(db) as other:
            other.add_tools([Tool(id="extra", name="extra_tool", description="Another email tool")])
        assert c.get("/health").json()["tools"] == len(TOOLS) + 1


def test_a_bug_is_a_500_in_the_error_shape_and_shows_in_the_metrics(db, monkeypatch, caplog):
    with TestClient(create_app(Settings(db=db)), raise_server_exceptions=False) as c:

        def boom(*args, **kwargs):
            raise KeyError("internal detail")

        monkeypatch.setattr(c.app.state.serving.current, "retrieve", boom)  # type: ignore[attr-defined]
        with caplog.at_level("ERROR", logger="rated.service.app"):
            r = c.post("/retrieve", json={"query": QUERY})
        assert r.status_code == 500 and r.headers["content-type"] == "application/json"
        assert r.json() == {
            "error": "InternalError",
            "detail": "internal error: KeyError (a bug; traceback in the server log)",
        }
        assert any(rec.exc_info and rec.exc_info[0] is KeyError for rec in caplog.records)
        text = c.get("/metrics").text
        assert 'rated_http_requests_total{route="/retrieve",status="500"} 1.0' in text
        assert 'rated_errors_total{error="InternalError"} 1.0' in text
        assert 'rated_http_request_seconds_count{route="/retrieve"} 1.0' in text
        assert c.post("/feedback", json={"tool_id": "t1", "outcome": "success"}).status_code == 200


def test_openapi_documents_every_error_in_the_shape_the_service_sends(db):
    with TestClient(create_app(Settings(db=db))) as c:
        spec = c.get("/openapi.json").json()
    assert "HTTPValidationError" not in spec["components"]["schemas"]  # never sent
    for path, ops in spec["paths"].items():
        for method, op in ops.items():
            errors = {code: r for code, r in op["responses"].items() if code[0] in "45"}
            if path == "/metrics":
                continue
            assert "500" in errors, (method, path)
            if method == "post":
                assert {"413", "422"} <= set(errors), (method, path)
            if op.get("parameters"):
                assert "422" in errors, (method, path)
            for code, r in errors.items():
                ref = r["content"]["application/json"]["schema"]["$ref"]
                assert ref.endswith("/ErrorOut"), (method, path, code)


def test_concurrent_clients_of_two_services_on_one_sqlite_file_lose_no_feedback(db):
    """Two service instances (as two processes would) and several client threads each; every feedback
    acknowledged is in the store, and each instance's metrics count exactly its own requests."""
    apps = [create_app(Settings(db=db)), create_app(Settings(db=db))]
    per_worker, workers = 20, 6
    kinds = ("success", "tool_error", "timeout")
    with TestClient(apps[0]) as a, TestClient(apps[1]) as b:
        clients = (a, b)

        def work(w: int) -> list[int]:
            c = clients[w % 2]
            codes = []
            for j in range(per_worker):
                fb = {"tool_id": f"t{(w + j) % len(TOOLS)}", "outcome": kinds[j % 3], "query": f"email {j}"}
                codes.append(c.post("/feedback", json=fb).status_code)
                codes.append(c.post("/retrieve", json={"query": f"{QUERY} {j % 4}", "k": 3}).status_code)
            return codes

        with ThreadPoolExecutor(workers) as pool:
            codes = list(itertools.chain.from_iterable(pool.map(work, range(workers))))
        assert set(codes) == {200}
        fed = [
            sum(
                float(line.rsplit(" ", 1)[1])
                for line in c.get("/metrics").text.splitlines()
                if line.startswith("rated_feedback_total{")
            )
            for c in clients
        ]
        assert fed == [per_worker * workers / 2] * 2
    with Retriever.open(db) as r:
        assert len(r.outcomes(limit=None)) == per_worker * workers
        stats = [t.stats for t in r.tools()]
        assert sum(s.successes + s.failures for s in stats if s) == per_worker * workers


def test_health_is_a_503_when_the_store_is_gone(db):
    with TestClient(create_app(Settings(db=db))) as c:
        c.app.state.serving.current.store.close()  # type: ignore[attr-defined]
        r = c.get("/health")
        assert r.status_code == 503 and r.json()["error"] == "StoreError", r.text
