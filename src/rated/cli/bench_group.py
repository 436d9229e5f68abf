"""The shared ``rated bench`` parser group.

Two modules add sub-commands under ``bench`` (``bench_offline``: ``bench offline``; ``bench_dynamic``:
``bench dynamic|latency|sweep``). argparse refuses to add the same sub-parser twice, so whoever registers
first creates it and caches its sub-parsers object on the parent; the other reuses it.
"""

from __future__ import annotations

import argparse

__all__ = ["get_bench_subparsers"]

_ATTR = "_rated_bench_subparsers"


def get_bench_subparsers(sub: argparse._SubParsersAction) -> argparse._SubParsersAction:
    """Return the sub-parsers of ``rated bench``, creating the ``bench`` parser on first call."""
    cached = getattr(sub, _ATTR, None)
    if cached is None:
        bench = sub.add_parser("bench", help="benchmarks: offline retrieval, dynamic reliability, latency")
        cached = bench.add_subparsers(dest="bench_command", metavar="BENCH")
        bench.set_defaults(handler=lambda _args: _print_help(bench))
        setattr(sub, _ATTR, cached)
    return cached


def _print_help(parser: argparse.ArgumentParser) -> int:
    parser.print_help()
    return 2
