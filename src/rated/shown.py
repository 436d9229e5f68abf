"""``shown(value)``: a caller's value as an error message may quote it, short, and never failing itself;
``clipped(name)``: a caller's field or argument name, cut short.

Error messages quote what was passed, but that may be a 10 MB string (one line of a message should stay
readable), an integer ``repr`` refuses to write (over 4,300 digits: ``ValueError``), or an object whose
``repr`` raises: the error meant to explain the input would then be replaced by one about its message.
"""

from __future__ import annotations

__all__ = ["clipped", "shown"]

_LIMIT = 200


def shown(value: object, limit: int = _LIMIT) -> str:
    """``repr(value)``, cut to about ``limit`` characters (saying how long it was), or a description of
    the value when it has no usable ``repr``."""
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 4 * limit:
        return f"an integer of about {int(value.bit_length() * 0.30103):,} digits"
    try:
        text = repr(value)
    except Exception:  # a repr of the caller's own that raises: its type says enough
        return f"a {type(value).__name__} object"
    if len(text) <= limit:
        return text
    size = f"{len(value):,} characters" if isinstance(value, str) else f"{len(text):,} characters as text"
    return f"{text[: limit - 20]}... ({size})"


def clipped(name: str, limit: int = 40) -> str:
    """A name the caller chose (a JSON key, an argument), cut to ``limit`` characters: an unknown key
    may be thousands of characters long."""
    return name if len(name) <= limit else f"{name[: limit - 3]}..."
