"""A database indexed before tool ids starting with ``provider:`` were refused (``schema.PROVIDER_PREFIX``):
what an old database holds, for the tests of how rated reads, reports and repairs it."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from rated import Tool
from rated.catalog import schema
from rated.encode.testing import HashEncoder
from rated.retriever import Retriever

ROWS = (  # provider:acme, and b, both of provider acme
    {"id": "provider:acme", "name": "acme_search", "description": "search", "provider": "acme"},
    {"id": "b", "name": "weather", "description": "weather forecast", "provider": "acme"},
)


def index_before_the_rule(
    db: Path, monkeypatch: pytest.MonkeyPatch, rows: Sequence[dict[str, str]] = ROWS
) -> Path:
    """Index the tools ``rows`` describe at ``db`` with the check off (no id starts with ``\\x00``)."""
    with monkeypatch.context() as before:
        before.setattr(schema, "PROVIDER_PREFIX", "\x00")
        tools = [Tool(**row) for row in rows]
        Retriever.from_catalog(tools, db, encoder=HashEncoder(32)).close()
    return db
