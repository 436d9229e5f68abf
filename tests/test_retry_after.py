"""Rate-limit hints read from response headers: what parses, what is refused, and in which order."""

from __future__ import annotations

import email.message
from datetime import UTC, datetime
from email.utils import format_datetime

import httpx
import pytest

from rated.retry_after import parse_retry_after, retry_after_from_headers

NOW = datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC).timestamp()


@pytest.mark.parametrize(
    ("value", "seconds"),
    [
        ("120", 120.0),
        (" 5 ", 5.0),
        ("0", 0.0),
        ("1.5", 1.5),
        (b"30", 30.0),
        ("Sun, 01 Mar 2026 12:00:40 GMT", 40.0),  # IMF-fixdate, 40 s ahead
        ("Sunday, 01-Mar-26 12:01:00 GMT", 60.0),  # RFC 850
        ("Sun Mar  1 12:00:10 2026", 10.0),  # asctime: no zone, GMT by definition
        ("Sun, 01 Mar 2026 12:00:30 -0000", 30.0),
        ("Sun, 01 Mar 2026 13:00:30 +0100", 30.0),
        ("Wed, 21 Oct 2015 07:28:00 GMT", 0.0),  # in the past: go now
    ],
)
def test_retry_after_values(value: str | bytes, seconds: float) -> None:
    assert parse_retry_after(value, now=NOW) == pytest.approx(seconds)


@pytest.mark.parametrize(
    "value",
    [
        "",
        "soon",
        "-5",
        "+5",
        "1e3",
        "inf",
        "nan",
        "0x10",
        "5 s",
        "9" * 400,
        "Sun, 01 Mar 99999 12:00:00 GMT",
        None,
        7,
    ],
)
def test_malformed_retry_after_gives_no_hint(value: object) -> None:
    assert parse_retry_after(value, now=NOW) is None  # type: ignore[arg-type]


def test_http_date_is_measured_from_the_wall_clock_by_default() -> None:
    soon = format_datetime(datetime.now(UTC).replace(microsecond=0), usegmt=True)
    assert 0.0 <= parse_retry_after(soon) <= 1.0


@pytest.mark.parametrize(
    ("headers", "seconds"),
    [
        ({"Retry-After": "7"}, 7.0),
        ({"retry-after": "7"}, 7.0),
        ({"RETRY-AFTER": "7"}, 7.0),
        ({b"Retry-After": b"7"}, 7.0),
        ({"retry-after-ms": "1500", "Retry-After": "2"}, 1.5),  # the finer one first
        ({"retry-after-ms": "later", "Retry-After": "2"}, 2.0),  # the first that parses wins
        ({"RateLimit-Reset": "12"}, 12.0),
        ({"Retry-After": "soon", "RateLimit-Reset": "12"}, 12.0),
        ({"X-RateLimit-Reset": "45"}, 45.0),  # small: a delay
        ({"X-RateLimit-Reset": str(int(NOW) + 90)}, 90.0),  # an epoch (GitHub, X)
        ({"X-RateLimit-Reset": str(int(NOW) - 90)}, 0.0),  # an epoch in the past
        ({"X-RateLimit-Reset": str(int(NOW) * 1000)}, None),  # epoch milliseconds: not guessed
        ({"Retry-After": "3", "X-RateLimit-Reset": "45"}, 3.0),
        ({"Content-Type": "application/json"}, None),
        ({}, None),
    ],
)
def test_headers_in_order(headers: dict, seconds: float | None) -> None:
    assert retry_after_from_headers(headers, now=NOW) == seconds


def test_real_header_containers() -> None:
    assert retry_after_from_headers(httpx.Headers({"Retry-After": "4"}), now=NOW) == 4.0
    message = email.message.Message()  # what urllib's HTTPError carries
    message["Retry-After"] = "6"
    assert retry_after_from_headers(message, now=NOW) == 6.0


class _Exploding:
    def items(self):
        raise RuntimeError("closed")


@pytest.mark.parametrize("headers", [None, 5, "Retry-After: 5", [("Retry-After", "5", "x")], _Exploding()])
def test_things_that_are_not_headers_give_no_hint(headers: object) -> None:
    assert retry_after_from_headers(headers, now=NOW) is None


def test_server_only_reads_the_servers_own_headers() -> None:
    quota = {"RateLimit-Reset": "12", "X-RateLimit-Reset": "45"}
    assert retry_after_from_headers(quota, now=NOW, server_only=True) is None
    assert retry_after_from_headers({**quota, "Retry-After": "3"}, now=NOW, server_only=True) == 3.0


# ---- hints no server means: they would keep a tool out of the ranking for decades --------------------
@pytest.mark.parametrize(
    ("headers", "seconds"),
    [
        ({"Retry-After": str(int(NOW) + 90)}, 90.0),  # an epoch where a delay belongs: read as the epoch
        ({"RateLimit-Reset": str(int(NOW) + 90)}, 90.0),
        ({"Retry-After": str(int(NOW) - 90)}, 0.0),
        ({"Retry-After": str(int(NOW) * 1000)}, None),  # epoch milliseconds: not guessed
        ({"RateLimit-Reset": str(int(NOW) * 1000)}, None),
        ({"Retry-After": "99999999"}, None),  # three years: a unit mix-up, no hint
        ({"retry-after-ms": "99999999999"}, None),  # three years in milliseconds
        ({"Retry-After": "Sun, 01 Mar 9999 12:00:00 GMT"}, None),
        ({"X-RateLimit-Reset": str(int(NOW) + 100 * 86400)}, None),  # an epoch 100 days ahead
        ({"Retry-After": "2678400"}, 2678400.0),  # 31 days: the longest honoured (a monthly quota)
        ({"Retry-After": "99999999", "X-RateLimit-Reset": "45"}, 45.0),  # the next header is read
    ],
)
def test_absurd_hints_are_no_hints(headers: dict, seconds: float | None) -> None:
    assert retry_after_from_headers(headers, now=NOW) == seconds


@pytest.mark.parametrize("value", ["\u0663", "\uff11\uff12", "1\u0660"])  # Arabic-Indic, full-width digits
def test_only_ascii_digits_are_seconds(value: str) -> None:
    assert parse_retry_after(value, now=NOW) is None
