"""Failures of real APIs and SDKs that a status table alone misreads: GitHub's 403 rate limit, Anthropic's
529, Stripe's, AWS's (botocore) and Google's (google-api-core) errors, urllib3's and urllib's wrappers.

The SDKs are not installed here: their exceptions are rebuilt with the real class names, bases and
attributes (stripe 16, botocore 1.44, google-api-core 2.44, urllib3 2.8), as rated reads them by duck
typing. Each case was misclassified before, most into an outcome that demotes a working tool."""

from __future__ import annotations

import http
import socket
import urllib.error
from datetime import UTC, datetime

import pytest

from rated.classify import outcome_from_exception, outcome_from_status
from rated.outcome import Outcome

NOW = datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC).timestamp()


# ---- statuses ----------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("status", "headers", "expected"),
    [
        # GitHub: an exhausted primary limit is a 403 (or 429) with x-ratelimit-remaining: 0 ...
        (
            403,
            {"x-ratelimit-remaining": "0", "x-ratelimit-reset": str(int(NOW) + 600)},
            Outcome("rate_limited", 600.0),
        ),
        (403, {"X-RateLimit-Remaining": "0"}, Outcome("rate_limited")),
        (403, {"RateLimit-Remaining": "0", "RateLimit-Reset": "30"}, Outcome("rate_limited", 30.0)),
        # ... a secondary limit a 403 with Retry-After
        (403, {"retry-after": "60"}, Outcome("rate_limited", 60.0)),
        # a 403 of credentials stays one
        (
            403,
            {"x-ratelimit-remaining": "4999", "x-ratelimit-reset": str(int(NOW) + 600)},
            Outcome("auth_error"),
        ),
        (403, {"retry-after": "0"}, Outcome("auth_error")),
        (403, {}, Outcome("auth_error")),
        (403, None, Outcome("auth_error")),
        # Anthropic's 529 (overloaded) names its wait as a 503 does
        (529, {"retry-after": "20"}, Outcome("rate_limited", 20.0)),
        (529, {}, Outcome("tool_error")),
        # Cloudflare's 522: the origin did not accept the connection in time
        (522, None, Outcome("timeout")),
        # a quota that is not exhausted says nothing on other statuses
        (401, {"x-ratelimit-remaining": "0"}, Outcome("auth_error")),
        (400, {"x-ratelimit-remaining": "0"}, Outcome("caller_error")),
    ],
)
def test_statuses_real_apis_send(status: int, headers: dict | None, expected: Outcome) -> None:
    assert outcome_from_status(status, headers, now=NOW) == expected


# ---- stripe: http_status and headers on the exception ---------------------------------------------------
class StripeError(Exception):
    def __init__(self, message: str, http_status: int | None = None, headers: dict | None = None) -> None:
        super().__init__(message)
        self.http_status = http_status
        self.headers = headers or {}
        self.code = None  # stripe's own error code, a string such as "card_declined" when set


StripeRateLimitError = type("RateLimitError", (StripeError,), {})
StripeInvalidRequestError = type("InvalidRequestError", (StripeError,), {})
StripeAuthenticationError = type("AuthenticationError", (StripeError,), {})
StripeCardError = type("CardError", (StripeError,), {})
StripeAPIError = type("APIError", (StripeError,), {})


def card_error() -> StripeError:
    exc = StripeCardError("declined", 402)
    exc.code = "card_declined"  # type: ignore[assignment]
    return exc


# ---- google-api-core: the HTTP status as an http.HTTPStatus class attribute `code` ----------------------
class GoogleAPICallError(Exception):
    code: http.HTTPStatus | None = None

    def __init__(self, message: str, response: object = None) -> None:
        super().__init__(message)
        self.response = response  # None over gRPC


def google_error(name: str, code: http.HTTPStatus) -> GoogleAPICallError:
    return type(name, (GoogleAPICallError,), {"code": code})("m")


class GoogleRetryError(Exception):  # google.api_core.exceptions.RetryError: the last failure in .cause
    def __init__(self, message: str, cause: BaseException) -> None:
        super().__init__(message)
        self.cause = cause


# ---- botocore: ClientError carries the parsed response as a dict -------------------------------------
class ClientError(Exception):
    def __init__(self, error_response: dict, operation_name: str) -> None:
        super().__init__(
            f"An error occurred ({error_response['Error']['Code']}) when calling {operation_name}"
        )
        self.response = error_response
        self.operation_name = operation_name


def aws_error(code: str, status: int, headers: dict | None = None) -> ClientError:
    meta = {"HTTPStatusCode": status, "HTTPHeaders": headers or {}, "RetryAttempts": 4}
    return ClientError({"Error": {"Code": code, "Message": "m"}, "ResponseMetadata": meta}, "Invoke")


BotoCoreError = type("BotoCoreError", (Exception,), {})
ParamValidationError = type("ParamValidationError", (BotoCoreError,), {})
NoCredentialsError = type("NoCredentialsError", (BotoCoreError,), {})
DefaultCredentialsError = type("DefaultCredentialsError", (Exception,), {})  # google-auth

