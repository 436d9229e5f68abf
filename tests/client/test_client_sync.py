"""``RatedClient`` against the real service app (in-process, no socket) over the same retriever the test
also calls directly: the same hits, definitions, health and learned state, and tracked calls reported once
as ``Retriever.track`` reports them."""

from __future__ import annotations

import httpx
import pytest

from rated import Outcome, OutcomeKind, outcome_from_status, tool_definitions
from rated.client import FeedbackResult, ServiceHealth, ServiceUnreachableError
from rated.errors import ConfigError, QueryError, UnknownToolError
from rated.retired import load_run
from rated.retriever import Retriever

QUERY = "send an email message"
WEATHER = "weather forecast for Oslo"
REQUEST = httpx.Request("GET", "https://mail.invalid/send")


def http_error(status: int, headers: dict[str, str] | None = None) -> httpx.HTTPStatusError:
    response = httpx.Response(status, headers=headers, request=REQUEST)
    return httpx.HTTPStatusError(str(status), request=REQUEST, response=response)


def log(r: Retriever, tool_id: str = "mail.a") -> list[tuple[str, float | None]]:
    return [(rec.outcome, rec.retry_after) for rec in r.outcomes(tool_id)]


def test_retrieve_gives_the_retrievers_hits(client, retriever):
    hits = client.retrieve(QUERY, k=4)
    assert hits == retriever.retrieve(QUERY, k=4)  # every field: tool, score, components, rank, degraded
    assert [h.rank for h in hits] == [1, 2, 3, 4] and hits[0].components and hits[0].bandit is not None
    mail = next(h.tool for h in hits if h.id == "mail.a")
    assert mail.parameters == {"type": "object", "properties": {"to": {"type": "string"}}}
    assert (mail.provider, mail.endpoint) == ("mailer", "https://mail.example/send")
    assert client.retrieve(WEATHER, k=1) == retriever.retrieve(WEATHER, k=1)
    assert (
        len(client.retrieve(QUERY)) == 3
    )  # without k, the service's default_k (3 here), as its other clients get


def test_retrieve_many_gives_the_retrievers_hits(client, retriever):
    queries = [QUERY, WEATHER, "create a calendar event"]
    assert client.retrieve_many(queries, k=2) == retriever.retrieve_many(queries, k=2)
    assert client.retrieve_many(iter(queries[:1]), k=1) == retriever.retrieve_many(queries[:1], k=1)
    assert client.retrieve_many([], k=2) == []


@pytest.mark.parametrize("fmt", ["openai", "openai_responses", "anthropic", "mcp"])
def test_a_format_gives_the_definitions_tool_definitions_gives(client, retriever, fmt):
    defs = client.retrieve(QUERY, k=3, format=fmt)
    assert defs == tool_definitions(retriever.retrieve(QUERY, k=3), fmt)
    assert defs.tool_id(defs.name("mail.b")) == "mail.b"  # two tools named send_email: names issued apart
    many = client.retrieve_many([QUERY, WEATHER], k=2, format=fmt)
    assert many == [tool_definitions(hits, fmt) for hits in retriever.retrieve_many([QUERY, WEATHER], k=2)]


def test_feedback_demotes_and_both_sides_see_it(client, retriever):
    top = client.retrieve(QUERY, k=1)[0].id
    result = client.feedback(top, "tool_error", query=QUERY)
    assert result == FeedbackResult(top, Outcome(OutcomeKind.TOOL_ERROR), healthy=False)
    assert client.retrieve(QUERY, k=1)[0].id != top
    assert client.retrieve(QUERY, k=5) == retriever.retrieve(QUERY, k=5)
    assert log(retriever, top) == [("tool_error", None)]
    assert retriever.outcomes(top)[0].query_hash is not None


