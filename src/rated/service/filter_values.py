"""``FilterValue``: the value of a filter key (``rated.tool_filter``) as HTTP and MCP clients send it, one
string or a list of strings, refused with one short error that never quotes the value.

pydantic's own errors for ``str | list[str]`` name both branches, and every bad item of the list: an
argument such as ``"auth": [null, null, null]`` made a four-part error, several of them a kilobyte.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BeforeValidator
from pydantic_core import PydanticCustomError

__all__ = ["FilterValue"]

_EXPECTED = "must be a string or a list of strings"


def _checked(value: Any) -> Any:
    """``value`` unchanged when it is None, a string or a list of strings; otherwise one error."""
    if value is None or isinstance(value, str):
        return value
    if not isinstance(value, list):
        raise _invalid(f"{_EXPECTED}, got {_kind(value)}")
    for i, item in enumerate(value):
        if not isinstance(item, str):
            raise _invalid(f"{_EXPECTED}; item {i} is {_kind(item)}")
    return value


def _invalid(message: str) -> PydanticCustomError:
    return PydanticCustomError("filter_value", message)


def _kind(value: object) -> str:
    """The JSON kind of ``value``, as a caller would name it."""
    if isinstance(value, bool):
        return "a boolean"
    kinds = {int: "a number", float: "a number", dict: "an object", list: "a list"}
    return "null" if value is None else kinds.get(type(value), f"a {type(value).__name__}")


FilterValue = Annotated[list[str] | str | None, BeforeValidator(_checked)]
