"""Error responses documented in the OpenAPI schema of every route that can produce them."""

from __future__ import annotations

from typing import Any

from rated.service.schemas import ErrorOut

__all__ = ["responses"]


def responses(*codes: int) -> dict[int | str, dict[str, Any]]:
    return {code: {"model": ErrorOut} for code in codes}
