"""Error responses documented in the OpenAPI schema of every route that can produce them."""

from __future__ import annotations

from typing import Any

from rated.service.schemas import ErrorOut

__all__ = ["BODY", "responses"]

BODY = (413, 422)  # every route with a request body: too large (BodyLimit), or invalid


def responses(*codes: int) -> dict[int | str, dict[str, Any]]:
    """``codes`` plus 500 (a bug, answered in the same shape), all as ``ErrorOut``. Name 422 wherever a
    parameter can be invalid: FastAPI would otherwise document its own ``HTTPValidationError`` shape,
    which this service never sends."""
    return {code: {"model": ErrorOut} for code in sorted({*codes, 500})}
