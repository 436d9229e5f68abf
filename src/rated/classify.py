"""Which outcome an HTTP status or an exception means, so an agent need not sort its tools' failures by hand.

Getting this wrong is how learned health gets poisoned: a 400 caused by the agent's own arguments reported
as ``tool_error`` demotes a working tool, a 429 reported as an outage keeps it out for longer than the
server asked. Pure functions, no third-party imports: exceptions of httpx, requests, aiohttp, openai,
anthropic, stripe, botocore, google-api-core, urllib3 and the like are recognised by duck typing (their
class names and attributes), whether or not they are installed.

Statuses (``outcome_from_status``); RFC 9110 §15 says whose fault each one is:

====================  ============  ===================================================================
status                outcome       why
====================  ============  ===================================================================
1xx (as final)        tool_error    interim answers only (§15.2): the tool never gave a final one
2xx, 3xx              success       the tool answered (§15.3); a redirect is the client's to follow (§15.4)
4xx not listed        caller_error  "the client seems to have erred" (§15.5): 400 malformed, 404/410 no
                                    such resource, 405 method, 409 conflict with the resource's state,
                                    413/414/431 too large, 415 media type, 422 unprocessable arguments...
401, 407              auth_error    credentials missing or rejected (§15.5.2, §15.5.8): until fixed
402                   auth_error    the account must pay first (§15.5.3): until fixed, not the arguments
403                   auth_error    understood but refused for these credentials (§15.5.4)
403 + a rate limit    rate_limited  GitHub's limits: ``X-RateLimit-Remaining: 0`` (or ``RateLimit-Remaining``)
                                    or a positive ``Retry-After``; the hint as for a 429
408                   timeout       the server gave up waiting for the request (§15.5.9): transient
421                   tool_error    misdirected (§15.5.20): the connection reached a server that cannot
                                    answer for the tool; the arguments are not at fault
429                   rate_limited  too many requests (RFC 6585 §4); ``retry_after`` from the headers
                                    (``rated.retry_after``), None when they give none
5xx not listed        tool_error    "the server failed to fulfill an apparently valid request" (§15.6)
503 + Retry-After>0   rate_limited  unavailable for a time the server names (§15.6.4): respected, not
                                    held against it; a 503 without one (or with 0 / a past date) is an
                                    outage: tool_error. Likewise 529 (not standard: Anthropic's
                                    "overloaded")
504                   timeout       an upstream did not answer in time (§15.6.5)
511                   auth_error    network authentication required (RFC 6585 §6): until someone logs in
522, 524              timeout       not standard: a CDN could not connect to / hear from the origin in time
598, 599              timeout       not standard: proxies' read / connect timeout
====================  ============  ===================================================================

A 404 from an endpoint that is gone for good (a retired API) is the tool's fault, yet a status cannot tell
it from an argument naming no resource; the far more common second case decides here, for one call. Each
outcome keeps the status it came from (``Outcome.status``), and the retriever weighs the evidence across
calls: a tool answering 404 or 410 to many different queries in a row is counted as failing
(``rated.retired``). Report ``tool_error`` yourself (``call.report``) when you know better at once.
"""

from __future__ import annotations

from collections.abc import Mapping
from http import HTTPStatus
from numbers import Integral
from types import TracebackType
from typing import Any

from rated.errors import ConfigError
from rated.outcome import Outcome, OutcomeKind
from rated.retry_after import quota_exhausted, retry_after_from_headers
from rated.shown import shown

__all__ = ["outcome_from_exception", "outcome_from_status"]

_K = OutcomeKind
_ANNOUNCED = frozenset({503, 529})  # unavailable: rate_limited when the server names a positive wait
_SPECIAL: dict[int, OutcomeKind] = {
    401: _K.AUTH_ERROR,
    402: _K.AUTH_ERROR,
    403: _K.AUTH_ERROR,
    407: _K.AUTH_ERROR,
    408: _K.TIMEOUT,
    421: _K.TOOL_ERROR,
    429: _K.RATE_LIMITED,
    504: _K.TIMEOUT,
    511: _K.AUTH_ERROR,
    522: _K.TIMEOUT,
    524: _K.TIMEOUT,
    598: _K.TIMEOUT,
    599: _K.TIMEOUT,
}

