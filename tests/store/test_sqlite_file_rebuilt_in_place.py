"""What the file-identity check (``SQLiteStore._FileIdentity``) must not refuse: an index rebuilt in the
same file by another process (`rated index --force`), and a database opened through a symlink."""

from __future__ import annotations

from rated.encode.testing import HashEncoder
from rated.retriever import Retriever
from rated.store.sqlite import SQLiteStore
from test_filter_facets_retriever import QUERY, tools


def test_a_rebuild_with_force_elsewhere_is_read_not_refused(tmp_path):
    db = tmp_path / "r.db"
    Retriever.from_catalog(tools(), db=db, encoder=HashEncoder(64)).close()
    with Retriever.open(db, encoder=HashEncoder(64)) as r:
        r.retrieve(QUERY, k=2)
        # another connection, as another process's `rated index --force` has: the catalog replaced in place
        Retriever.from_catalog(tools(start=100), db=db, encoder=HashEncoder(64), overwrite=True).close()
        top = r.retrieve(QUERY, k=1)[0].id
        assert top in {t.id for t in tools(start=100)}
        r.feedback(top, "success")
    with Retriever.open(db, encoder=HashEncoder(64)) as r:
        assert r.health(top).stats.successes == 1


def test_a_database_opened_through_a_symlink_keeps_working(tmp_path):
    real, link = tmp_path / "real.db", tmp_path / "link.db"
    SQLiteStore(real).close()
    link.symlink_to(real)
    store = SQLiteStore(link)
    assert store.version() == store.version()
    store.close()
