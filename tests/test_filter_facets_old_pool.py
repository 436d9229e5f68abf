"""What the retriever keeps of a pool it left behind for the next facet filter is the pool's facet table
only: the old pool's tools (removed ones, a whole catalog another process replaced) are not held until a
filtered query comes, which may never."""

from __future__ import annotations

import gc
import weakref

from rated.encode.testing import HashEncoder
from rated.retriever import Retriever
from test_filter_facets_retriever import QUERY, tools


def test_a_removed_tool_is_not_held_for_the_next_filter(tmp_path):
    db = tmp_path / "r.db"
    Retriever.from_catalog(tools(), db=db, encoder=HashEncoder(64)).close()
    with Retriever.open(db, encoder=HashEncoder(64)) as r:
        r.retrieve(QUERY, k=2, where={"source": "mcp"})  # the pool's facet table built
        removed = weakref.ref(r.tool("t1"))
        r.remove_tools(["t1"])
        r.retrieve(QUERY, k=2)
        gc.collect()
        assert removed() is None
        hits = r.retrieve(QUERY, k=len(tools()), where={"source": "n8n"})
    assert {h.id for h in hits} == {t.id for t in tools() if t.source == "n8n" and t.id != "t1"}


def test_a_catalog_rebuilt_elsewhere_is_not_held_for_the_next_filter(tmp_path):
    db = tmp_path / "r.db"
    Retriever.from_catalog(tools(), db=db, encoder=HashEncoder(64)).close()
    with Retriever.open(db, encoder=HashEncoder(64)) as r:
        r.retrieve(QUERY, k=2, where={"source": "mcp"})
        old = weakref.ref(r.tool("t0"))
        Retriever.from_catalog(tools(start=100), db=db, encoder=HashEncoder(64), overwrite=True).close()
        r.retrieve(QUERY, k=2)  # the new catalog read
        gc.collect()
        assert old() is None