# Exceptions by class name anywhere in the MRO (the libraries need not be installed, nor imported here).
_REFUSED = frozenset(
    {
        "NewConnectionError",  # urllib3 2.x: refused / unresolved, yet derived from ConnectTimeoutError
    }
)
_TIMEOUTS = frozenset(
    {
        "TimeoutError",  # builtin (socket.timeout, asyncio.TimeoutError), urllib3's own
        "TimeoutException",  # httpx, httpcore: ConnectTimeout, ReadTimeout, WriteTimeout, PoolTimeout
        "Timeout",  # requests: ConnectTimeout, ReadTimeout
        "ServerTimeoutError",  # aiohttp (also a TimeoutError)
        "APITimeoutError",  # openai, anthropic
        "DeadlineExceeded",  # google-api-core
    }
)
_CONNECTION = frozenset(
    {
        "ConnectionError",  # builtin (refused, reset, broken pipe), requests, redis
        "NetworkError",  # httpx: ConnectError, ReadError, WriteError, CloseError
        "TransportError",  # httpx: the above, RemoteProtocolError, ProxyError
        "ClientConnectionError",  # aiohttp: ClientConnectorError, ServerDisconnectedError
        "APIConnectionError",  # openai, anthropic
    }
)
_INVALID_INPUT = frozenset(
    {
        "ValidationError",  # pydantic, jsonschema, marshmallow: the arguments failed their schema
        "JsonSchemaValueException",  # fastjsonschema
        "ParamValidationError",  # botocore: the parameters failed the operation's model, nothing sent
    }
)
_NO_CREDENTIALS = frozenset(
    {
        "NoCredentialsError",  # botocore
        "PartialCredentialsError",  # botocore
        "DefaultCredentialsError",  # google-auth
    }
)
# AWS error codes (botocore's ClientError) that mean a rate limit whatever the status (most are 400s):
# botocore's own list of throttling codes
_AWS_THROTTLING = frozenset(
    {
        "Throttling",
        "ThrottlingException",
        "ThrottledException",
        "RequestThrottledException",
        "TooManyRequestsException",
        "ProvisionedThroughputExceededException",
        "TransactionInProgressException",
        "RequestLimitExceeded",
        "BandwidthLimitExceeded",
        "LimitExceededException",
        "RequestThrottled",
        "SlowDown",
        "PriorRequestNotComplete",
        "EC2ThrottledException",
    }
)
# ... and codes of credentials rejected that AWS answers with a 400
_AWS_AUTH = frozenset(
    {
        "ExpiredToken",
        "ExpiredTokenException",
        "UnrecognizedClientException",
        "InvalidClientTokenId",
        "InvalidAccessKeyId",
        "InvalidSignatureException",
        "SignatureDoesNotMatch",
        "AuthFailure",
    }
)
_MAX_DEPTH = 8  # causes and exception groups followed at most


def outcome_from_status(
    status: int, headers: Mapping[str, str] | None = None, *, now: float | None = None
) -> Outcome:
    """The outcome an HTTP status (and its rate-limit headers) means, by the table above.

    ``headers`` are read only for a 429 (any accepted header), a 403 (a rate limit?) and a 503 or 529
    (``Retry-After`` / ``retry-after-ms``); ``now`` (Unix seconds, default ``time.time()``) dates an
    HTTP-date hint.
    ``ConfigError`` for anything but an integer from 100 to 599.
    """
    code = _status(status)
    if code is None:
        raise ConfigError(f"an HTTP status is an integer from 100 to 599, got {shown(status)}")
    return _by_status(code, headers, now)


