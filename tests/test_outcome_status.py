"""``Outcome.status``: the HTTP status an outcome was classified from travels with it (classified
statuses, exceptions carrying a response, reported statuses, tracked calls), without changing what the
outcome is."""

from __future__ import annotations

import httpx
import pytest

from rated.classify import outcome_from_exception, outcome_from_status
from rated.errors import ConfigError
from rated.outcome import Outcome, OutcomeKind
from rated.reported import reported_outcome
from rated.tracking import TrackedCall

REQUEST = httpx.Request("GET", "https://api.invalid/v1/items/7")


def http_error(status: int, headers: dict | None = None) -> httpx.HTTPStatusError:
    response = httpx.Response(status, headers=headers, request=REQUEST)
    return httpx.HTTPStatusError(str(status), request=REQUEST, response=response)


@pytest.mark.parametrize("status", [200, 400, 404, 410, 401, 429, 500, 503, 504])
def test_a_classified_status_is_kept(status: int) -> None:
    assert outcome_from_status(status).status == status
    assert outcome_from_status(status, {"Retry-After": "5"}).status == status
    assert reported_outcome(status=status).status == status
    assert reported_outcome(status=status, retry_after=5).status == status


def test_an_exceptions_status_is_kept() -> None:
    assert outcome_from_exception(http_error(404)).status == 404
    assert outcome_from_exception(http_error(429, {"Retry-After": "3"})).status == 429
    redirect = outcome_from_exception(http_error(302))  # an error with a redirect: the tool's failure
    assert (redirect.kind, redirect.status) == (OutcomeKind.TOOL_ERROR, 302)
    assert outcome_from_exception(httpx.ReadTimeout("slow", request=REQUEST)).status is None
    try:
        raise RuntimeError("wrapped") from http_error(410)
    except RuntimeError as exc:
        assert outcome_from_exception(exc).status == 410


def test_a_group_keeps_the_status_only_when_its_members_agree() -> None:
    same = ExceptionGroup("g", [http_error(404), http_error(404)])
    mixed = ExceptionGroup("g", [http_error(404), http_error(400)])
    assert outcome_from_exception(same).status == 404
    outcome = outcome_from_exception(mixed)
    assert outcome.kind is OutcomeKind.CALLER_ERROR and outcome.status is None


def test_status_is_not_part_of_what_the_outcome_is() -> None:
    assert Outcome(OutcomeKind.CALLER_ERROR, status=404) == Outcome(OutcomeKind.CALLER_ERROR)
    assert hash(Outcome(OutcomeKind.CALLER_ERROR, status=404)) == hash(Outcome(OutcomeKind.CALLER_ERROR))
    assert Outcome.of(Outcome("caller_error", status=410)).status == 410
    assert Outcome("caller_error").status is None and reported_outcome("caller_error").status is None


@pytest.mark.parametrize("bad", [99, 600, True, 404.0, "404"])
def test_a_status_outside_http_is_refused(bad: object) -> None:
    with pytest.raises(ConfigError, match="status must be an HTTP status"):
        Outcome(OutcomeKind.CALLER_ERROR, status=bad)  # type: ignore[arg-type]


def test_tracked_calls_report_the_status() -> None:
    sent: list[Outcome] = []
    with pytest.raises(httpx.HTTPStatusError), TrackedCall("t", "q", lambda t, o, q: sent.append(o)):
        raise http_error(404)
    with TrackedCall("t", "q", lambda t, o, q: sent.append(o)) as call:
        call.report_status(410)
    with TrackedCall("t", "q", lambda t, o, q: sent.append(o)) as call:
        call.report(Outcome("caller_error", status=404), retry_after=1)
    assert [o.status for o in sent] == [404, 410, 404]
