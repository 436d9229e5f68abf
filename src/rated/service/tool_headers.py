"""``ToolHeaders``: the response headers of a tool call as a client sends them to ``/feedback`` and
``report_outcome``: a flat map of strings, bounded, refused with a short message that never quotes a value.

Only the rate-limit hints are read (``rated.retry_after``), but agents forward whole header sets. The
bounds are those of common HTTP servers (100 fields, 8 KiB a field): a real response fits, a body built
to make the service scan megabytes does not. pydantic's own errors would name an offending header by its
full key (the MCP SDK prints the location whole), so the check is done here first, names clipped.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BeforeValidator, Field
from pydantic_core import PydanticCustomError

from rated.shown import clipped

__all__ = ["MAX_HEADER_NAME", "MAX_HEADER_VALUE", "MAX_HEADERS", "ToolHeaders"]

MAX_HEADERS = 100
MAX_HEADER_NAME = 256  # characters
MAX_HEADER_VALUE = 8192  # characters


def _checked(value: Any) -> Any:
    """``value`` unchanged when it is a JSON object of at most ``MAX_HEADERS`` string names and values
    within the length limits; otherwise one error saying what is wrong, a name shown at most clipped."""
    if value is None:
        return value
    if not isinstance(value, dict):
        raise _invalid(f"must be an object of header names to values, got {_kind(value)}")
    if len(value) > MAX_HEADERS:
        raise _invalid(f"{len(value):,} headers; at most {MAX_HEADERS} are taken")
    for name, text in value.items():
        if not isinstance(name, str):  # JSON keys are strings; a Python caller's may not be
            raise _invalid(f"a header name is {_kind(name)}, not a string")
        if len(name) > MAX_HEADER_NAME:
            raise _invalid(f"a header name is {len(name):,} characters long; at most {MAX_HEADER_NAME}")
        if not isinstance(text, str):
            raise _invalid(f'the value of {clipped(name)!r} is {_kind(text)}, not a string (e.g. "30")')
        if len(text) > MAX_HEADER_VALUE:
            size = f"{len(text):,} characters long; at most {MAX_HEADER_VALUE:,}"
            raise _invalid(f"the value of {clipped(name)!r} is {size}")
    return value


def _invalid(message: str) -> PydanticCustomError:
    return PydanticCustomError("tool_headers", message)  # no context: braces in a name are kept as they are


def _kind(value: object) -> str:
    kinds = {bool: "a boolean", int: "a number", float: "a number", list: "a list", str: "a string"}
    return "null" if value is None else kinds.get(type(value), f"a {type(value).__name__}")


ToolHeaders = Annotated[
    dict[str, str] | None,
    BeforeValidator(_checked),
    Field(
        description=(
            "the tool's response headers (name: value, strings), read for the rate-limit hint of a 429 or "
            "503: Retry-After, retry-after-ms, RateLimit-Reset, X-RateLimit-Reset; "
            f"at most {MAX_HEADERS} headers, names up to {MAX_HEADER_NAME} and values up to "
            f"{MAX_HEADER_VALUE:,} characters"
        ),
        json_schema_extra={"maxProperties": MAX_HEADERS},
    ),
]