def outcome_from_exception(exc: BaseException) -> Outcome | None:
    """The outcome a tool call that raised ``exc`` had, or None when ``exc`` is no outcome at all.

    None: ``KeyboardInterrupt``, ``SystemExit``, ``asyncio.CancelledError`` and anything else that is not
    an ``Exception`` (the call was stopped, which says nothing about the tool): report nothing. Otherwise,
    the first rule that applies:

    1. it carries an HTTP response (``.response.status_code``, ``.status_code``, ``.status``,
       ``.http_status`` or an ``http.HTTPStatus`` as ``.code``; headers from ``.response.headers`` or
       ``.headers``: httpx ``HTTPStatusError``, requests ``HTTPError``, openai and anthropic
       ``APIStatusError``, aiohttp ``ClientResponseError``, urllib ``HTTPError``, stripe's errors,
       google-api-core's ``GoogleAPICallError``; botocore's ``ClientError`` by its AWS error code first: a
       throttling code is a rate limit, a rejected-credentials code an auth_error, whatever the status):
       by its status, except that a 1xx-3xx status on an error (a body that did not parse, a redirect
       not followed) is a tool_error;
    2. a timeout (``_TIMEOUTS`` above) -> timeout, except urllib3's ``NewConnectionError`` (refused, or
       no such host); a connection failure (``_CONNECTION``) -> tool_error;
    3. the arguments failed their schema (``ValidationError`` of pydantic, jsonschema, botocore's
       ``ParamValidationError``) -> caller_error; no credentials to send (botocore's
       ``NoCredentialsError``, google-auth's ``DefaultCredentialsError``) -> auth_error;
    4. a ``TypeError`` raised in the very frame that caught it (the ``with`` block's, the ``try``'s): a
       call whose arguments did not bind, or a builtin refusing an argument -> caller_error. One raised
       inside the called code is a bug there -> tool_error. (A wrong signature is the agent's fault, a
       ``None + 1`` in the tool is not; where the exception was raised is what tells them apart.);
    5. an exception group: the outcome all its exceptions agree on (None if any is an interruption),
       else tool_error;
    6. raised ``from`` another exception, or wrapping one as ``.reason`` (urllib's ``URLError``, urllib3's
       ``MaxRetryError``) or ``.cause`` (google-api-core's ``RetryError``), that one of these rules
       classifies: that outcome;
    7. anything else -> tool_error.

    A ``ValidationError`` of the tool's *answer* (parsed inside the tracked block) is indistinguishable
    from one of the arguments: validate answers outside the block, or report ``tool_error`` yourself.
    """
    if not isinstance(exc, BaseException):
        raise ConfigError(f"outcome_from_exception takes an exception, got {shown(exc)}")
    return _classify(exc, 0) or _default(exc)


def _classify(exc: BaseException, depth: int) -> Outcome | None:
    """The outcome one of the rules gives, or None when none applies (the caller decides the default)."""
    if isinstance(exc, BaseExceptionGroup):
        return _group(exc, depth)
    if not isinstance(exc, Exception):
        return None
    names = {cls.__name__ for cls in type(exc).__mro__}
    carried = _carried_status(exc)
    if carried is not None:
        code, headers = carried
        outcome = _by_status(code, headers, None)
        return Outcome(_K.TOOL_ERROR, None, code) if outcome.is_success else outcome
    aws = _aws_outcome(exc)
    if aws is not None:
        return aws
    if names & _REFUSED:
        return Outcome(_K.TOOL_ERROR)
    if isinstance(exc, TimeoutError) or names & _TIMEOUTS:
        return Outcome(_K.TIMEOUT)
    if isinstance(exc, ConnectionError) or names & _CONNECTION:
        return Outcome(_K.TOOL_ERROR)
    if names & _INVALID_INPUT:
        return Outcome(_K.CALLER_ERROR)
    if names & _NO_CREDENTIALS:
        return Outcome(_K.AUTH_ERROR)
    if isinstance(exc, TypeError) and _raised_where_caught(exc.__traceback__):
        return Outcome(_K.CALLER_ERROR)
    if depth < _MAX_DEPTH:
        for inner in (exc.__cause__, _attr(exc, "reason"), _attr(exc, "cause")):
            if isinstance(inner, BaseException) and inner is not exc:
                found = _classify(inner, depth + 1)
                if found is not None:
                    return found
    return None


def _default(exc: BaseException) -> Outcome | None:
    return Outcome(_K.TOOL_ERROR) if isinstance(exc, Exception) else None


def _group(group: BaseExceptionGroup, depth: int) -> Outcome | None:
    """One outcome for a group (anyio and TaskGroup wrap a failed call in one): an interruption anywhere
    means nothing to report; otherwise what every member agrees on, tool_error when they disagree."""
    if depth >= _MAX_DEPTH:
        return _default(group)
    outcomes, statuses = set(), set()
    for member in group.exceptions:
        outcome = _classify(member, depth + 1) or _default(member)
        if outcome is None:  # an interruption, or a group holding one
            return None
        outcomes.add(outcome)  # equal whatever their statuses: the status is kept only if all agree
        statuses.add(outcome.status)
    if len(outcomes) != 1:
        return Outcome(_K.TOOL_ERROR)
    agreed = outcomes.pop()
    return agreed if len(statuses) == 1 else Outcome(agreed.kind, agreed.retry_after)


