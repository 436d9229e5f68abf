"""Console helpers shared by the CLI modules: rich for people, plain JSON for machines."""

from __future__ import annotations

import json
import sys
from typing import Any

from rich.console import Console
from rich.markup import escape

from rated.plural import counted

__all__ = ["console", "err_console", "fail", "n_tools", "print_json"]

console = Console()
err_console = Console(stderr=True)


def fail(message: str) -> None:
    """One clear error line on stderr (no traceback)."""
    err_console.print(f"[bold red]error:[/] {escape(message)}", highlight=False, markup=True, soft_wrap=True)


def n_tools(n: int, what: str = "tool") -> str:
    """``1 tool``, ``2 tools`` (``what``: ``unhealthy tool``): counts in the summaries people read."""
    return counted(n, what)


def print_json(payload: Any) -> None:
    """Machine-readable output: exactly one JSON document on stdout."""
    sys.stdout.write(json.dumps(payload, indent=2, default=str) + "\n")
    sys.stdout.flush()
