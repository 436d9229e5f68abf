"""``unreadable_body(cause)``: what is wrong with a request body the JSON parser refused, in one line.

FastAPI parses a JSON body with ``json.loads``. A syntax error comes back as a validation error that says
only "JSON decode error" at a character offset; every other failure of the parser (a number over Python's
4,300-digit int conversion limit, nesting past the recursion limit, bytes that are not UTF-8) comes back as
a 400 "There was an error parsing the body", the same words for all three, on every route. FastAPI raises
both from the parser's exception (``raise ... from e``), so the error handlers read the cause here. The
body itself is never quoted: it may be megabytes.

Nothing decodes a compressed body (``Content-Encoding: gzip``): FastAPI parses its bytes as they are and
fails, which ``declared_coding`` lets the handlers answer as what it is (415), not as bytes that are not
UTF-8. A body declared compressed but sent plain is read.
"""

from __future__ import annotations

import functools
import json
import re
import sys

from rated.shown import clipped

__all__ = ["declared_coding", "parser_depth", "unreadable_body"]


def unreadable_body(cause: BaseException | None, body: bytes | None = None) -> str | None:
    """The detail for a body ``json.loads`` failed on with ``cause``; None for any other exception.
    ``body``: the bytes it parsed, so that a position counts a UTF-8 byte-order mark the parser skipped."""
    if isinstance(cause, json.JSONDecodeError):
        # some messages end in "at" ("Invalid control character at"): the place follows either way
        what = cause.msg.removesuffix(" at")
        return f"body is not valid JSON: {what} at line {cause.lineno:,} column {cause.colno:,}"
    if isinstance(cause, UnicodeDecodeError):
        # json.loads also reads UTF-16 and UTF-32, guessing from the first bytes (0xFF 0xFE: UTF-16-LE)
        read_as = (
            ""
            if cause.encoding == "utf-8"
            else f" (nor {cause.encoding.upper()}, as its first bytes suggest)"
        )
        # a UTF-8 body that starts with a byte-order mark is decoded as utf-8-sig, which reads (and counts
        # positions in) the bytes after the mark
        skipped = len(body) - len(cause.object) if body is not None and body.endswith(cause.object) else 0
        return f"body is not UTF-8{read_as}: {cause.reason} at byte {cause.start + skipped:,}"
    if isinstance(cause, RecursionError):
        levels = parser_depth()
        return (
            f"the body nests arrays and objects deeper than the JSON parser reads (about {levels:,} levels)"
        )
    if isinstance(cause, ValueError) and "integer string conversion" in str(cause):
        found = re.search(r"value has (\d+) digits", str(cause))  # Python's own words, not the caller's
        has = f" (one has {int(found[1]):,})" if found else ""
        return f"a number in the body has more than {sys.get_int_max_str_digits():,} digits{has}"
    return None


def declared_coding(content_encoding: str | None) -> str | None:
    """The content codings a request declared for its body (``gzip``, ``br, gzip``), cut short; None for
    none or ``identity`` (which means none)."""
    codings = [c.strip().lower() for c in (content_encoding or "").split(",")]
    named = ", ".join(c for c in codings if c and c != "identity")
    return clipped(named, 60) if named else None


@functools.cache
def parser_depth() -> int:
    """About how deep ``json.loads`` nests before its recursion guard stops it, measured once (the limit
    depends on the Python version and on the stack the parser starts from, so no constant is right)."""
    deepest, beyond = 1, 1
    while _parses(beyond):  # double until it fails, then halve the gap
        deepest, beyond = beyond, beyond * 2
        if beyond > 1_000_000:  # no guard at all in this interpreter
            return deepest
    while beyond - deepest > 1:
        middle = (deepest + beyond) // 2
        deepest, beyond = (middle, beyond) if _parses(middle) else (deepest, middle)
    return deepest


def _parses(depth: int) -> bool:
    try:
        json.loads("[" * depth + "]" * depth)
    except RecursionError:
        return False
    return True