def test_feedback_status_and_headers_are_classified_by_the_service(client, retriever):
    assert client.feedback("mail.a", status=400, query=QUERY).outcome == Outcome(OutcomeKind.CALLER_ERROR)
    assert client.feedback("mail.a", status=503, headers=httpx.Headers({"Retry-After": "120"})).outcome == (
        Outcome(OutcomeKind.RATE_LIMITED, 120.0)
    )
    limited = client.feedback("mail.a", status=429, retry_after=5)
    assert limited.outcome == Outcome(OutcomeKind.RATE_LIMITED, 5)
    # the status stays on the Outcome, as outcome_from_status keeps it in process (equality ignores it)
    assert limited.outcome.status == 429 == outcome_from_status(429).status
    assert client.feedback("mail.a", status=502).outcome == Outcome(OutcomeKind.TOOL_ERROR)
    # an Outcome keeps its own wait unless retry_after replaces it, as Retriever.feedback reads it
    own = Outcome(OutcomeKind.RATE_LIMITED, 7)
    assert client.feedback("mail.b", own).outcome.retry_after == 7
    assert client.feedback("mail.b", own, retry_after=9).outcome.retry_after == 9
    classified = outcome_from_status(429, {"Retry-After": "7"})  # its status kept, though sent by name
    assert client.feedback("mail.b", classified, retry_after=9).outcome.status == 429
    assert client.feedback("mail.b", True).outcome == Outcome(OutcomeKind.SUCCESS)
    assert log(retriever) == [
        ("caller_error", None),
        ("rate_limited", 120.0),
        ("rate_limited", 5.0),
        ("tool_error", None),
    ]
    assert log(retriever, "mail.b") == [
        ("rate_limited", 7.0),
        ("rate_limited", 9.0),
        ("rate_limited", 9.0),
        ("success", None),
    ]


def test_feedback_arguments_are_checked_before_anything_is_sent(connect, recording):
    rec = recording()
    client = connect(wrap=rec)
    with pytest.raises(ConfigError, match="not both"):
        client.feedback("mail.a", "success", status=200)
    with pytest.raises(ConfigError, match="give outcome"):
        client.feedback("mail.a")
    with pytest.raises(ConfigError, match="unknown outcome"):
        client.feedback("mail.a", "exploded")
    with pytest.raises(ConfigError, match="headers are read only with status"):
        client.feedback("mail.a", "success", headers={"Retry-After": "1"})
    with pytest.raises(ConfigError, match="retry_after"):
        client.feedback("mail.a", "rate_limited", retry_after=float("nan"))
    with pytest.raises(ConfigError, match="100 to 599"):
        client.feedback("mail.a", status=700)
    with pytest.raises(QueryError, match="empty"):
        client.feedback("mail.a", "success", query="  ")
    with pytest.raises(UnknownToolError):
        client.feedback("", "success")
    with pytest.raises(QueryError, match="must be a string"):
        client.retrieve(5)  # type: ignore[arg-type]
    with pytest.raises(QueryError, match=r"queries\[1\]: query is empty"):
        client.retrieve_many([QUERY, ""])
    with pytest.raises(QueryError, match="list of queries"):
        client.retrieve_many(QUERY)
    assert rec.sent == []


def test_tools_and_tool_health_report_what_the_retriever_does(client, retriever):
    client.feedback("weather", "tool_error")
    client.feedback("mail.a", "success")
    assert [t.to_dict() for t in client.tools()] == [t.to_dict() for t in retriever.tools()]
    assert [t.tool.id for t in client.tools(unhealthy=True)] == ["weather"]
    weather = client.tool_health("weather")
    assert weather.to_dict() == retriever.health("weather").to_dict()
    assert (weather.stats.failures, weather.stats.last_outcome) == (1, "tool_error")
    assert client.tool_health("mail.b").stats is None  # no outcome yet, as Retriever gives it


@pytest.mark.parametrize("tool_id", ["ns/with slash?#%", ".."])
def test_ids_that_are_not_url_safe_reach_the_service_whole(client, retriever, tool_id):
    assert client.tool_health(tool_id).to_dict() == retriever.health(tool_id).to_dict()
    assert client.feedback(tool_id, "success").tool_id == tool_id
    with client.track(tool_id):
        pass
    assert log(retriever, tool_id) == [("success", None), ("success", None)]


def test_health_of_the_service(client):
    health = client.health()
    assert isinstance(health, ServiceHealth)
    assert (health.status, health.tools, health.policy, health.reopen_pending) == ("ok", 5, "rated", False)
    assert health.encoder.startswith("hash-64")


