"""``where=`` on the clients' retrieve and retrieve_many: the filter checked as the retriever checks it,
sent as the service reads it (``"where"`` in the body), and nothing sent for a filter that is no filter."""

from __future__ import annotations

import asyncio
import json

import httpx
import pytest

from rated.client import AsyncRatedClient, RatedClient
from rated.errors import QueryError
from rated.tool_filter import ToolFilter

BASE = "http://rated.test"
QUERY = "send an email message"
HIT = {
    "id": "mail.a",
    "name": "send_email",
    "description": "Send an email",
    "parameters": {},
    "endpoint": None,
    "source": "n8n",
    "provider": None,
    "score": 0.5,
    "semantic": 0.5,
    "prior": 0.5,
    "bandit": None,
    "healthy": True,
    "rank": 1,
    "components": {},
}


def recorded() -> tuple[list[dict], httpx.MockTransport]:
    bodies: list[dict] = []

    def answer(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        bodies.append(body)
        one = {"query": QUERY, "degraded": False, "hits": [HIT]}
        if request.url.path.endswith("/batch"):
            return httpx.Response(
                200, json={"count": len(body["queries"]), "results": [one] * len(body["queries"])}
            )
        return httpx.Response(200, json=one)

    return bodies, httpx.MockTransport(answer)


def test_the_filter_is_sent_as_the_service_reads_it():
    bodies, transport = recorded()
    with RatedClient(BASE, transport=transport) as client:
        hits = client.retrieve(QUERY, k=2, where={"source": "N8N", "exclude": ["mail.b"]})
        client.retrieve_many([QUERY, QUERY], k=2, where=ToolFilter(tags={"mail"}))
        client.retrieve(QUERY, where={"exclude": []})  # constrains nothing: no "where" at all
        client.retrieve(QUERY)
    assert [h.id for h in hits] == ["mail.a"]
    assert bodies[0] == {"query": QUERY, "k": 2, "where": {"exclude": ["mail.b"], "source": ["n8n"]}}
    assert bodies[1]["where"] == {"tags": ["mail"]} and bodies[1]["queries"] == [QUERY, QUERY]
    assert "where" not in bodies[2] and "where" not in bodies[3]


def test_the_async_client_sends_it_too():
    bodies, transport = recorded()

    async def run() -> None:
        async with AsyncRatedClient(BASE, transport=transport) as client:
            await client.aretrieve(QUERY, where={"provider": "acme"})
            await client.aretrieve_many([QUERY], where={"tools": ["mail.a"]})

    asyncio.run(run())
    assert [b["where"] for b in bodies] == [{"provider": ["acme"]}, {"tools": ["mail.a"]}]


@pytest.mark.parametrize(
    ("where", "message"),
    [
        ({"platform": "n8n"}, "unknown filter key"),
        ({"auth": "apikey"}, "unknown auth kind"),
        (["x"], "mapping"),
    ],
)
def test_a_malformed_filter_is_refused_before_anything_is_sent(where, message):
    bodies, transport = recorded()
    with RatedClient(BASE, transport=transport) as client, pytest.raises(QueryError, match=message):
        client.retrieve(QUERY, where=where)
    assert bodies == []