def _by_status(code: int, headers: object, now: float | None) -> Outcome:
    """The outcome of ``code`` by the table, its ``status`` set to ``code``."""
    if headers is not None and (code in _ANNOUNCED or code == 403):
        wait = retry_after_from_headers(headers, now=now, server_only=True)
        if wait:  # a positive wait: a planned unavailability. 0, a past date or none: an outage
            return Outcome(_K.RATE_LIMITED, wait, code)
        if code == 403 and quota_exhausted(headers):  # GitHub's rate limit: not the credentials' fault
            return Outcome(_K.RATE_LIMITED, retry_after_from_headers(headers, now=now), code)
    kind = _SPECIAL.get(code)
    if kind is _K.RATE_LIMITED:
        return Outcome(kind, None if headers is None else retry_after_from_headers(headers, now=now), code)
    if kind is not None:
        return Outcome(kind, None, code)
    if 200 <= code < 400:
        return Outcome(_K.SUCCESS, None, code)
    if 400 <= code < 500:
        return Outcome(_K.CALLER_ERROR, None, code)
    return Outcome(_K.TOOL_ERROR, None, code)  # 5xx, and a 1xx the client took for final


def _carried_status(exc: BaseException) -> tuple[int, object] | None:
    """(status, headers) of the HTTP response an exception carries, or None when it carries none."""
    response = _attr(exc, "response")
    places = (
        (response, "status_code"),
        (response, "status"),
        (exc, "status_code"),
        (exc, "status"),
        (exc, "http_status"),  # stripe
    )
    code = None
    for holder, name in places:
        if holder is not None:
            code = _status(_attr(holder, name))
            if code is not None:
                break
    if code is None:
        named = _attr(exc, "code")  # google-api-core; a plain int ``code`` is too often an app's own
        code = _status(named) if isinstance(named, HTTPStatus) else None
    if code is None:
        return None
    headers = _attr(response, "headers") if response is not None else None
    return code, headers if headers is not None else _attr(exc, "headers")


def _aws_outcome(exc: BaseException) -> Outcome | None:
    """The outcome of a botocore ``ClientError`` (``.response``: the parsed AWS error as a dict), by its
    error code, then its status; None for anything else."""
    try:
        response = _attr(exc, "response")
        if not isinstance(response, Mapping):
            return None
        error, meta = response.get("Error"), response.get("ResponseMetadata")
        if not isinstance(error, Mapping) or not isinstance(meta, Mapping):
            return None
        code, status, headers = (
            error.get("Code"),
            _status(meta.get("HTTPStatusCode")),
            meta.get("HTTPHeaders"),
        )
    except Exception:  # a mapping that fails when read: no response
        return None
    if not isinstance(code, str):
        return None
    if code in _AWS_THROTTLING:
        wait = retry_after_from_headers(headers) if headers is not None else None
        return Outcome(_K.RATE_LIMITED, wait, status)
    if code in _AWS_AUTH:
        return Outcome(_K.AUTH_ERROR, None, status)
    if status is None:
        return None
    outcome = _by_status(status, headers, None)
    return Outcome(_K.TOOL_ERROR, None, status) if outcome.is_success else outcome


def _attr(obj: object, name: str) -> Any:
    """``obj.name``, or None when absent or when reading it raises (httpx's ``.request`` does, unset)."""
    try:
        return getattr(obj, name, None)
    except Exception:
        return None


def _status(value: object) -> int | None:
    if isinstance(value, bool) or not isinstance(value, Integral):
        return None
    code = int(value)
    return code if 100 <= code <= 599 else None


def _raised_where_caught(tb: TracebackType | None) -> bool:
    """True when the traceback holds one frame: raised by the catching frame's own statement, not inside a
    Python function it called (a call that failed to bind never entered the callee's frame)."""
    return tb is not None and tb.tb_next is None
