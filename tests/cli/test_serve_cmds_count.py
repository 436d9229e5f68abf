"""``rated serve``'s start-up line counts as people read: an index of one tool is ``1 tool``."""

from __future__ import annotations

import pytest

pytest.importorskip("uvicorn")

import uvicorn  # noqa: E402

import rated.cli.serve_cmds as serve_cmds  # noqa: E402
from rated import Tool  # noqa: E402
from rated.cli import main  # noqa: E402
from rated.encode.testing import HashEncoder  # noqa: E402
from rated.retriever import Retriever  # noqa: E402
from rated.store.memory import MemoryStore  # noqa: E402


def test_one_indexed_tool_is_counted_in_the_singular(monkeypatch, capsys):
    store = MemoryStore()
    Retriever.from_catalog(
        [Tool(id="a", name="send_email", description="Send an email")], db=store, encoder=HashEncoder(32)
    ).close()
    real_open = Retriever.open
    monkeypatch.setattr(Retriever, "open", lambda db, **kw: real_open(store, encoder=HashEncoder(32), **kw))
    monkeypatch.setattr(serve_cmds, "_check_can_listen", lambda host, port: None)
    monkeypatch.setattr(uvicorn, "run", lambda app, **kw: None)
    assert main(["serve", "--db", "one.db", "--port", "8123"]) == 0
    err = " ".join(capsys.readouterr().err.split())  # the console wraps long lines
    assert "rated: 1 tool from " in err and "1 tools" not in err
