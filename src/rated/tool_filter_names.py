"""A filter's errors in the words of the surface that took it: ``--only`` on the command line, ``only`` for
MCP, where the library's key is ``tools``.

``ToolFilter`` and ``PoolFilter`` name the key at fault (``filter 'tools': unknown tool id: 'x'``). A
surface that spells its options otherwise runs the call under ``named_as``, so that the one line the caller
reads names the option they actually gave (``--exclude: unknown tool id: 'x'``).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager

from rated.errors import QueryError, UnknownToolError

__all__ = ["named_as"]


@contextmanager
def named_as(names: Mapping[str, str]) -> Iterator[None]:
    """Re-raise a filter error raised inside with ``filter '<key>'`` replaced by ``names[key]``; any other
    error (or a key without a name) goes through unchanged."""
    try:
        yield
    except UnknownToolError as exc:
        where = _renamed(exc.where, names)
        if where is None or type(exc) is not UnknownToolError:
            raise
        raise UnknownToolError(exc.tool_id, where) from None
    except QueryError as exc:
        message = _renamed(str(exc), names)
        if message is None or type(exc) is not QueryError:
            raise
        raise QueryError(message) from None


def _renamed(text: str, names: Mapping[str, str]) -> str | None:
    for key, name in names.items():
        prefix = f"filter {key!r}"
        if text.startswith(prefix):
            return name + text[len(prefix) :]
    return None