def test_track_reports_each_call_once_classified_as_the_retriever_does(connect, recording, retriever):
    rec = recording()
    client = connect(wrap=rec)
    with client.track("mail.a", query=QUERY) as call:
        pass
    assert call.outcome == Outcome(OutcomeKind.SUCCESS)
    with pytest.raises(httpx.HTTPStatusError), client.track("mail.a"):
        raise http_error(503, {"Retry-After": "60"})
    with pytest.raises(httpx.HTTPStatusError), client.track("mail.a"):
        raise http_error(422)
    with pytest.raises(httpx.ReadTimeout), client.track("mail.a"):
        raise httpx.ReadTimeout("slow", request=REQUEST)
    with client.track("mail.a") as call:
        call.report_status(401)
    with pytest.raises(KeyboardInterrupt), client.track("mail.a"):
        raise KeyboardInterrupt  # says nothing about the tool: nothing reported
    assert log(retriever) == [
        ("success", None),
        ("rate_limited", 60.0),
        ("caller_error", None),
        ("timeout", None),
        ("auth_error", None),
    ]
    assert rec.sent.count(("POST", "/feedback")) == 5  # once per reported call
    assert rec.sent.count(("GET", "/tools/mail.a")) == 6  # the id checked before each block


def test_call_runs_the_tool_and_refuses_what_track_refuses(client, retriever):
    assert client.call("mail.a", lambda to: f"sent to {to}", {"to": "ann"}, query=QUERY) == "sent to ann"
    with pytest.raises(TypeError, match="do not fit"):
        client.call("mail.a", lambda to: to, {"from": "ann"})

    async def send() -> None: ...

    with pytest.raises(ConfigError, match="coroutine function"):
        client.call("mail.a", send)
    assert log(retriever) == [("success", None), ("caller_error", None)]


def test_an_unknown_id_fails_before_the_tool_runs(client, retriever):
    ran = []
    with pytest.raises(UnknownToolError) as info:
        client.call("nope", lambda: ran.append(1))
    assert info.value.tool_id == "nope"
    with pytest.raises(QueryError):
        client.track("mail.a", query="")
    assert ran == [] and retriever.outcomes() == []


def test_track_uses_the_catalogs_spelling_of_the_id(client, retriever):
    """A tool id typed in the other Unicode normal form is reported under the catalog's spelling."""
    retriever.add_tools([{"id": "caf\u00e9", "name": "coffee", "description": "Order a coffee"}])
    with client.track("cafe\u0301") as call:
        pass
    assert call.tool_id == "caf\u00e9" and log(retriever, "caf\u00e9") == [("success", None)]


def test_a_failed_report_is_logged_never_raised_over_the_tools_result(connect, recording, retriever, caplog):
    down = httpx.ConnectError("connection refused")
    rec = recording(fail={"/feedback": down})
    client = connect(wrap=rec)
    assert client.call("mail.a", lambda: "done") == "done"
    with pytest.raises(httpx.HTTPStatusError) as info, client.track("mail.a") as call:
        raise http_error(500)
    assert isinstance(call.report_error, ServiceUnreachableError)
    assert "could not report" in info.value.__notes__[0]
    assert "could not report the outcome of tool 'mail.a'" in caplog.text
    assert retriever.outcomes() == []


def test_context_manager_closes_the_connection(connect):
    client = connect()
    with client as same:
        assert same is client and same.health().status == "ok"
    with pytest.raises(RuntimeError):  # httpx: a closed client sends nothing
        client.health()
    assert repr(client) == "RatedClient('http://rated.test')"


def test_track_call_and_outcomes_keep_a_404s_status_for_the_retired_rule(client, retriever):
    """A 404 seen by a tracked call (or reported as an Outcome classified from one) reaches the service
    with its status, so the service weighs it as evidence of a retired endpoint (``rated.retired``)."""
    with pytest.raises(httpx.HTTPStatusError), client.track("mail.a", query="send to ann"):
        raise http_error(404)

    def gone() -> None:
        raise http_error(410)

    with pytest.raises(httpx.HTTPStatusError):
        client.call("mail.a", gone, query="send to bob")
    client.feedback("mail.a", outcome_from_status(404), query="send to cy")
    with client.track("mail.a", query="send to di") as call:
        call.report_status(404)
    run = load_run(retriever.store, "mail.a")
    assert run is not None and len(run.queries) == 4
    assert log(retriever) == [("caller_error", None)] * 4
    # an outcome its status alone would not give (a 503 with a Retry-After) is sent by name, as before
    client.feedback("mail.a", Outcome(OutcomeKind.RATE_LIMITED, 30.0, 503))
    assert log(retriever)[-1] == ("rate_limited", 30.0)
