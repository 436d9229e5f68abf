"""A database file deleted or replaced under an open store is an error, not a ghost that takes writes.

SQLite keeps reading and writing the file it opened, even once its name is gone: after `rm rated.db &&
rated index tools.jsonl --db rated.db`, a running `rated serve` went on answering from the deleted
catalog, said ok on /health and acknowledged feedback that nothing would ever read again.
"""

from __future__ import annotations

import os
import time

import pytest

from rated.errors import StoreError
from rated.store.base import OutcomeRecord
from rated.store.sqlite import SQLiteStore


def _remove(path) -> None:
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(f"{path}{suffix}"):
            os.remove(f"{path}{suffix}")


def _feedback(store: SQLiteStore) -> None:
    store.update_states(["k"], lambda cur: {"k": b"1"}, OutcomeRecord(time.time(), "t", "success", None))


def test_a_deleted_file_fails_the_next_poll_and_write_naming_it(tmp_path):
    path = tmp_path / "rated.db"
    store = SQLiteStore(path)
    store.version()
    _remove(path)
    with pytest.raises(StoreError, match=r"rated\.db.*deleted.*restart"):
        store.version()
    with pytest.raises(StoreError, match="deleted"):
        _feedback(store)
    store.close()


def test_a_file_made_anew_at_the_path_is_not_written_through_the_old_one(tmp_path):
    path = tmp_path / "rated.db"
    store = SQLiteStore(path)
    _remove(path)
    fresh = SQLiteStore(path)  # `rated index` after `rm`: another file under the same name
    with pytest.raises(StoreError, match="replaced"):
        _feedback(store)
    with pytest.raises(StoreError, match="replaced"):
        store.version()
    assert fresh.load_states() == {}  # nothing was written to a file no one reads
    fresh.close()
    store.close()


def test_an_untouched_file_keeps_working_also_after_a_chdir(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    store = SQLiteStore("rated.db")  # a relative path, resolved when opened
    monkeypatch.chdir(tmp_path.parent)
    _feedback(store)
    assert store.version() == store.version()
    assert store.load_states() == {"k": b"1"}
    store.close()
