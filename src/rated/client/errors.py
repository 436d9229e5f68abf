"""The service's answers turned back into rated's exceptions, so code written against ``Retriever`` catches
the same classes over HTTP: an unknown tool id is an ``UnknownToolError``, a bad query a ``QueryError``, a
busy store a ``StoreBusyError``. What only a remote service can do wrong has classes of its own::

    RatedError
    └── ServiceError              the service failed (5xx) or answered what no rated service answers
        ├── ServiceAuthError      401/403: the API key is missing or wrong
        └── ServiceUnreachableError  no answer: connection refused, DNS, timeout

Messages name the URL (never its credentials) and, for a request that may have reached the service, say
that it may or may not have taken effect: a feedback must not be retried blindly (it would count twice).
"""

from __future__ import annotations

import ast
import json

import httpx

from rated.errors import (
    CatalogError,
    ConfigError,
    DataError,
    IndexFormatError,
    ModelError,
    QueryError,
    RatedError,
    StoreBusyError,
    StoreError,
    UnknownToolError,
)

__all__ = [
    "ServiceAuthError",
    "ServiceError",
    "ServiceUnreachableError",
    "error_from_answer",
    "unreachable",
]

_TEXT_SHOWN = 200  # characters of a non-rated error body quoted in a message


class ServiceError(RatedError):
    """The rated service at ``url`` failed, or answered something a rated service does not."""

    def __init__(self, message: str, url: str, http_status: int | None = None) -> None:
        super().__init__(message)
        self.url = url
        self.http_status = http_status  # not ``status``: rated.classify reads that name on exceptions


class ServiceAuthError(ServiceError):
    """The service needs its API key (``RATED_API_KEY`` on the service) and did not get it, or another."""


class ServiceUnreachableError(ServiceError):
    """No answer from the service: it is down, the address is wrong, or it did not answer in time."""


# the service's ``error`` names -> the class raised here; each takes one message. Names of classes this
# client cannot import (the service's own) map to the rated class they derive from.
_BY_NAME: dict[str, type[RatedError]] = {
    "QueryError": QueryError,
    "ConfigError": ConfigError,
    "LastToolError": ConfigError,  # rated.store.base: removing the last tool
    "RequestValidationError": ConfigError,  # the body broke the API's schema (k < 1, an unknown format)
    "RequestTooLarge": ConfigError,  # over the service's max_body_bytes
    "CatalogError": CatalogError,
    "ToolExistsError": CatalogError,  # its constructor takes ids, which the answer does not list apart
    "StoreError": StoreError,
    "CatalogChangedError": StoreError,
    "StoreTimeoutError": StoreError,  # rated.store.base: a stalled Redis
    "StoreBusyError": StoreBusyError,
    "IndexFormatError": IndexFormatError,
    "ModelError": ModelError,
    "DataError": DataError,
}
_UNKNOWN_TOOL = frozenset({"UnknownToolError", "UnknownToolNameError"})


def error_from_answer(response: httpx.Response, url: str, tool_id: str | None = None) -> RatedError:
    """The exception for an answer that is not a success. ``tool_id``: the id the request named, for an
    ``UnknownToolError`` that carries it as ``Retriever`` would."""
    status = response.status_code
    error = _rated_error(response)
    if status in (401, 403):
        given = "Authorization" in response.request.headers
        why = error[1] if error else f"{status} {response.reason_phrase}"
        hint = (
            "the API key given was refused: check api_key (or RATED_API_KEY) against the service's"
            if given
            else "it needs an API key: pass api_key= (or set RATED_API_KEY)"
        )
        message = f"the rated service at {url} refused the request ({why}): {hint}"
        return ServiceAuthError(message, url, status)
    if error is None:
        text = " ".join(response.text[:_TEXT_SHOWN].split())  # another server's page, on one line
        return ServiceError(
            f"{url} answered {status} {response.reason_phrase}{f': {text}' if text else ''}, which is not a "
            "rated service's answer: is base_url the address of `rated serve`?",
            url,
            status,
        )
    name, detail = error
    if name in _UNKNOWN_TOOL:  # the id the request named, else the one the message quotes
        return UnknownToolError(tool_id) if tool_id is not None else _unknown_quoted(detail)
    cls = _BY_NAME.get(name)
    if cls is not None and status < 500:
        return cls(detail)  # the caller's mistake: the message Retriever gives, as it is
    if cls is not None:
        return cls(f"the rated service at {url}: {detail}")  # the service's store: say which service
    if status == 404:  # a route that does not exist: the base URL lacks or adds a path
        return ServiceError(
            f"{url} is not a route of the rated service ({detail}): is base_url the service's root?",
            url,
            status,
        )
    return ServiceError(f"the rated service at {url} answered {status} {name}: {detail}", url, status)


def unreachable(exc: httpx.TransportError, url: str) -> ServiceUnreachableError:
    """``ServiceUnreachableError`` for a request that got no answer, saying whether it was ever sent."""
    never_sent = isinstance(exc, (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout))
    effect = (
        "the request was not sent"
        if never_sent
        else "the request may have reached the service: it may or may not have taken effect"
    )
    what = str(exc) or type(exc).__name__
    return ServiceUnreachableError(
        f"no answer from the rated service at {url}: {type(exc).__name__}: {what} ({effect})", url
    )


def _unknown_quoted(detail: str) -> UnknownToolError:
    """The ``UnknownToolError`` whose message is ``detail`` (``[<where>: ]unknown tool id: 'x'``, where
    names what held the id, e.g. ``filter 'tools'``): the id it quotes, or the quoted text as shown when
    the id was cut short (``'a... (900 characters)``); the whole message when it is none of these."""
    marker = "unknown tool id: "
    where, found, quoted = (
        detail.partition(marker) if detail.startswith(marker) else detail.partition(": " + marker)
    )
    if not found:
        return UnknownToolError(detail)
    try:
        tool_id = ast.literal_eval(quoted)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        tool_id = None
    return UnknownToolError(tool_id if isinstance(tool_id, str) else quoted, where)


def _rated_error(response: httpx.Response) -> tuple[str, str] | None:
    """``(error, detail)`` of the service's one error shape, or None for any other body."""
    try:
        body = json.loads(response.content)
    except ValueError:
        return None
    if not isinstance(body, dict):
        return None
    name, detail = body.get("error"), body.get("detail")
    if not isinstance(name, str) or not isinstance(detail, str):
        return None
    return name, detail
