"""One place that maps rated's errors to HTTP status codes (and one JSON shape: ``ErrorOut``)."""

from __future__ import annotations

import email.message

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from rated.errors import (
    CatalogError,
    ConfigError,
    QueryError,
    RatedError,
    StoreBusyError,
    StoreError,
    ToolExistsError,
    UnknownToolError,
)
from rated.service.auth import AUTH_CHALLENGE, Unauthorized
from rated.service.unreadable import declared_coding, unreadable_body
from rated.shown import clipped
from rated.store.base import LastToolError
from rated.validation_text import pydantic_reason

__all__ = ["STATUS", "error_response", "install_error_handler", "status_of", "validation_detail"]

_SHOWN = 5  # problems listed in a validation error; a body with 300 unknown fields gets "and 295 more"

# first match wins: subclasses before their parents
STATUS: tuple[tuple[type[RatedError], int], ...] = (
    (Unauthorized, 401),
    (ToolExistsError, 409),  # the request is fine; the index as it stands refuses it (a CatalogError)
    (LastToolError, 409),  # removing the last tool (a ConfigError)
    (QueryError, 422),
    (ConfigError, 422),
    (CatalogError, 422),
    (UnknownToolError, 404),
    (StoreBusyError, 503),
    (StoreError, 503),
    (RatedError, 500),
)


def status_of(exc: RatedError) -> int:
    return next(code for cls, code in STATUS if isinstance(exc, cls))


def validation_detail(exc: RequestValidationError, content_type: str | None = None) -> str:
    """Where each problem is and what is wrong, never the raw input: it may be huge, or NaN, which
    strict JSON cannot even encode (FastAPI's default handler echoes it and fails with a 500). Field
    names are the caller's too (an unknown key may be huge): each is cut short, and a few problems listed.

    A body sent without a JSON content type is not parsed at all; say so, since the problem then reads
    as "not a valid dictionary" for a body that may well be valid JSON (``curl -d`` sends a form type)."""
    problems = exc.errors()
    listed = [
        f"{'.'.join(clipped(str(part)) for part in e['loc'])}: {pydantic_reason(e)}"
        for e in problems[:_SHOWN]
    ]
    more = f"; and {len(problems) - _SHOWN} more" if len(problems) > _SHOWN else ""
    detail = "; ".join(listed) + more
    whole_body = any(tuple(e["loc"]) == ("body",) for e in exc.errors())
    if whole_body and content_type is not None and not _parsed_as_json(content_type):
        detail += f" (the body was sent as {content_type or 'no content type'}: send it as JSON, "
        detail += "with the header Content-Type: application/json)"
    return detail


def _parsed_as_json(content_type: str) -> bool:
    """Whether FastAPI parses a body of this type as JSON: ``application/json`` or ``application/*+json``
    only (not ``text/json`` or ``application/jsonl``, which merely contain the word)."""
    message = email.message.Message()
    message["content-type"] = content_type
    subtype = message.get_content_subtype()
    return message.get_content_maintype() == "application" and (
        subtype == "json" or subtype.endswith("+json")
    )


def error_response(request: Request, exc: RatedError) -> JSONResponse:
    """``exc`` as its status, in the one error shape, counted in the metrics (also for middleware)."""
    request.app.state.metrics.errors.labels(type(exc).__name__).inc()
    headers = (
        {"Retry-After": "1"}
        if isinstance(exc, StoreBusyError)
        else {"WWW-Authenticate": AUTH_CHALLENGE}
        if isinstance(exc, Unauthorized)
        else None
    )
    return JSONResponse(
        {"error": type(exc).__name__, "detail": str(exc)}, status_code=status_of(exc), headers=headers
    )


def install_error_handler(app: FastAPI) -> None:
    @app.exception_handler(RatedError)
    async def _rated_error(request: Request, exc: RatedError) -> JSONResponse:
        return error_response(request, exc)

    @app.exception_handler(RequestValidationError)
    async def _invalid_request(request: Request, exc: RequestValidationError) -> JSONResponse:
        unreadable = any(e["type"] == "json_invalid" for e in exc.errors())
        detail = unreadable_body(exc.__cause__, await _body(request, exc.__cause__)) if unreadable else None
        if detail is not None:
            return _unreadable(request, detail)
        return _invalid(request, validation_detail(exc, request.headers.get("content-type", "")))

    @app.exception_handler(StarletteHTTPException)
    async def _http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        """Unknown routes (404), wrong methods (405) and the like, in the same shape as every error.

        A body the JSON parser failed on other than by syntax (FastAPI's 400 "There was an error parsing
        the body") is an invalid body like any other: a 422 saying what is wrong with it."""
        cause = exc.__cause__
        unreadable = unreadable_body(cause, await _body(request, cause)) if exc.status_code == 400 else None
        if unreadable is not None:
            return _unreadable(request, unreadable)
        return JSONResponse(
            {"error": "HTTPError", "detail": str(exc.detail)},
            status_code=exc.status_code,
            headers=getattr(exc, "headers", None),
        )


async def _body(request: Request, cause: BaseException | None) -> bytes | None:
    """The request body, where ``unreadable_body`` needs it (a position in bytes that are not UTF-8): read
    by the parser already, so kept by the request; None should it not be (positions then from the parser)."""
    if not isinstance(cause, UnicodeDecodeError):
        return None
    try:
        return await request.body()
    except RuntimeError:  # the stream consumed and not kept
        return None


def _unreadable(request: Request, detail: str) -> JSONResponse:
    """A body the JSON parser failed on: 422 saying why, or 415 when the caller declared it compressed
    (nothing decodes it: the parser read the compressed bytes)."""
    coding = declared_coding(request.headers.get("content-encoding"))
    if coding is None:
        return _invalid(request, detail)
    request.app.state.metrics.errors.labels("UnsupportedContentEncoding").inc()
    return JSONResponse(
        {
            "error": "UnsupportedContentEncoding",
            "detail": f"the body is sent with Content-Encoding: {coding}, which the service does not "
            "decode: send it uncompressed",
        },
        status_code=415,
        headers={"Accept-Encoding": "identity"},  # RFC 9110 15.5.16: the codings it accepts
    )


def _invalid(request: Request, detail: str) -> JSONResponse:
    """A request whose body or parameters are invalid: 422, counted as a validation error."""
    request.app.state.metrics.errors.labels("RequestValidationError").inc()
    return JSONResponse({"error": "RequestValidationError", "detail": detail}, status_code=422)
