"""The retired-endpoint rule through ``RatedClient`` and ``AsyncRatedClient``: a feedback result says when
its 404/410 was counted as ``tool_error`` and gives the tool's run (``RetiredStatus``), and ``tools`` /
``tool_health`` carry each tool's run, as the service answers them."""

from __future__ import annotations

import asyncio

import httpx

from rated import OutcomeKind, outcome_from_status
from rated.client import AsyncRatedClient, FeedbackResult
from rated.client.wire import _feedback_result, _tool_health
from rated.retired import RetiredStatus

CLEAN = 20  # successes before the 404s: a clean history, so three different queries are enough


def clean_history(retriever) -> None:
    for i in range(CLEAN):
        retriever.feedback("mail.a", "success", query=f"email number {i}")


def test_feedback_result_says_when_a_404_counted(client, retriever):
    clean_history(retriever)
    results = [client.feedback("mail.a", status=404, query=f"send to {who}") for who in ("ann", "bob", "cy")]
    assert [r.outcome.kind for r in results] == [OutcomeKind.CALLER_ERROR] * 3
    assert [r.counted_as for r in results] == [None, None, OutcomeKind.TOOL_ERROR]
    assert results[2].retired == RetiredStatus(True, 3, 3, 1, 1000.0)
    assert results[0].retired == RetiredStatus(False, 1, 3, 0, 1000.0)
    # a tracked call's 404 goes as its status, so it is weighed and answered alike
    tracked = client.feedback("mail.a", outcome_from_status(410), query="send to di")
    assert tracked.counted_as is OutcomeKind.TOOL_ERROR and tracked.retired.queries == 4
    plain = client.feedback("mail.a", "timeout")
    assert (plain.counted_as, plain.retired) == (None, None)


def test_tools_and_tool_health_carry_the_run(client, retriever):
    clean_history(retriever)
    for who in ("ann", "bob", "cy"):
        client.feedback("mail.a", status=404, query=f"send to {who}")
    by_id = {h.tool.id: h for h in client.tools()}
    assert by_id["mail.a"].retired == RetiredStatus(True, 3, 3, 1, 1000.0)
    assert by_id["mail.b"].retired is None
    assert client.tool_health("mail.a").retired == by_id["mail.a"].retired


def test_the_async_client_too(aconnect, retriever):
    clean_history(retriever)

    async def main() -> list[FeedbackResult]:
        async with aconnect() as c:
            done = [await c.feedback("mail.a", status=404, query=f"send to {who}") for who in ("a", "b", "c")]
            assert (await c.tool_health("mail.a")).retired.holds
            return done

    results = asyncio.run(main())
    assert [r.counted_as for r in results] == [None, None, OutcomeKind.TOOL_ERROR]


def test_an_older_services_answers_are_read_without_it():
    old = {"recorded": True, "tool_id": "t", "outcome": "caller_error", "retry_after": None, "healthy": True}
    result = _feedback_result(old)
    assert (result.counted_as, result.retired) == (None, None)
    row = {
        "id": "t",
        "name": "t",
        "source": "custom",
        "prior": 0.5,
        "healthy": True,
        "successes": 0,
        "failures": 0,
        "caller_errors": 0,
        "last_outcome": None,
        "last_time": None,
        "components": {},
    }
    assert _tool_health(row).retired is None


def test_a_mock_service_answer_is_read(monkeypatch):
    answer = {
        "recorded": True,
        "tool_id": "t",
        "outcome": "caller_error",
        "retry_after": None,
        "healthy": False,
        "counted_as": "tool_error",
        "retired": {"holds": True, "queries": 12, "need": None, "counted": 3, "since": 5.0, "summary": "..."},
    }

    async def main() -> FeedbackResult:
        transport = httpx.MockTransport(lambda request: httpx.Response(200, json=answer))
        async with AsyncRatedClient("http://rated.test", transport=transport) as c:
            return await c.feedback("t", status=404, query="q")

    result = asyncio.run(main())
    assert result.counted_as is OutcomeKind.TOOL_ERROR
    assert result.retired == RetiredStatus(True, 12, None, 3, 5.0)
