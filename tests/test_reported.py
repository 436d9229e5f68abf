"""``reported_outcome``: an outcome name or a tool's HTTP status (and headers), exactly one of them."""

from __future__ import annotations

import math

import pytest

from rated.errors import ConfigError
from rated.outcome import Outcome, OutcomeKind
from rated.reported import reported_outcome

K = OutcomeKind


@pytest.mark.parametrize(
    ("status", "headers", "expected"),
    [
        (200, None, Outcome(K.SUCCESS)),
        (400, None, Outcome(K.CALLER_ERROR)),
        (422, {"Retry-After": "30"}, Outcome(K.CALLER_ERROR)),  # a hint means nothing on a 422
        (401, None, Outcome(K.AUTH_ERROR)),
        (429, None, Outcome(K.RATE_LIMITED)),
        (429, {"Retry-After": "30"}, Outcome(K.RATE_LIMITED, 30.0)),
        (429, {"x-ratelimit-reset": "12"}, Outcome(K.RATE_LIMITED, 12.0)),
        (503, None, Outcome(K.TOOL_ERROR)),
        (503, {"retry-after": "120"}, Outcome(K.RATE_LIMITED, 120.0)),
        (503, {"retry-after": "0"}, Outcome(K.TOOL_ERROR)),  # no wait named: an outage
        (504, None, Outcome(K.TIMEOUT)),
        (403, None, Outcome(K.AUTH_ERROR)),
        (403, {"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": "60"}, Outcome(K.RATE_LIMITED, 60.0)),
    ],
)
def test_a_status_is_classified(status, headers, expected):
    assert reported_outcome(status=status, headers=headers) == expected


def test_an_outcome_name_is_parsed_with_its_hint():
    assert reported_outcome(" Rate_Limited ", retry_after=30) == Outcome(K.RATE_LIMITED, 30.0)
    assert reported_outcome("caller_error") == Outcome(K.CALLER_ERROR)


@pytest.mark.parametrize(
    ("status", "headers", "retry_after", "expected"),
    [
        (429, {"Retry-After": "30"}, 5, Outcome(K.RATE_LIMITED, 5.0)),  # replaces the header's hint
        (429, {"Retry-After": "30"}, 0, Outcome(K.RATE_LIMITED, 0.0)),
        (503, None, 5, Outcome(K.RATE_LIMITED, 5.0)),  # as a Retry-After on the 503 would
        (503, {"Retry-After": "30"}, 0, Outcome(K.TOOL_ERROR)),  # 0: an outage, the header replaced
        (500, None, 30, Outcome(K.TOOL_ERROR)),  # a 500's Retry-After is not read either
        (200, None, 30, Outcome(K.SUCCESS)),
        (429, None, 0.1, Outcome(K.RATE_LIMITED, 0.1)),  # the float itself, not a rounded decimal
        (429, None, 1e-9, Outcome(K.RATE_LIMITED, 1e-9)),
        (429, None, 1e308, Outcome(K.RATE_LIMITED, 1e308)),  # seconds as given: no header heuristics
        (429, None, 2e9, Outcome(K.RATE_LIMITED, 2e9)),  # (a header's 2e9 would be read as an epoch)
        (403, None, 30, Outcome(K.RATE_LIMITED, 30.0)),  # a 403 naming a wait is a rate limit
        (403, None, 0, Outcome(K.AUTH_ERROR)),
        (403, {"X-RateLimit-Remaining": "0", "Retry-After": "60"}, 0, Outcome(K.RATE_LIMITED, 0.0)),
        (503, {"retry-after-ms": "90000", "x-other": "1"}, 5, Outcome(K.RATE_LIMITED, 5.0)),
    ],
)
def test_retry_after_with_a_status_stands_for_the_retry_after_header(status, headers, retry_after, expected):
    assert reported_outcome(status=status, headers=headers, retry_after=retry_after) == expected


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"outcome": "success", "status": 200}, "not both"),
        ({}, "give outcome"),
        ({"retry_after": 5}, "give outcome"),
        ({"outcome": "rate_limited", "headers": {"Retry-After": "5"}}, "headers are read only with status"),
        ({"status": 600}, "from 100 to 599, got 600"),
        ({"status": 99}, "got 99"),
        ({"status": True}, "got True"),
        ({"status": "429"}, "got '429'"),
        ({"status": 429.0}, "got 429.0"),
        ({"status": 429, "retry_after": -1}, "retry_after"),
        ({"status": 429, "retry_after": math.nan}, "retry_after"),
        ({"outcome": "timeout", "retry_after": math.inf}, "retry_after"),
        ({"outcome": "exploded"}, "unknown outcome"),
    ],
)
def test_misuse_is_a_config_error(kwargs, message):
    outcome = kwargs.pop("outcome", None)
    with pytest.raises(ConfigError, match=message):
        reported_outcome(outcome, **kwargs)
