"""A base install without the service extra: `rated serve`, `rated mcp` and `rated catalog mcp` say which
extra to install in one line (exit 2), instead of a traceback about uvicorn, fastapi or mcp."""

from __future__ import annotations

import sys

import pytest
from cli_run import run

from rated.retriever import Retriever


@pytest.mark.parametrize(
    ("argv", "missing"),
    [
        (("serve", "--db", "{db}"), "uvicorn"),
        (("serve", "--db", "{db}"), "fastapi"),
        (("mcp", "--db", "{db}"), "fastapi"),
        (("mcp", "--db", "{db}"), "mcp"),
    ],
)
def test_serve_and_mcp_without_the_service_extra_name_it(argv, missing, monkeypatch, capsys, tmp_path):
    monkeypatch.setitem(sys.modules, missing, None)  # as if not installed
    monkeypatch.setattr(Retriever, "open", lambda *a, **kw: pytest.fail("opened the index"))
    code, _, err = run(capsys, *(a.format(db=tmp_path / "rated.db") for a in argv))
    assert code == 2
    assert err.startswith(f"error: rated {argv[0]} needs the 'service' extra") and err.count("\n") == 1
    assert f"'{missing}'" in err and "pip install 'rated[service]'" in err


def test_catalog_mcp_without_the_mcp_sdk_names_the_extra_and_writes_nothing(monkeypatch, capsys, tmp_path):
    monkeypatch.setitem(sys.modules, "mcp", None)
    out = tmp_path / "tools.jsonl"
    code, _, err = run(capsys, "catalog", "mcp", "--url", "http://127.0.0.1:9/mcp", "--out", out, "--json")
    assert code == 2 and not out.exists()
    assert err.startswith("error: listing an MCP server's tools needs the 'service' extra")
    assert "pip install 'rated[service]'" in err and err.count("\n") == 1
