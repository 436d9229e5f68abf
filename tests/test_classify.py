"""Statuses and exceptions mapped to outcomes: the RFC 9110 table, and the exceptions of the HTTP and LLM
client libraries, recognised by their class names and attributes (defined here with the real names: the
libraries need not be installed) or, for httpx, pydantic and jsonschema, by real instances."""

from __future__ import annotations

import asyncio
import email.message
import http
import socket
import urllib.error
from datetime import UTC, datetime

import httpx
import jsonschema
import numpy as np
import pydantic
import pytest

from rated.classify import outcome_from_exception, outcome_from_status
from rated.errors import ConfigError
from rated.outcome import Outcome

NOW = datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC).timestamp()


# ---- statuses ----------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("status", "kind"),
    [
        (100, "tool_error"),
        (200, "success"),
        (201, "success"),
        (204, "success"),
        (301, "success"),
        (304, "success"),
        (400, "caller_error"),
        (401, "auth_error"),
        (402, "auth_error"),
        (403, "auth_error"),
        (404, "caller_error"),
        (405, "caller_error"),
        (407, "auth_error"),
        (408, "timeout"),
        (409, "caller_error"),
        (410, "caller_error"),
        (413, "caller_error"),
        (415, "caller_error"),
        (421, "tool_error"),
        (422, "caller_error"),
        (429, "rate_limited"),
        (431, "caller_error"),
        (499, "caller_error"),
        (500, "tool_error"),
        (501, "tool_error"),
        (502, "tool_error"),
        (503, "tool_error"),
        (504, "timeout"),
        (511, "auth_error"),
        (520, "tool_error"),
        (524, "timeout"),
        (598, "timeout"),
        (599, "timeout"),
    ],
)
def test_status_table(status: int, kind: str) -> None:
    assert outcome_from_status(status) == Outcome(kind)


@pytest.mark.parametrize(
    ("status", "headers", "expected"),
    [
        (429, {"Retry-After": "30"}, Outcome("rate_limited", 30.0)),
        (429, {"Retry-After": "Sun, 01 Mar 2026 12:02:00 GMT"}, Outcome("rate_limited", 120.0)),
        (429, {"Retry-After": "Wed, 21 Oct 2015 07:28:00 GMT"}, Outcome("rate_limited", 0.0)),
        (429, {"Retry-After": "whenever"}, Outcome("rate_limited")),  # malformed: no hint, still a limit
        (429, {"X-RateLimit-Reset": str(int(NOW) + 15)}, Outcome("rate_limited", 15.0)),
        (429, None, Outcome("rate_limited")),
        (503, {"Retry-After": "120"}, Outcome("rate_limited", 120.0)),  # a planned unavailability
        (503, {"retry-after-ms": "2500"}, Outcome("rate_limited", 2.5)),
        (503, {"Retry-After": "0"}, Outcome("tool_error")),  # "back now": an outage all the same
        (503, {"Retry-After": "Wed, 21 Oct 2015 07:28:00 GMT"}, Outcome("tool_error")),
        (503, {"Retry-After": "whenever"}, Outcome("tool_error")),
        (503, {"X-RateLimit-Reset": "60"}, Outcome("tool_error")),  # a quota window says nothing of a 503
        (500, {"Retry-After": "30"}, Outcome("tool_error")),
        (413, {"Retry-After": "30"}, Outcome("caller_error")),
        (200, {"Retry-After": "30"}, Outcome("success")),
    ],
)
def test_status_with_headers(status: int, headers: dict | None, expected: Outcome) -> None:
    assert outcome_from_status(status, headers, now=NOW) == expected


def test_status_accepts_integer_kinds() -> None:
    assert outcome_from_status(http.HTTPStatus.TOO_MANY_REQUESTS).kind == "rate_limited"
    assert outcome_from_status(np.int64(404)).kind == "caller_error"


@pytest.mark.parametrize("bad", [99, 600, 0, -1, True, "200", 200.0, None])
def test_a_status_outside_http_is_refused(bad: object) -> None:
    with pytest.raises(ConfigError, match="HTTP status"):
        outcome_from_status(bad)  # type: ignore[arg-type]


