"""``rated remove`` repairs a database holding a tool whose stored record no longer validates (an id
starting with ``provider:``, indexed before such ids were refused): the removal goes by id and never
parses the removed tool's record, also where the index has to be built from every record (no lexical
snapshot fits: one of another format, or none); the other tools keep working."""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_run import run

from old_provider_db import index_before_the_rule
from rated import Tool
from rated.encode.testing import HashEncoder
from rated.index import hnsw_snapshot, snapshot
from rated.retriever import Retriever
from rated.store.sqlite import SQLiteStore


def drop_cached(db: Path, name: str) -> None:
    store = SQLiteStore(db)
    try:
        store.delete_cached(name)
    finally:
        store.close()


def cached(db: Path, name: str) -> bytes | None:
    store = SQLiteStore(db)
    try:
        return store.load_cached(name)
    finally:
        store.close()


@pytest.mark.parametrize("with_snapshot", [True, False], ids=["snapshot", "no-snapshot"])
def test_rated_remove_takes_out_a_tool_whose_record_no_longer_validates(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys, with_snapshot: bool
) -> None:
    db = index_before_the_rule(tmp_path / "old.db", monkeypatch)
    if not with_snapshot:
        drop_cached(db, snapshot.NAME)
    assert run(capsys, "search", "--db", db, "weather")[0] == 1  # its record is read, and fails
    code, out, err = run(capsys, "remove", "--db", db, "provider:acme")
    assert code == 0, err
    assert "provider:acme" in out
    code, out, err = run(capsys, "tools", "--db", db, "--json")
    assert code == 0, err
    assert "provider:acme" not in out and '"b"' in out
    code, out, err = run(capsys, "search", "--db", db, "weather forecast", "--json")
    assert code == 0, err
    assert '"b"' in out


def test_a_removal_before_the_first_search_drops_a_graph_its_pool_no_longer_uses(tmp_path: Path) -> None:
    """The index, not built yet, is built from the tools that stay: a pool that falls below
    ``hnsw_threshold`` drops the graph saved for the larger one, as a built index's removal does."""
    db = tmp_path / "g.db"
    tools = [Tool(id=f"t{i}", name=f"tool_{i}", description=f"tool number {i}") for i in range(5)]
    semantic = {"hnsw_threshold": 3}
    Retriever.from_catalog(tools, db=db, encoder=HashEncoder(64), semantic=semantic).close()
    assert cached(db, hnsw_snapshot.NAME) is not None
    with Retriever.open(db) as r:
        assert r.remove_tools(["t0", "t1"]) == ["t0", "t1"]
        assert len(r) == 3 and r.index.dense.kind == "flat"
        assert [h.id for h in r.retrieve("tool number 3", k=3)][0] == "t3"
    assert cached(db, hnsw_snapshot.NAME) is None