# ---- urllib3 2.x: a refused connection derives from ConnectTimeoutError; MaxRetryError wraps in .reason --
Urllib3HTTPError = type("HTTPError", (Exception,), {})
ConnectTimeoutError = type("ConnectTimeoutError", (TimeoutError,), {})
NewConnectionError = type("NewConnectionError", (ConnectTimeoutError, Urllib3HTTPError), {})
NameResolutionError = type("NameResolutionError", (NewConnectionError,), {})


class MaxRetryError(Urllib3HTTPError):
    def __init__(self, url: str, reason: Exception | None = None) -> None:
        super().__init__(f"Max retries exceeded with url: {url}")
        self.url = url
        self.reason = reason


@pytest.mark.parametrize(
    ("make", "expected"),
    [
        (lambda: StripeRateLimitError("slow down", 429, {"Retry-After": "2"}), Outcome("rate_limited", 2.0)),
        (lambda: StripeInvalidRequestError("no such customer", 404), Outcome("caller_error")),
        (lambda: StripeInvalidRequestError("bad param", 400), Outcome("caller_error")),
        (lambda: StripeAuthenticationError("bad key", 401), Outcome("auth_error")),
        (card_error, Outcome("auth_error")),  # 402: the account must pay, as the table says
        (lambda: StripeAPIError("oops", 500), Outcome("tool_error")),
        (
            lambda: google_error("ResourceExhausted", http.HTTPStatus.TOO_MANY_REQUESTS),
            Outcome("rate_limited"),
        ),
        (lambda: google_error("InvalidArgument", http.HTTPStatus.BAD_REQUEST), Outcome("caller_error")),
        (lambda: google_error("NotFound", http.HTTPStatus.NOT_FOUND), Outcome("caller_error")),
        (lambda: google_error("Unauthenticated", http.HTTPStatus.UNAUTHORIZED), Outcome("auth_error")),
        (
            lambda: google_error("ServiceUnavailable", http.HTTPStatus.SERVICE_UNAVAILABLE),
            Outcome("tool_error"),
        ),
        (
            lambda: GoogleRetryError("deadline", google_error("ResourceExhausted", http.HTTPStatus(429))),
            Outcome("rate_limited"),
        ),
        (lambda: aws_error("ThrottlingException", 400), Outcome("rate_limited")),
        (
            lambda: aws_error("TooManyRequestsException", 429, {"retry-after": "3"}),
            Outcome("rate_limited", 3.0),
        ),
        (lambda: aws_error("SlowDown", 503), Outcome("rate_limited")),  # S3
        (lambda: aws_error("ProvisionedThroughputExceededException", 400), Outcome("rate_limited")),
        (lambda: aws_error("ValidationException", 400), Outcome("caller_error")),
        (lambda: aws_error("ResourceNotFoundException", 404), Outcome("caller_error")),
        (lambda: aws_error("ExpiredTokenException", 400), Outcome("auth_error")),
        (lambda: aws_error("UnrecognizedClientException", 400), Outcome("auth_error")),
        (lambda: aws_error("AccessDeniedException", 403), Outcome("auth_error")),
        (lambda: aws_error("InternalServerError", 500), Outcome("tool_error")),
        (lambda: aws_error("ServiceUnavailableException", 503), Outcome("tool_error")),
        (lambda: ParamValidationError("Invalid type for parameter Name"), Outcome("caller_error")),
        (lambda: NoCredentialsError("Unable to locate credentials"), Outcome("auth_error")),
        (lambda: DefaultCredentialsError("no default credentials"), Outcome("auth_error")),
        (lambda: NewConnectionError("Connection refused"), Outcome("tool_error")),  # not a timeout
        (lambda: NameResolutionError("Name or service not known"), Outcome("tool_error")),
        (lambda: MaxRetryError("/", ConnectTimeoutError("connect timed out")), Outcome("timeout")),
        (lambda: MaxRetryError("/", NewConnectionError("refused")), Outcome("tool_error")),
        (lambda: urllib.error.URLError(socket.timeout("timed out")), Outcome("timeout")),  # noqa: UP041
        (lambda: urllib.error.URLError(ConnectionRefusedError(111, "refused")), Outcome("tool_error")),
        (lambda: urllib.error.URLError("unknown url type: ftp"), Outcome("tool_error")),
    ],
)
def test_sdk_exceptions(make, expected: Outcome) -> None:
    assert outcome_from_exception(make()) == expected


class AppError(Exception):
    """An application's own numeric code is no HTTP status (only an ``http.HTTPStatus`` is read as one)."""

    code = 404


def test_a_plain_integer_code_is_not_read_as_a_status() -> None:
    assert outcome_from_exception(AppError()) == Outcome("tool_error")


class OddResponse(Exception):
    """A ``response`` mapping that is no botocore response, or one that fails when read."""

    def __init__(self, response: object) -> None:
        super().__init__("x")
        self.response = response


class Exploding(dict):
    def get(self, *args: object) -> object:
        raise RuntimeError("closed")


@pytest.mark.parametrize(
    "response",
    [
        {},
        {"Error": "ThrottlingException"},
        {"Error": {"Code": ["ThrottlingException"]}, "ResponseMetadata": {}},
        {"Error": {"Code": "Nope"}, "ResponseMetadata": {"HTTPStatusCode": "400"}},
        Exploding(),
    ],
)
def test_a_response_mapping_that_is_not_aws_is_no_status(response: object) -> None:
    assert outcome_from_exception(OddResponse(response)) == Outcome("tool_error")
