"""``counted(n, noun)``: a count with its noun, singular for one, as the summaries people read say it.

Shared by the CLI (``rated.cli.output.n_tools``) and the benchmark reports, which do not import CLI code.

>>> counted(1, "seed"), counted(3, "seed"), counted(0, "unhealthy tool")
('1 seed', '3 seeds', '0 unhealthy tools')
"""

from __future__ import annotations

__all__ = ["counted"]


def counted(n: int, noun: str) -> str:
    """``1 tool``, ``2 tools``: ``noun`` takes an ``s`` for any count but one (the nouns counted here
    all do)."""
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"
