"""``Parser``: the ``rated`` argument parser, whose "arguments are required" error says how to do without an
option that an environment variable stands in for: argparse's own read "the following arguments are
required: --db", no word of ``$RATED_DB`` (``add_db_argument`` makes ``--db`` required only while it is
unset). Sub-command parsers are of the same class (argparse makes them of their parent's).
"""

from __future__ import annotations

import argparse
from typing import NoReturn

__all__ = ["Parser"]

_REQUIRED = "the following arguments are required: "
# option -> (how the error names it, the variable that makes it optional)
_OR_VARIABLE = {"--db": ("--db PATH", "RATED_DB")}


class Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        super().error(_required_message(message))


def _required_message(message: str) -> str:
    """``message``, naming each missing option's variable: "--db PATH is required (or set RATED_DB)" alone,
    "... required: QUERY, --db PATH (or set RATED_DB)" with other missing arguments."""
    if not message.startswith(_REQUIRED):
        return message
    names = message.removeprefix(_REQUIRED).split(", ")
    if not any(name in _OR_VARIABLE for name in names):
        return message
    if len(names) == 1:
        shown, variable = _OR_VARIABLE[names[0]]
        return f"{shown} is required (or set {variable})"
    return _REQUIRED + ", ".join(
        f"{_OR_VARIABLE[n][0]} (or set {_OR_VARIABLE[n][1]})" if n in _OR_VARIABLE else n for n in names
    )
