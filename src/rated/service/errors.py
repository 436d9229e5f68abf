"""One place that maps rated's errors to HTTP status codes (and one JSON shape: ``ErrorOut``)."""

from __future__ import annotations

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from rated.errors import (
    CatalogError,
    ConfigError,
    QueryError,
    RatedError,
    StoreBusyError,
    StoreError,
    UnknownToolError,
)

__all__ = ["STATUS", "install_error_handler", "status_of"]

# first match wins: subclasses before their parents
STATUS: tuple[tuple[type[RatedError], int], ...] = (
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


def install_error_handler(app: FastAPI) -> None:
    @app.exception_handler(RatedError)
    async def _rated_error(request: Request, exc: RatedError) -> JSONResponse:
        code = status_of(exc)
        request.app.state.metrics.errors.labels(type(exc).__name__).inc()
        headers = {"Retry-After": "1"} if isinstance(exc, StoreBusyError) else None
        return JSONResponse(
            {"error": type(exc).__name__, "detail": str(exc)}, status_code=code, headers=headers
        )
