"""The dashboard shows the retired-endpoint rule's view of each tool listed: whether it holds, from how
many different queries of how many it needs (``rated.retired``), read from the evidence, never written.
The catalog and its clean history: ``retired_catalog`` (the ``retriever`` and ``client`` fixtures of
``conftest.py``), on the wall clock, which the dashboard reads."""

from __future__ import annotations

import re
import time

import pytest

from rated.classify import outcome_from_status
from rated.retired import RetiredStatus
from rated.service.dashboard import take_snapshot


@pytest.fixture
def now() -> list[float]:
    """The wall clock: the dashboard reads each run as of ``time.time()``."""
    return [time.time()]


def row_of(page: str, tool_id: str) -> str:
    table = page.split("<h2>Tools with state", 1)[1].split("<h2>Recent outcomes", 1)[0]
    return next(r for r in table.split("<tr") if f'<td class="id">{tool_id}' in r)


def test_rows_show_the_rule(client, retriever, now):
    for who in ("Ada", "Bob", "Cy"):
        body = {"tool_id": "mail.a", "status": 404, "query": f"email to {who}"}
        assert client.post("/feedback", json=body).status_code == 200
    client.post("/feedback", json={"tool_id": "weather", "status": 410, "query": "forecast"})
    client.post("/feedback", json={"tool_id": "mail.b", "outcome": "tool_error"})
    states, log = retriever.store.load_states(), retriever.outcomes(limit=None)
    page = client.get("/dashboard").text
    assert "retired endpoint?</th>" in page
    mail = row_of(page, "mail.a")
    assert re.search(r'<span class="bad">yes</span> <span class="muted">3/3 queries</span>', mail)
    assert "404/410 from 3 different queries since the last success: counted as tool_error" in mail
    assert 'no <span class="muted">1/10 queries</span>' in row_of(page, "weather")
    assert "queries" not in row_of(page, "mail.b")  # failing, but no run of 404/410s
    assert retriever.store.load_states() == states and retriever.outcomes(limit=None) == log  # read only


def test_the_snapshot_carries_it(retriever, now):
    for who in ("Ada", "Bob", "Cy"):
        retriever.feedback("mail.a", outcome_from_status(404), query=f"email to {who}")
    snap = take_snapshot(retriever, now[0])
    by_id = {row.id: row for row in snap.rows}
    assert by_id["mail.a"].retired == RetiredStatus(True, 3, 3, 1, now[0])
    now[0] += 2 * 86_400  # the evidence ages on the retriever's clock: the run is over
    assert {row.id: row.retired for row in take_snapshot(retriever, now[0]).rows}["mail.a"] is None