# ---- library exceptions, by name and attributes ------------------------------------------------------
class Response:
    """What requests' and httpx's responses share: ``status_code`` and ``headers``."""

    def __init__(self, status_code: int, headers: dict | None = None) -> None:
        self.status_code = status_code
        self.headers = headers or {}


# requests: everything derives from RequestException (an OSError); ConnectTimeout is both kinds
RequestException = type("RequestException", (OSError,), {"response": None})
RequestsHTTPError = type("HTTPError", (RequestException,), {})
RequestsConnectionError = type("ConnectionError", (RequestException,), {})
RequestsTimeout = type("Timeout", (RequestException,), {})
RequestsConnectTimeout = type("ConnectTimeout", (RequestsConnectionError, RequestsTimeout), {})
RequestsReadTimeout = type("ReadTimeout", (RequestsTimeout,), {})


def requests_error(cls: type, response: Response | None = None) -> Exception:
    exc = cls("boom")
    exc.response = response
    return exc


class ClientError(Exception):  # aiohttp
    pass


class ClientResponseError(ClientError):
    def __init__(self, status: int, headers: dict | None = None) -> None:
        super().__init__(f"{status}")
        self.status = status
        self.headers = headers


ContentTypeError = type("ContentTypeError", (ClientResponseError,), {})
ClientConnectionError = type("ClientConnectionError", (ClientError,), {})
ServerDisconnectedError = type("ServerDisconnectedError", (ClientConnectionError,), {})
# aiohttp's also derives from asyncio.TimeoutError; this one does not: found by its name alone
ServerTimeoutError = type("ServerTimeoutError", (ClientConnectionError,), {})


class APIError(Exception):  # openai, anthropic
    pass


class APIStatusError(APIError):
    def __init__(self, response: httpx.Response) -> None:
        super().__init__(f"Error code: {response.status_code}")
        self.response = response
        self.status_code = response.status_code


RateLimitError = type("RateLimitError", (APIStatusError,), {})
BadRequestError = type("BadRequestError", (APIStatusError,), {})
AuthenticationError = type("AuthenticationError", (APIStatusError,), {})
APIConnectionError = type("APIConnectionError", (APIError,), {})
APITimeoutError = type("APITimeoutError", (APIConnectionError,), {})  # a connection error, but a timeout
DeadlineExceeded = type("DeadlineExceeded", (Exception,), {})  # google-api-core

REQUEST = httpx.Request("POST", "https://tool.invalid/run")


def openai_error(cls: type, status: int, headers: dict | None = None) -> Exception:
    return cls(httpx.Response(status, headers=headers, request=REQUEST))


def httpx_status_error(status: int, headers: dict | None = None) -> httpx.HTTPStatusError:
    response = httpx.Response(status, headers=headers, request=REQUEST)
    try:
        response.raise_for_status()
    except httpx.HTTPStatusError as exc:
        return exc
    raise AssertionError("raise_for_status did not raise")


