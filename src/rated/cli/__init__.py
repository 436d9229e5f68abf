"""The ``rated`` command line: a thin layer that parses arguments, calls the library and prints.

Each command group lives in its own module exposing ``register(subparsers)``; every handler returns an
exit code. Errors from rated (``RatedError``) become one red line and a non-zero exit, never a traceback.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from rated.cli import (
    bench_dynamic,
    bench_offline,
    catalog_cmds,
    catalog_edit_cmds,
    data_cmds,
    index_cmds,
    serve_cmds,
    train_cmds,
)
from rated.cli.output import fail
from rated.cli.parser import Parser
from rated.errors import CatalogError, ConfigError, DataError, QueryError, RatedError, UnknownToolError

__all__ = ["build_parser", "main"]

GROUPS = (
    index_cmds,
    catalog_edit_cmds,
    catalog_cmds,
    data_cmds,
    bench_offline,
    bench_dynamic,
    train_cmds,
    serve_cmds,
)

EXIT_CODES: tuple[tuple[type[RatedError], int], ...] = (
    (ConfigError, 2),
    (QueryError, 2),
    (UnknownToolError, 3),
    (CatalogError, 4),
    (DataError, 4),
    (RatedError, 1),
)


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="rated", description="Reliability-aware tool retrieval for AI agents.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for group in GROUPS:
        group.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    handler = getattr(args, "handler", None)
    if handler is None:
        parser.print_help()
        return 2
    try:
        return int(handler(args) or 0)
    except RatedError as exc:
        code = next(c for cls, c in EXIT_CODES if isinstance(exc, cls))
        fail(str(exc))
        return code
    except KeyboardInterrupt:
        fail("interrupted")
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
