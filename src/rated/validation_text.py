"""``pydantic_reason(error)``: one pydantic validation error's message as every rated listing shows it;
``one_line(exc)``: a whole ``ValidationError`` as ``field: reason; ...`` on one line.

Pydantic prefixes the message of a validator's ``ValueError`` with "Value error, ": noise between the
field name and what is wrong with it. One function drops it, so no listing keeps it while others do not.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from rated.shown import clipped

__all__ = ["one_line", "pydantic_reason"]


def pydantic_reason(error: Mapping[str, Any]) -> str:
    """The ``msg`` of one ``ValidationError.errors()`` entry, without pydantic's "Value error, " prefix."""
    return str(error["msg"]).removeprefix("Value error, ")


def one_line(exc: ValidationError) -> str:
    """Each problem as ``field: reason``, joined on one line: where the message is one error line (the
    CLI's) or goes back to a model as a tool's answer, pydantic's multi-line layout, input echo and
    documentation links are noise (the question is which field and what is wrong)."""
    problems = []
    for err in exc.errors(include_url=False):
        field = ".".join(clipped(str(part)) for part in err["loc"])  # a key may be of any size
        reason = pydantic_reason(err)
        problems.append(f"{field}: {reason}" if field else reason)
    return "; ".join(problems)
