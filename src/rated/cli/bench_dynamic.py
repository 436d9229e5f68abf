"""CLI commands: placeholder until this group is implemented (see the issues)."""

from __future__ import annotations

import argparse


def register(sub: argparse._SubParsersAction) -> None:
    """Add this group's sub-commands to the ``rated`` parser."""