@pytest.mark.parametrize(
    ("make", "expected"),
    [
        # httpx, real
        (lambda: httpx_status_error(500), Outcome("tool_error")),
        (lambda: httpx_status_error(400), Outcome("caller_error")),
        (lambda: httpx_status_error(422), Outcome("caller_error")),
        (lambda: httpx_status_error(401), Outcome("auth_error")),
        (lambda: httpx_status_error(429, {"Retry-After": "9"}), Outcome("rate_limited", 9.0)),
        (lambda: httpx_status_error(503, {"Retry-After": "9"}), Outcome("rate_limited", 9.0)),
        (lambda: httpx_status_error(504), Outcome("timeout")),
        (lambda: httpx_status_error(302), Outcome("tool_error")),  # a redirect raised: not a success
        (lambda: httpx.ReadTimeout("slow", request=REQUEST), Outcome("timeout")),
        (lambda: httpx.ConnectTimeout("slow"), Outcome("timeout")),
        (lambda: httpx.PoolTimeout("slow"), Outcome("timeout")),
        (lambda: httpx.ConnectError("refused"), Outcome("tool_error")),
        (lambda: httpx.RemoteProtocolError("hung up"), Outcome("tool_error")),
        # requests, by name
        (lambda: requests_error(RequestsHTTPError, Response(404)), Outcome("caller_error")),
        (lambda: requests_error(RequestsHTTPError, Response(502)), Outcome("tool_error")),
        (
            lambda: requests_error(RequestsHTTPError, Response(429, {"retry-after": "4"})),
            Outcome("rate_limited", 4.0),
        ),
        (lambda: requests_error(RequestsConnectionError), Outcome("tool_error")),
        (lambda: requests_error(RequestsConnectTimeout), Outcome("timeout")),  # both: the timeout decides
        (lambda: requests_error(RequestsReadTimeout), Outcome("timeout")),
        # aiohttp, by name
        (lambda: ClientResponseError(403), Outcome("auth_error")),
        (lambda: ClientResponseError(429, {"Retry-After": "11"}), Outcome("rate_limited", 11.0)),
        (lambda: ContentTypeError(200), Outcome("tool_error")),  # answered 200 with a body that is not JSON
        (lambda: ServerTimeoutError("slow"), Outcome("timeout")),
        (lambda: ServerDisconnectedError("gone"), Outcome("tool_error")),
        # openai / anthropic, by name
        (lambda: openai_error(RateLimitError, 429, {"retry-after-ms": "250"}), Outcome("rate_limited", 0.25)),
        (lambda: openai_error(BadRequestError, 400), Outcome("caller_error")),
        (lambda: openai_error(AuthenticationError, 401), Outcome("auth_error")),
        (lambda: openai_error(APIStatusError, 529), Outcome("tool_error")),  # overloaded
        (lambda: APITimeoutError("slow"), Outcome("timeout")),
        (lambda: APIConnectionError("refused"), Outcome("tool_error")),
        (lambda: DeadlineExceeded("slow"), Outcome("timeout")),
        # the standard library
        (lambda: TimeoutError(), Outcome("timeout")),
        (lambda: socket.timeout(), Outcome("timeout")),  # noqa: UP041 - the alias users write
        (lambda: asyncio.TimeoutError(), Outcome("timeout")),  # noqa: UP041
        (lambda: ConnectionRefusedError(), Outcome("tool_error")),
        (lambda: BrokenPipeError(), Outcome("tool_error")),
        (
            lambda: urllib.error.HTTPError("u", 418, "teapot", email.message.Message(), None),
            Outcome("caller_error"),
        ),
        (lambda: urllib_error(429, "20"), Outcome("rate_limited", 20.0)),
        (lambda: ValueError("bad"), Outcome("tool_error")),
        (lambda: RuntimeError("bug"), Outcome("tool_error")),
        (lambda: KeyError("x"), Outcome("tool_error")),
        (lambda: TypeError("never raised"), Outcome("tool_error")),  # no traceback: not the caller's
    ],
)
def test_exceptions(make, expected: Outcome) -> None:
    assert outcome_from_exception(make()) == expected


def urllib_error(status: int, retry_after: str) -> urllib.error.HTTPError:
    headers = email.message.Message()
    headers["Retry-After"] = retry_after
    return urllib.error.HTTPError("https://tool.invalid", status, "limited", headers, None)


