"""``AsyncRatedClient`` against the real service app through ``httpx.ASGITransport``: the same hits as the
retriever, feedback, tracked calls reported once, errors as rated's classes, and the ``a``-names of
``Retriever`` on asyncio."""

from __future__ import annotations

import asyncio

import httpx
import pytest

from rated import Outcome, OutcomeKind, tool_definitions
from rated.client import AsyncRatedClient, ServiceUnreachableError
from rated.errors import ConfigError, QueryError, UnknownToolError
from rated.retriever import Retriever

QUERY = "send an email message"
REQUEST = httpx.Request("GET", "https://mail.invalid/send")


def log(r: Retriever, tool_id: str = "mail.a") -> list[tuple[str, float | None]]:
    return [(rec.outcome, rec.retry_after) for rec in r.outcomes(tool_id)]


def test_retrieve_and_feedback_as_the_retriever(aconnect, retriever):
    async def main() -> None:
        async with aconnect() as client:
            assert await client.retrieve(QUERY, k=4) == retriever.retrieve(QUERY, k=4)
            queries = [QUERY, "weather forecast for Oslo"]
            assert await client.retrieve_many(queries, k=2) == retriever.retrieve_many(queries, k=2)
            defs = await client.retrieve(QUERY, k=3, format="anthropic")
            assert defs == tool_definitions(retriever.retrieve(QUERY, k=3), "anthropic")
            top = (await client.retrieve(QUERY, k=1))[0].id
            result = await client.feedback(top, status=503, query=QUERY)
            assert (result.outcome, result.healthy) == (Outcome(OutcomeKind.TOOL_ERROR), False)
            assert (await client.retrieve(QUERY, k=1))[0].id != top
            assert [t.to_dict() for t in await client.tools()] == [t.to_dict() for t in retriever.tools()]
            assert (await client.tool_health(top)).stats.failures == 1
            assert (await client.health()).tools == 5

    asyncio.run(main())


def test_track_and_call_report_once_as_the_retriever(aconnect, retriever):
    async def send(to: str) -> str:
        await asyncio.sleep(0)
        return f"sent to {to}"

    async def main() -> None:
        async with aconnect() as client:
            async with client.track("mail.a", query=QUERY) as call:
                await asyncio.sleep(0)
            assert call.outcome == Outcome(OutcomeKind.SUCCESS)
            with pytest.raises(httpx.HTTPStatusError):
                async with client.track("mail.a"):
                    response = httpx.Response(429, headers={"Retry-After": "30"}, request=REQUEST)
                    raise httpx.HTTPStatusError("429", request=REQUEST, response=response)
            assert await client.call("mail.a", send, {"to": "ann"}) == "sent to ann"
            assert await client.call("mail.a", lambda: "plain") == "plain"
            with pytest.raises(TypeError, match="do not fit"):
                await client.call("mail.a", send, {"from": "ann"})
            with pytest.raises(asyncio.CancelledError):
                async with client.track("mail.a"):
                    raise asyncio.CancelledError  # cancellation says nothing about the tool

    asyncio.run(main())
    assert log(retriever) == [
        ("success", None),
        ("rate_limited", 30.0),
        ("success", None),
        ("success", None),
        ("caller_error", None),
    ]


def test_an_unknown_id_fails_on_entering_before_the_block_runs(aconnect, retriever):
    ran: list[int] = []

    async def main() -> None:
        async with aconnect() as client:
            with pytest.raises(UnknownToolError) as info:
                async with client.track("nope"):
                    ran.append(1)
            assert info.value.tool_id == "nope"
            with pytest.raises(UnknownToolError):
                await client.call("nope", lambda: ran.append(2))
            with pytest.raises(QueryError):
                async with client.track("mail.a", query=" "):
                    ran.append(3)

    asyncio.run(main())
    assert ran == [] and retriever.outcomes() == []


def test_the_retrievers_a_names_are_the_same_calls(aconnect, retriever):
    async def main() -> None:
        async with aconnect() as client:
            assert await client.aretrieve(QUERY, k=2) == retriever.retrieve(QUERY, k=2)
            assert await client.aretrieve_many([QUERY], 1) == retriever.retrieve_many([QUERY], 1)
            await client.afeedback("mail.b", "timeout", query=QUERY)
            async with client.atrack("mail.b"):
                pass
            assert await client.acall("mail.b", lambda: 1) == 1

    asyncio.run(main())
    assert log(retriever, "mail.b") == [("timeout", None), ("success", None), ("success", None)]


def test_errors_are_mapped_as_for_the_sync_client(aconnect):
    async def main() -> None:
        async with aconnect() as client:
            with pytest.raises(UnknownToolError):
                await client.feedback("nope", "success")
            with pytest.raises(ConfigError, match="max_k"):
                await client.retrieve(QUERY, k=6)
            with pytest.raises(ConfigError, match="not both"):
                await client.feedback("mail.a", "success", status=200)

    asyncio.run(main())


def test_no_answer_is_unreachable_and_a_failed_report_is_only_logged(caplog):
    def refuse(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/feedback":
            raise httpx.ConnectError("connection refused")
        return httpx.Response(
            200,
            json={
                "id": "mail.a",
                "name": "x",
                "source": "custom",
                "prior": 0.5,
                "healthy": True,
                "successes": 0,
                "failures": 0,
                "caller_errors": 0,
                "last_outcome": None,
                "last_time": None,
                "components": {},
            },
        )

    async def main() -> None:
        client = AsyncRatedClient("http://rated.test", transport=httpx.MockTransport(refuse))
        with pytest.raises(ServiceUnreachableError, match="rated.test/feedback.*not sent"):
            await client.feedback("mail.a", "success")
        assert await client.call("mail.a", lambda: "done") == "done"  # the report failed: logged only
        await client.aclose()
        assert repr(client) == "AsyncRatedClient('http://rated.test')"

    asyncio.run(main())
    assert "could not report the outcome of tool 'mail.a'" in caplog.text


def test_close_is_not_a_coroutine_that_closes_nothing_unawaited_it_names_aclose():
    """``RatedClient.close()`` and ``Retriever.close()`` are plain calls; an async ``close`` written the same
    way would return a coroutine and close nothing. There is no ``close``: the error says what to call."""
    client = AsyncRatedClient(
        "http://rated.test", transport=httpx.MockTransport(lambda r: httpx.Response(200))
    )
    with pytest.raises(AttributeError, match=r"no close\(\): use 'await client.aclose\(\)'"):
        client.close()
    assert not hasattr(client, "close")
    asyncio.run(client.aclose())
