"""``pydantic_reason(error)``: one pydantic validation error's message as every rated listing shows it.

Pydantic prefixes the message of a validator's ``ValueError`` with "Value error, ": noise between the
field name and what is wrong with it. One function drops it, so no listing keeps it while others do not.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["pydantic_reason"]


def pydantic_reason(error: Mapping[str, Any]) -> str:
    """The ``msg`` of one ``ValidationError.errors()`` entry, without pydantic's "Value error, " prefix."""
    return str(error["msg"]).removeprefix("Value error, ")