def test_the_libraries_are_not_imported_to_classify() -> None:
    import subprocess
    import sys

    code = (
        "import sys; from rated.classify import outcome_from_exception as f; f(TimeoutError()); "
        "print(sorted(m for m in ('httpx', 'requests', 'aiohttp', 'openai', 'jsonschema') "
        "if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


# ---- the arguments' fault -----------------------------------------------------------------------------
class Args(pydantic.BaseModel):
    city: str
    days: int


def test_schema_validation_errors_are_the_callers() -> None:
    with pytest.raises(pydantic.ValidationError) as pyd:
        Args(city="Rome", days="many")
    with pytest.raises(jsonschema.ValidationError) as js:
        jsonschema.validate({"days": "many"}, {"type": "object", "required": ["city"]})
    assert outcome_from_exception(pyd.value) == Outcome("caller_error")
    assert outcome_from_exception(js.value) == Outcome("caller_error")


def weather(city: str, days: int = 1) -> str:
    return city * days


def buggy_tool(city: str) -> str:
    return city + None  # type: ignore[operator]


def test_a_type_error_of_the_call_itself_is_the_callers_one_inside_the_tool_is_not() -> None:
    arguments = {"town": "Rome"}  # what an agent might send
    with pytest.raises(TypeError) as unbound:
        weather(**arguments)
    with pytest.raises(TypeError) as builtin:
        len(5)  # type: ignore[arg-type]  # a builtin refusing its argument: no Python frame entered
    with pytest.raises(TypeError) as inside:
        buggy_tool("Rome")
    assert outcome_from_exception(unbound.value) == Outcome("caller_error")
    assert outcome_from_exception(builtin.value) == Outcome("caller_error")
    assert outcome_from_exception(inside.value) == Outcome("tool_error")


class ToolFailure(Exception):
    pass


def wrapped(cause: BaseException) -> ToolFailure:
    try:
        raise ToolFailure("the tool failed") from cause
    except ToolFailure as exc:
        return exc


def test_a_wrapped_exception_is_classified_by_its_cause() -> None:
    assert outcome_from_exception(wrapped(httpx.ReadTimeout("slow"))) == Outcome("timeout")
    assert outcome_from_exception(wrapped(httpx_status_error(429, {"Retry-After": "3"}))) == Outcome(
        "rate_limited", 3.0
    )
    assert outcome_from_exception(wrapped(wrapped(httpx_status_error(400)))) == Outcome("caller_error")
    assert outcome_from_exception(wrapped(ValueError())) == Outcome("tool_error")
    assert outcome_from_exception(wrapped(KeyboardInterrupt())) == Outcome("tool_error")  # it did fail


def test_a_cause_cycle_ends() -> None:
    a, b = ToolFailure("a"), ToolFailure("b")
    a.__cause__, b.__cause__ = b, a
    assert outcome_from_exception(a) == Outcome("tool_error")


@pytest.mark.parametrize(
    ("members", "expected"),
    [
        ([httpx.ReadTimeout("slow")], Outcome("timeout")),
        ([httpx.ReadTimeout("a"), TimeoutError()], Outcome("timeout")),
        ([httpx_status_error(400), TimeoutError()], Outcome("tool_error")),  # they disagree
        ([ExceptionGroup("inner", [httpx_status_error(401)])], Outcome("auth_error")),
    ],
)
def test_exception_groups(members: list, expected: Outcome) -> None:
    assert outcome_from_exception(ExceptionGroup("task group", members)) == expected


@pytest.mark.parametrize(
    "exc",
    [
        KeyboardInterrupt(),
        SystemExit(1),
        asyncio.CancelledError(),
        GeneratorExit(),
        BaseExceptionGroup("g", [ValueError(), asyncio.CancelledError()]),
        BaseExceptionGroup("g", [BaseExceptionGroup("h", [KeyboardInterrupt()])]),
    ],
)
def test_interruptions_are_no_outcome(exc: BaseException) -> None:
    assert outcome_from_exception(exc) is None


class Odd(Exception):
    """Attributes that look like a response but are not one."""

    @property
    def response(self):
        raise RuntimeError("request not set")  # as httpx's .request does

    status = "404"
    status_code = True


def test_attributes_that_are_not_a_status_are_ignored() -> None:
    assert outcome_from_exception(Odd()) == Outcome("tool_error")
    weird = RuntimeError("x")
    weird.status = 7000  # type: ignore[attr-defined]
    assert outcome_from_exception(weird) == Outcome("tool_error")


def test_a_non_exception_is_refused() -> None:
    with pytest.raises(ConfigError, match="takes an exception"):
        outcome_from_exception("boom")  # type: ignore[arg-type]
