"""How long a tool asked us to wait, read from its HTTP response headers, in seconds.

A rate limit's hint decides how long rated keeps a tool out of the ranking (and that it is not held against
the tool), so it is read strictly: a header that does not parse gives no hint (``None``), never an error
and never a guess, because a malformed header must not turn a tool's answer into an exception.

Accepted, names case-insensitive, the first that parses wins:

=====================  ===========================================================================
``retry-after-ms``     milliseconds (OpenAI and Azure OpenAI send it next to ``Retry-After``: finer)
``Retry-After``        RFC 9110 §10.2.3: delay-seconds (digits; a decimal such as ``1.5`` too) or an
                       HTTP-date in any of its three forms (IMF-fixdate, RFC 850, asctime); a date in
                       the past is 0
``RateLimit-Reset``    delta-seconds until the quota window resets (IETF httpapi rate-limit drafts)
``X-RateLimit-Reset``  no standard: GitHub and X send Unix epoch seconds, others a delay
=====================  ===========================================================================

A number of seconds of 1e9 or more (an epoch after 2001-09-09; nobody means a 31-year delay) is read as
Unix epoch seconds in every header that takes seconds, not only ``X-RateLimit-Reset`` (a server that puts
an epoch under another name must not keep a tool out for decades); above 1e11 (epoch milliseconds?) it is
no hint. So is any hint longer than ``MAX_HINT`` (31 days, a monthly quota's window): a longer wait is a
unit mix-up or a date far off, and honouring it would keep the tool out of the ranking for years; the
next header is read instead.

Not read: the structured ``RateLimit``/``RateLimit-Policy`` fields of the newest drafts and vendor
durations such as ``x-ratelimit-reset-requests: 6m0s``; a caller that has them passes ``retry_after``.
"""

from __future__ import annotations

import re
import time
from collections.abc import Mapping
from datetime import UTC
from email.utils import parsedate_to_datetime
from typing import Any

from rated.outcome import finite_seconds

__all__ = [
    "MAX_HINT",
    "RETRY_AFTER_HEADERS",
    "parse_retry_after",
    "quota_exhausted",
    "retry_after_from_headers",
]

# Header names in the order they are tried (lower case).
RETRY_AFTER_HEADERS = ("retry-after-ms", "retry-after", "ratelimit-reset", "x-ratelimit-reset")
_REMAINING = ("x-ratelimit-remaining", "ratelimit-remaining")  # requests left in the quota window
_SERVER_SAID = ("retry-after-ms", "retry-after")  # the server's own "come back in": what a 503 may carry
# ASCII digits only (\d takes any script's): no sign, exponent, "inf" or "nan"
_NUMBER = re.compile(r"\s*([0-9]+(?:\.[0-9]+)?)\s*")
_EPOCH_FROM = 1e9  # seconds at or above this are Unix seconds
_EPOCH_UNTIL = 1e11  # ... and above this not seconds at all (milliseconds, most likely): ignored
MAX_HINT = 31 * 86400.0  # the longest wait honoured, in seconds
_MAX_HEADERS = 1000  # headers scanned at most: a response is not a place to spend time


def parse_retry_after(value: str | bytes, *, now: float | None = None) -> float | None:
    """A ``Retry-After`` value as seconds from ``now`` (Unix seconds, default ``time.time()``), or None."""
    text = _text(value)
    if text is None:
        return None
    if _NUMBER.fullmatch(text):
        return _seconds(text, now)
    try:
        when = parsedate_to_datetime(text)
        stamp = when.timestamp() if when.tzinfo else when.replace(tzinfo=UTC).timestamp()
    except (TypeError, ValueError, OverflowError, IndexError):
        return None
    return _hint(max(0.0, stamp - _now(now)))


def retry_after_from_headers(
    headers: Mapping[str, Any] | Any, *, now: float | None = None, server_only: bool = False
) -> float | None:
    """The first hint the table above accepts, or None (no such header, or none parses).

    ``headers``: any mapping or object with ``items()`` (``httpx.Headers``, ``requests``'
    ``CaseInsensitiveDict``, aiohttp's ``CIMultiDictProxy``, ``http.client.HTTPMessage``, a dict).
    ``server_only`` reads only ``retry-after-ms`` and ``Retry-After``, the headers that say when the
    server itself will answer again (quota resets say when a window ends, not that a 503 will).
    """
    found = _wanted(headers)
    for name in _SERVER_SAID if server_only else RETRY_AFTER_HEADERS:
        value = found.get(name)
        if value is None:
            continue
        if name == "retry-after-ms":
            millis = _number(value)
            seconds = None if millis is None else _hint(millis / 1000.0)
        elif name == "retry-after":
            seconds = parse_retry_after(value, now=now)
        else:
            seconds = _seconds(value, now)
        if seconds is not None:
            return seconds
    return None


def quota_exhausted(headers: Mapping[str, Any] | Any) -> bool:
    """True when ``X-RateLimit-Remaining`` or ``RateLimit-Remaining`` says no request is left in the
    quota window (``0``): how GitHub marks a 403 that is a rate limit, not a refusal of credentials."""
    found = _wanted(headers, _REMAINING)
    return any(_number(value) == 0.0 for value in found.values())


def _wanted(headers: object, names: tuple[str, ...] = RETRY_AFTER_HEADERS) -> dict[str, str]:
    """The headers of ``names``, lower-cased, first occurrence each; never raising, whatever ``headers``."""
    out: dict[str, str] = {}
    try:
        items = headers.items()  # type: ignore[attr-defined]
        for count, (key, value) in enumerate(items):
            if count >= _MAX_HEADERS:
                break
            name = _text(key)
            text = _text(value)
            if name is not None and text is not None:
                out.setdefault(name.strip().lower(), text)
    except Exception:  # not a mapping, or one whose iteration fails: no hint rather than an error
        pass
    return {name: out[name] for name in names if name in out}


def _seconds(text: str, now: float | None) -> float | None:
    """A header's number of seconds as a wait: a delay, or an epoch when it is that large (see above)."""
    value = _number(text)
    if value is None or value < _EPOCH_FROM:
        return _hint(value)
    if value > _EPOCH_UNTIL:
        return None
    return _hint(max(0.0, value - _now(now)))


def _hint(seconds: float | None) -> float | None:
    seconds = finite_seconds(seconds)
    return None if seconds is None or seconds > MAX_HINT else seconds


def _number(text: str) -> float | None:
    match = _NUMBER.fullmatch(text)
    return finite_seconds(float(match.group(1))) if match else None


def _text(value: object) -> str | None:
    if isinstance(value, bytes):
        return value.decode("latin-1")
    return value if isinstance(value, str) else None


def _now(now: float | None) -> float:
    return time.time() if now is None else float(now)
