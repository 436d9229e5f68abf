"""SQLite store: the embedded default, one file that several processes can share.

Concurrency: WAL journal (readers never block the writer), and every feedback is a ``BEGIN IMMEDIATE``
read-modify-write, so two processes updating one tool serialise instead of losing an update. A writer that
waits longer than ``busy_timeout`` seconds for the lock gets ``StoreBusyError`` (retryable).

Durability: an acknowledged feedback must survive a crash of the process that wrote it. WAL with
``synchronous=NORMAL`` (``durability="normal"``, the default) gives exactly that: a commit is in the WAL
file (in the OS) before it returns, so ``kill -9`` right after ``feedback()`` loses nothing, and the file
never corrupts. Only an OS crash or power cut can roll back the last few commits. ``durability="full"``
(``synchronous=FULL``) fsyncs the WAL on every commit and survives power loss too, at the price of one
fsync per feedback: measured here at 0.4 ms on an idle disk but 4 ms under load, against a 0.05 ms commit
with NORMAL and a 1 ms budget for a persisted feedback. Losing the last outcomes on a power cut delays a
demotion by one failure; stalling every feedback on fsync hurts every agent, so NORMAL is the default.

Tables: ``meta`` (format version, config JSON), ``tools`` (id, JSON record, position), ``embeddings``
(float32 blobs), ``prior``, ``policy_state`` (key -> blob, change number), ``outcomes`` (append-only log,
all of it unless ``max_outcomes`` keeps only the newest records),
``outcome_counts`` (per-tool totals of that log, updated in the same transaction: ``rated tools`` reads one
row per tool however long the log), ``counters`` (state change number, catalog version), ``cached``
(derived data such as the lexical index snapshot, made on first use) and ``evidence`` (what a retriever
gathers across calls, ``rated.retired``: made on first use, like ``cached``).
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from rated.errors import ConfigError, IndexFormatError, StoreBusyError, StoreError
from rated.store.base import (
    FORMAT_VERSION,
    IndexExistsError,
    LastToolError,
    OutcomeRecord,
    OutcomeStats,
    StoredCatalog,
)
from rated.store.rows import (
    PriorDetails,
    check_max_outcomes,
    check_tool_rows,
    decode_meta,
    decode_vector,
    empty_catalog_dim,
    evidence_of,
    refuse_clashes,
)
from rated.store.stats import outcome_slot

__all__ = ["SQLiteStore"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS tools (
    id TEXT PRIMARY KEY, position INTEGER NOT NULL UNIQUE, record TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS embeddings (id TEXT PRIMARY KEY, dim INTEGER NOT NULL, vector BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS prior (id TEXT PRIMARY KEY, r_static REAL NOT NULL, detail TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS policy_state (
    key TEXT PRIMARY KEY, seq INTEGER NOT NULL, state BLOB NOT NULL, updated REAL NOT NULL);
CREATE INDEX IF NOT EXISTS policy_state_seq ON policy_state (seq);
CREATE TABLE IF NOT EXISTS outcomes (
    seq INTEGER PRIMARY KEY AUTOINCREMENT, time REAL NOT NULL, tool_id TEXT NOT NULL,
    query_hash TEXT, outcome TEXT NOT NULL, retry_after REAL);
CREATE INDEX IF NOT EXISTS outcomes_tool ON outcomes (tool_id, seq);
CREATE TABLE IF NOT EXISTS counters (name TEXT PRIMARY KEY, value INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS outcome_counts (
    tool_id TEXT PRIMARY KEY, successes INTEGER NOT NULL, failures INTEGER NOT NULL,
    caller_errors INTEGER NOT NULL, last_outcome TEXT, last_time REAL);
INSERT OR IGNORE INTO counters (name, value) VALUES ('state_seq', 0), ('catalog_version', 0);
"""

# every table and index _SCHEMA creates: a database holding all of them needs no schema transaction
_SCHEMA_NAMES = frozenset(m.split()[0] for m in _SCHEMA.split("IF NOT EXISTS ")[1:])
_CATALOG_TABLES = (("tools", "id"), ("embeddings", "id"), ("prior", "id"))
_TOOL_TABLES = (*_CATALOG_TABLES, ("policy_state", "key"))
# per-tool totals of the outcome log, kept in the transaction that appends to it, so that reading them
# costs one row per tool instead of a scan of a log that grows with every feedback
_COUNT_OUTCOME = """
INSERT INTO outcome_counts (tool_id, successes, failures, caller_errors, last_outcome, last_time)
VALUES (?, ?, ?, ?, ?, ?)
ON CONFLICT (tool_id) DO UPDATE SET
    successes = successes + excluded.successes, failures = failures + excluded.failures,
    caller_errors = caller_errors + excluded.caller_errors,
    last_outcome = excluded.last_outcome, last_time = excluded.last_time"""
_DURABILITY = {"full": "FULL", "normal": "NORMAL"}
# derived data any process can recompute (``load_cached``); not in _SCHEMA, so that opening an older
# or read-only file never needs to write
_CACHED_TABLE = "CREATE TABLE IF NOT EXISTS cached (name TEXT PRIMARY KEY, value BLOB NOT NULL)"
# evidence across calls (``update_evidence``): made on first use too, so that older files open unchanged
_EVIDENCE_TABLE = "CREATE TABLE IF NOT EXISTS evidence (key TEXT PRIMARY KEY, value BLOB NOT NULL)"
# how long ``save_cached`` waits for another writer's lock: it runs inside a first search, and a cache not
# saved now is saved by a later open; waiting busy_timeout there held up every request of the process
_CACHED_WAIT = 0.1


class SQLiteStore:
    """``Store`` in one SQLite file. Thread-safe (one connection behind a lock); share across processes."""

    def __init__(
        self,
        path: str | Path,
        *,
        create: bool = True,
        busy_timeout: float = 5.0,
        durability: str = "normal",
        max_outcomes: int | None = None,
    ) -> None:
        if durability not in _DURABILITY:
            raise ConfigError(f"durability must be one of {sorted(_DURABILITY)}, got {durability!r}")
        if not busy_timeout > 0:
            raise ConfigError(f"busy_timeout must be > 0 seconds, got {busy_timeout!r}")
        self.path = Path(path)
        self.busy_timeout = float(busy_timeout)
        self.durability = durability
        self.max_outcomes = check_max_outcomes(max_outcomes)  # None: the log keeps every record
        self._lock = threading.RLock()
        self._local_commits = 0
        self._counted = True  # outcome_counts exists (False: an older file opened where it cannot be added)
        if not create and not self.path.is_file():
            raise StoreError(f"{self.path}: no rated database there (create one with `rated index`)")
        try:
            self._conn = sqlite3.connect(
                str(self.path), timeout=self.busy_timeout, isolation_level=None, check_same_thread=False
            )
        except sqlite3.Error as exc:
            raise StoreError(f"{self.path}: cannot open database: {exc}") from None
        self._file = _FileIdentity(None, None)  # nothing to check while the file is being set up
        try:
            self._setup(create)
        except BaseException:
            self._conn.close()
            raise
        self._file = _FileIdentity.of(self.path)

    # ---- connection plumbing -----------------------------------------------------------------------
    def _setup(self, create: bool) -> None:
        """Check the file is a rated database (or may become one) before changing anything in it, then
        switch to WAL and, only where the schema is missing or incomplete, create it under the write lock:
        opening a complete database takes no lock, so readers never wait for another process's writer."""
        with self._errors():
            names = {r[0] for r in self._conn.execute("SELECT name FROM sqlite_master")}
            if names and "meta" not in names:
                raise IndexFormatError(f"{self.path}: an SQLite file, but not a rated database")
            if not names and not create:
                raise StoreError(f"{self.path}: empty database (create one with `rated index`)")
            found = self._format_version() if names else None
            if found is not None:
                self._check_format(found)
            mode = self._conn.execute("PRAGMA journal_mode").fetchone()[0]
            if str(mode).lower() != "wal":
                mode = self._conn.execute("PRAGMA journal_mode=WAL").fetchone()[0]
                if str(mode).lower() != "wal":
                    raise StoreError(f"{self.path}: cannot switch the database to WAL mode (got {mode!r})")
            self._conn.execute(f"PRAGMA synchronous={_DURABILITY[self.durability]}")
            if found is not None and _SCHEMA_NAMES <= names:
                return  # complete and of our version: nothing to write
            if found is not None and _SCHEMA_NAMES - names == {"outcome_counts"}:
                self._add_outcome_counts()
                return
            with self._write():
                for stmt in filter(str.strip, _SCHEMA.split(";")):
                    self._conn.execute(stmt)
                found = self._format_version()
                if found is None:
                    self._conn.execute(
                        "INSERT INTO meta (key, value) VALUES ('format_version', ?)", (str(FORMAT_VERSION),)
                    )
                else:
                    self._check_format(found)

    def _add_outcome_counts(self) -> None:
        """A file written before the per-tool totals existed: add them, counted from its log, once. Where
        the file cannot be written (read-only), ``outcome_stats`` scans the log instead, as it used to."""
        create = next(stmt for stmt in _SCHEMA.split(";") if "outcome_counts" in stmt)
        try:
            with self._write() as conn:
                # re-checked under the write lock: another opener may have counted the log meanwhile
                if conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'outcome_counts'").fetchone():
                    return
                conn.execute(create)
                conn.executemany(_COUNT_OUTCOME, _totals_rows(self._scan_outcome_stats(conn, "", [])))
        except StoreError as exc:
            if "readonly" not in str(exc):
                raise
            self._counted = False

    def _format_version(self) -> str | None:
        row = self._conn.execute("SELECT value FROM meta WHERE key='format_version'").fetchone()
        return None if row is None else str(row[0])

    def _check_format(self, found: str) -> None:
        if found != str(FORMAT_VERSION):
            raise IndexFormatError(
                f"{self.path}: store format version {found}, this rated reads version {FORMAT_VERSION}"
            )

    @contextmanager
    def _errors(self) -> Iterator[None]:
        """Turn sqlite3/OS errors into StoreError (StoreBusyError for lock time-outs) naming the file."""
        try:
            yield
        except sqlite3.OperationalError as exc:
            msg = str(exc)
            if "locked" in msg or "busy" in msg:
                raise StoreBusyError(
                    f"{self.path}: database stayed locked for more than {self.busy_timeout:g} s ({msg})"
                ) from None
            raise StoreError(f"{self.path}: {msg}") from None
        except (sqlite3.Error, OSError) as exc:
            raise StoreError(f"{self.path}: {exc}") from None

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """One ``BEGIN IMMEDIATE`` transaction (waits up to busy_timeout for the write lock), refused
        when the file opened is no longer the one at the path (``_FileIdentity``)."""
        with self._lock, self._errors():
            self._file.check(self.path)
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                yield self._conn
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            self._conn.execute("COMMIT")
            self._local_commits += 1

    def _read(self, sql: str, params: Sequence[Any] = ()) -> list[tuple]:
        with self._lock, self._errors():
            return self._conn.execute(sql, params).fetchall()

    # ---- meta and catalog --------------------------------------------------------------------------
    def get_meta(self) -> dict[str, Any]:
        rows = self._read("SELECT value FROM meta WHERE key='config'")
        return decode_meta(rows[0][0] if rows else None, str(self.path))

    def set_meta(self, meta: Mapping[str, Any]) -> None:
        text = json.dumps(dict(meta), sort_keys=True)
        with self._write() as conn:
            conn.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('config', ?)", (text,))

    def load_catalog(self) -> StoredCatalog:
        with self._lock, self._errors():
            self._conn.execute("BEGIN")  # one snapshot for all tables
            try:
                rows = self._conn.execute(
                    "SELECT t.id, t.record, e.dim, e.vector, p.r_static, p.detail FROM tools t "
                    "JOIN embeddings e ON e.id = t.id JOIN prior p ON p.id = t.id ORDER BY t.position"
                ).fetchall()
            finally:
                self._conn.execute("COMMIT")
        dims = {r[2] for r in rows}
        if len(dims) > 1:
            raise IndexFormatError(f"{self.path}: embeddings of different sizes {sorted(dims)}")
        dim = dims.pop() if dims else empty_catalog_dim(self.get_meta())
        where = str(self.path)
        # column by column, each checked at C speed (the rows that fail are then looked for and named):
        # a process opening 50,000 tools pays for no per-row Python work
        columns: list[tuple[Any, ...]] = list(zip(*rows, strict=True)) if rows else [()] * 6
        ids, records, _, vectors, r_static, details = columns
        if not set(map(type, vectors)) <= {bytes} or not set(map(len, vectors)) <= {4 * dim}:
            for tool_id, vector in zip(ids, vectors, strict=True):
                decode_vector(vector, dim, where, tool_id)  # raises at the first damaged one
        if not set(map(type, r_static)) <= {float, int}:
            bad = next(i for i, r in enumerate(r_static) if type(r) not in (float, int))
            raise IndexFormatError(f"{where}: damaged prior for tool {ids[bad]!r}")
        if not set(map(type, records)) <= {str}:  # their content is validated by whoever parses them
            bad = next(i for i, r in enumerate(records) if type(r) is not str)
            raise IndexFormatError(f"{where}: damaged record for tool {ids[bad]!r}: not text")
        emb = _embedding_matrix(vectors, dim)
        return StoredCatalog(
            ids=ids,
            records=records,
            embeddings=emb,
            prior=np.array(r_static, dtype=np.float32),
            prior_detail=PriorDetails(details, ids, where),
        )

    def put_tools(
        self,
        ids: Sequence[str],
        records: Sequence[str],
        embeddings: np.ndarray,
        prior: np.ndarray,
        prior_detail: Sequence[Mapping[str, Any]] | None = None,
        *,
        new_only: bool = False,
        check_meta: Callable[[dict[str, Any]], None] | None = None,
        delete: Sequence[str] = (),
    ) -> int:
        emb, details = check_tool_rows(ids, records, embeddings, prior, prior_detail)
        with self._write() as conn:
            if check_meta is not None:  # the settings of the index the tools land in, inside the change
                row = conn.execute("SELECT value FROM meta WHERE key='config'").fetchone()
                check_meta(decode_meta(row[0] if row else None, str(self.path)))

            # checked inside the change: of two writers adding one id (or two Unicode spellings of it),
            # the second is refused
            def held(keys: list[str]) -> list[str]:
                read = lambda sql, args: conn.execute(sql, args).fetchall()  # noqa: E731
                return [r[0] for r in _select_in(read, "SELECT id FROM tools WHERE id IN ({})", keys)]

            def not_ascii() -> list[str]:  # more bytes than characters; a scan of the id index only
                sql = "SELECT id FROM tools WHERE length(CAST(id AS BLOB)) > length(id)"
                return [r[0] for r in conn.execute(sql)]

            refuse_clashes(ids, held, new_only=new_only, delete=delete, not_ascii=not_ascii)
            added = self._insert_tools(conn, ids, records, emb, prior, details)
            # what a late writer left under an id the catalog did not hold (a feedback that found the tool
            # before another process removed it): a tool added under it starts with none
            self._drop_learned(conn, added)
            if delete:
                self._delete_rows(conn, delete)
            return self._bump_catalog(conn)

    def replace_catalog(
        self,
        ids: Sequence[str],
        records: Sequence[str],
        embeddings: np.ndarray,
        prior: np.ndarray,
        prior_detail: Sequence[Mapping[str, Any]] | None,
        meta: Mapping[str, Any],
        *,
        expect_empty: bool = False,
    ) -> int:
        emb, details = check_tool_rows(ids, records, embeddings, prior, prior_detail)
        text = json.dumps(dict(meta), sort_keys=True)
        with self._write() as conn:  # one transaction: the old index stays until the new one is complete
            if (
                expect_empty
                and conn.execute(
                    "SELECT EXISTS (SELECT 1 FROM tools) OR EXISTS "
                    "(SELECT 1 FROM meta WHERE key = 'config' AND value != '{}')"
                ).fetchone()[0]
            ):
                raise IndexExistsError(f"{self.path} already holds an index")
            for table, _ in _TOOL_TABLES:
                conn.execute(f"DELETE FROM {table}")
            if _has_evidence(conn):
                conn.execute("DELETE FROM evidence")
            conn.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('config', ?)", (text,))
            self._insert_tools(conn, ids, records, emb, prior, details)
            return self._bump_catalog(conn)

    @staticmethod
    def _insert_tools(
        conn: sqlite3.Connection,
        ids: Sequence[str],
        records: Sequence[str],
        emb: np.ndarray,
        prior: np.ndarray,
        details: Sequence[Mapping[str, Any]],
    ) -> list[str]:
        """Insert at the end, or replace in place, inside the caller's transaction; returns the ids
        inserted (not held before)."""
        (top,) = conn.execute("SELECT COALESCE(MAX(position), -1) FROM tools").fetchone()
        # only the ids being written: a tool added to a large catalog must not read every row
        read = lambda sql, args: conn.execute(sql, args).fetchall()  # noqa: E731
        existing = dict(_select_in(read, "SELECT id, position FROM tools WHERE id IN ({})", list(ids)))
        tool_rows, added = [], []
        for i, tool_id in enumerate(ids):
            position = existing.get(tool_id)
            if position is None:
                top += 1
                position = top
                added.append(tool_id)
            tool_rows.append((tool_id, position, records[i]))
        conn.executemany("INSERT OR REPLACE INTO tools (id, position, record) VALUES (?,?,?)", tool_rows)
        conn.executemany(
            "INSERT OR REPLACE INTO embeddings (id, dim, vector) VALUES (?, ?, ?)",
            [(t, emb.shape[1], emb[i].tobytes()) for i, t in enumerate(ids)],
        )
        conn.executemany(
            "INSERT OR REPLACE INTO prior (id, r_static, detail) VALUES (?, ?, ?)",
            [(t, float(prior[i]), json.dumps(dict(details[i]))) for i, t in enumerate(ids)],
        )
        return added

    def delete_tools(self, ids: Sequence[str], *, keep_one: bool = False) -> int:
        if not ids:
            return self.catalog_version()
        with self._write() as conn:
            self._delete_rows(conn, ids, keep_one)
            return self._bump_catalog(conn)

    def _delete_rows(self, conn: sqlite3.Connection, ids: Sequence[str], keep_one: bool = True) -> None:
        """Remove tools and their states inside the caller's transaction (``LastToolError``: none left)."""
        params = [(t,) for t in ids]
        for table, column in _CATALOG_TABLES:
            conn.executemany(f"DELETE FROM {table} WHERE {column} = ?", params)
        self._drop_learned(conn, ids)  # a tool added again later starts with none
        if keep_one and not conn.execute("SELECT EXISTS (SELECT 1 FROM tools)").fetchone()[0]:
            raise LastToolError(f"{self.path}: cannot remove every tool: an index needs at least one")

    @staticmethod
    def _drop_learned(conn: sqlite3.Connection, ids: Sequence[str]) -> None:
        """Drop the policy state and the evidence kept under ``ids`` (inside the caller's transaction)."""
        if not ids:
            return
        conn.executemany("DELETE FROM policy_state WHERE key = ?", [(t,) for t in ids])
        if _has_evidence(conn):
            keys = evidence_of((r[0] for r in conn.execute("SELECT key FROM evidence")), set(ids))
            conn.executemany("DELETE FROM evidence WHERE key = ?", [(k,) for k in keys])

    def clear(self) -> None:
        with self._write() as conn:
            for table, _ in _TOOL_TABLES:
                conn.execute(f"DELETE FROM {table}")
            if _has_evidence(conn):
                conn.execute("DELETE FROM evidence")
            conn.execute("DELETE FROM meta WHERE key = 'config'")
            self._bump_catalog(conn)

    @staticmethod
    def _bump_catalog(conn: sqlite3.Connection) -> int:
        sql = "UPDATE counters SET value = value + 1 WHERE name = 'catalog_version' RETURNING value"
        return int(conn.execute(sql).fetchone()[0])

    def catalog_version(self) -> int:
        with self._lock, self._errors():
            return self._catalog_version(self._conn)

    @staticmethod
    def _catalog_version(conn: sqlite3.Connection) -> int:
        return int(conn.execute("SELECT value FROM counters WHERE name = 'catalog_version'").fetchone()[0])

    def load_cached(self, name: str) -> bytes | None:
        try:
            rows = self._read("SELECT value FROM cached WHERE name = ?", (name,))
        except StoreError as exc:
            if "no such table" in str(exc):  # nothing was ever cached in this file
                return None
            raise
        return bytes(rows[0][0]) if rows else None

    def save_cached(self, name: str, data: bytes, *, catalog_version: int | None = None) -> bool:
        row = (name, bytes(data))

        def save(conn: sqlite3.Connection) -> bool:
            conn.execute(_CACHED_TABLE)  # made on first use: opening a file never needs it
            conn.execute("INSERT OR REPLACE INTO cached (name, value) VALUES (?, ?)", row)
            return True

        return self._change_cached(save, catalog_version)

    def delete_cached(self, name: str, *, catalog_version: int | None = None) -> bool:
        try:  # read first: nothing to drop (the usual case) takes no write lock
            if not self._read("SELECT 1 FROM cached WHERE name = ?", (name,)):
                return False
        except StoreError as exc:
            if "no such table" in str(exc):
                return False
            raise

        def drop(conn: sqlite3.Connection) -> bool:
            return conn.execute("DELETE FROM cached WHERE name = ?", (name,)).rowcount > 0

        return self._change_cached(drop, catalog_version)

    def _change_cached(
        self, change: Callable[[sqlite3.Connection], bool], catalog_version: int | None
    ) -> bool:
        """Run ``change`` in a write that waits for the lock only briefly (a cache not written now is
        written later), and only while the catalog version is ``catalog_version`` when one is given."""
        with self._lock, self._errors():  # the lock: no other thread writes under the short wait
            self._conn.execute(f"PRAGMA busy_timeout = {int(min(_CACHED_WAIT, self.busy_timeout) * 1000)}")
            try:
                with self._write() as conn:
                    if catalog_version is not None and self._catalog_version(conn) != catalog_version:
                        return False
                    return change(conn)
            finally:
                self._conn.execute(f"PRAGMA busy_timeout = {int(self.busy_timeout * 1000)}")

    # ---- policy state ------------------------------------------------------------------------------
    def load_states(self, keys: Iterable[str] | None = None) -> dict[str, bytes]:
        if keys is None:
            return {k: bytes(v) for k, v in self._read("SELECT key, state FROM policy_state")}
        rows = _select_in(self._read, "SELECT key, state FROM policy_state WHERE key IN ({})", list(keys))
        return {k: bytes(v) for k, v in rows}

    def update_states(
        self,
        keys: Sequence[str],
        update: Callable[[Mapping[str, bytes]], Mapping[str, bytes]],
        record: OutcomeRecord | None = None,
    ) -> None:
        keys = list(dict.fromkeys(keys))
        with self._write() as conn:
            current: dict[str, bytes] = {}
            if keys:
                marks = ",".join("?" * len(keys))
                current = {
                    k: bytes(v)
                    for k, v in conn.execute(
                        f"SELECT key, state FROM policy_state WHERE key IN ({marks})", keys
                    )
                }
            new = dict(update(current))
            if new:
                (seq,) = conn.execute(
                    "UPDATE counters SET value = value + ? WHERE name = 'state_seq' RETURNING value",
                    (len(new),),
                ).fetchone()
                now = time.time()
                conn.executemany(
                    "INSERT OR REPLACE INTO policy_state (key, seq, state, updated) VALUES (?, ?, ?, ?)",
                    [(k, seq - len(new) + 1 + i, bytes(b), now) for i, (k, b) in enumerate(new.items())],
                )
            if record is not None:
                conn.execute(
                    "INSERT INTO outcomes (time, tool_id, query_hash, outcome, retry_after) "
                    "VALUES (?, ?, ?, ?, ?)",
                    (record.time, record.tool_id, record.query_hash, record.outcome, record.retry_after),
                )
                if self._counted:
                    slots = [0, 0, 0]
                    slots[outcome_slot(record.outcome)] = 1
                    conn.execute(_COUNT_OUTCOME, (record.tool_id, *slots, record.outcome, record.time))
                    if self.max_outcomes is not None:  # the totals above stay exact: only old records go
                        conn.execute(
                            "DELETE FROM outcomes WHERE seq <= (SELECT MAX(seq) FROM outcomes) - ?",
                            (self.max_outcomes,),
                        )

    def states_since(self, seq: int) -> tuple[dict[str, bytes], int]:
        with self._lock, self._errors():
            self._conn.execute("BEGIN")  # the counter and the rows from one snapshot
            try:
                (latest,) = self._conn.execute(
                    "SELECT value FROM counters WHERE name = 'state_seq'"
                ).fetchone()
                if latest < int(seq):  # a number from another history (a file restored from a copy)
                    seq = 0
                rows = self._conn.execute(
                    "SELECT key, state FROM policy_state WHERE seq > ?", (int(seq),)
                ).fetchall()
            finally:
                self._conn.execute("COMMIT")
        return {k: bytes(v) for k, v in rows}, int(latest)

    def version(self) -> int:
        """``PRAGMA data_version`` (moves on other connections' commits) plus this connection's commits.
        Polled before every ranking, so a file deleted or replaced under this store fails there too."""
        with self._lock, self._errors():
            self._file.check(self.path)
            (data_version,) = self._conn.execute("PRAGMA data_version").fetchone()
        return (int(data_version) << 32) + self._local_commits

    # ---- evidence across calls (``EvidenceStore``) ---------------------------------------------------
    def load_evidence(self, key: str) -> bytes | None:
        try:
            rows = self._read("SELECT value FROM evidence WHERE key = ?", (key,))
        except StoreError as exc:
            if "no such table" in str(exc):  # no evidence was ever gathered in this file
                return None
            raise
        return bytes(rows[0][0]) if rows else None

    def load_evidence_many(self, keys: Iterable[str]) -> dict[str, bytes]:
        """``load_evidence`` of many keys in a few statements (one per 500 keys): those that have a blob."""
        keys = list(dict.fromkeys(keys))
        try:
            rows = list(_select_in(self._read, "SELECT key, value FROM evidence WHERE key IN ({})", keys))
        except StoreError as exc:
            if "no such table" in str(exc):  # no evidence was ever gathered in this file
                return {}
            raise
        return {str(key): bytes(value) for key, value in rows}

    def update_evidence(self, key: str, update: Callable[[bytes | None], bytes | None]) -> None:
        with self._write() as conn:
            conn.execute(_EVIDENCE_TABLE)
            row = conn.execute("SELECT value FROM evidence WHERE key = ?", (key,)).fetchone()
            new = update(None if row is None else bytes(row[0]))
            if new is not None:
                conn.execute("INSERT OR REPLACE INTO evidence (key, value) VALUES (?, ?)", (key, bytes(new)))
            elif row is not None:
                conn.execute("DELETE FROM evidence WHERE key = ?", (key,))

    # ---- outcome log -------------------------------------------------------------------------------
    def outcomes(self, tool_id: str | None = None, limit: int | None = 100) -> list[OutcomeRecord]:
        """The most recent ``limit`` records (all when None), oldest first."""
        where, params = ("WHERE tool_id = ?", [tool_id]) if tool_id is not None else ("", [])
        lim = "" if limit is None else f"LIMIT {max(int(limit), 0)}"
        rows = self._read(
            f"SELECT time, tool_id, outcome, query_hash, retry_after FROM outcomes {where} "
            f"ORDER BY seq DESC {lim}",
            params,
        )
        return [OutcomeRecord(t, tool, o, q, r) for t, tool, o, q, r in reversed(rows)]

    def outcome_stats(self, tool_ids: Sequence[str] | None = None) -> dict[str, OutcomeStats]:
        if tool_ids is not None and len(tool_ids) > 500:  # over SQLite's bound-parameter limit: filter here
            wanted = set(tool_ids)
            return {t: s for t, s in self.outcome_stats().items() if t in wanted}
        where, params = "", []
        if tool_ids is not None:
            if not tool_ids:
                return {}
            where, params = f"WHERE tool_id IN ({','.join('?' * len(tool_ids))})", list(tool_ids)
        if not self._counted:
            with self._lock, self._errors():
                return self._scan_outcome_stats(self._conn, where, params)
        rows = self._read(
            "SELECT tool_id, successes, failures, caller_errors, last_outcome, last_time "
            f"FROM outcome_counts {where}",
            params,
        )
        return {row[0]: OutcomeStats(*row) for row in rows}

    @staticmethod
    def _scan_outcome_stats(conn: sqlite3.Connection, where: str, params: list) -> dict[str, OutcomeStats]:
        """The totals counted from the log itself: a scan of every record (``where`` narrows it)."""
        counts: dict[str, list] = {}
        grouped = conn.execute(
            f"SELECT tool_id, outcome, COUNT(*) FROM outcomes {where} GROUP BY 1, 2", params
        )
        for tool_id, outcome, n in grouped:
            row = counts.setdefault(tool_id, [0, 0, 0])
            row[outcome_slot(outcome)] += n
        last = {
            t: (o, when)
            for t, o, when in conn.execute(
                "SELECT tool_id, outcome, time FROM outcomes "
                f"WHERE seq IN (SELECT MAX(seq) FROM outcomes {where} GROUP BY tool_id)",
                params,
            )
        }
        return {t: OutcomeStats(t, s, f, c, *last.get(t, (None, None))) for t, (s, f, c) in counts.items()}

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    def __enter__(self) -> SQLiteStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"SQLiteStore({str(self.path)!r}, durability={self.durability!r})"


class _FileIdentity:
    """The device and inode of the file a store opened, to tell when its path names another file.

    SQLite goes on reading and writing the file it opened after its name is gone, so without this a
    process whose database was deleted (and perhaps made anew by `rated index`) would answer from the old
    catalog and acknowledge feedback that no other process ever reads. One ``stat`` per check (2-4 us here;
    ``version()``, polled before every ranking, measured 8 us slower with it, about 1.6% of a cached
    retrieve); nothing is checked where the path names no file once opened (SQLite's special names)."""

    def __init__(self, where: str | None, identity: tuple[int, int] | None) -> None:
        self.where, self.identity = where, identity

    @classmethod
    def of(cls, path: Path) -> _FileIdentity:
        where = os.path.abspath(path)  # as SQLite resolved it: a later chdir must not move the check
        try:
            st = os.stat(where)
        except OSError:
            return cls(None, None)
        return cls(where, (st.st_dev, st.st_ino))

    def check(self, shown: Path) -> None:
        """Raise ``StoreError`` if the file at the path is gone or another one; any other failure to
        ``stat`` it is left to SQLite to report."""
        if self.where is None:
            return
        try:
            st = os.stat(self.where)
        except FileNotFoundError:
            raise StoreError(
                f"{shown}: the database file was deleted after this process opened it; restart the "
                "process once a database is there again (anything written to the deleted file is lost)"
            ) from None
        except OSError:
            return
        if (st.st_dev, st.st_ino) != self.identity:
            raise StoreError(
                f"{shown}: the database file was replaced after this process opened it (deleted and "
                "made anew, e.g. by `rated index` after `rm`); restart the process to open the new one "
                "(anything written to the old file is lost)"
            )


def _embedding_matrix(vectors: Sequence[bytes], dim: int, rows_at_once: int = 4096) -> np.ndarray:
    """The checked ``4 * dim``-byte vectors as one ``(n, dim)`` float32 array, copied in slices of joined
    rows (no Python work per row, no second copy of the whole matrix). numpy allocates the array: a
    large one gets transparent huge pages, which the exact dense scan of every search reads faster
    (about a tenth at 50,000 tools here) than a buffer Python allocated."""
    emb = np.empty((len(vectors), dim), dtype="<f4")
    if emb.size:
        flat, width = emb.data.cast("B"), 4 * dim * rows_at_once
        for i, start in enumerate(range(0, len(vectors), rows_at_once)):
            chunk = b"".join(vectors[start : start + rows_at_once])
            flat[i * width : i * width + len(chunk)] = chunk
    return emb.astype(np.float32, copy=False)


def _has_evidence(conn: sqlite3.Connection) -> bool:
    """Whether the file has the ``evidence`` table (made on first use: deleting from it must not make it)."""
    return (
        conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'evidence'").fetchone()
        is not None
    )


def _totals_rows(stats: Mapping[str, OutcomeStats]) -> list[tuple]:
    return [
        (s.tool_id, s.successes, s.failures, s.caller_errors, s.last_outcome, s.last_time)
        for s in stats.values()
    ]


def _select_in(
    read: Callable[[str, Sequence[Any]], Iterable[tuple]], sql: str, keys: Sequence[str]
) -> Iterator[tuple]:
    """Rows of ``sql`` (one ``IN ({})``) over ``keys``, in chunks below SQLite's bound-parameter limit."""
    for i in range(0, len(keys), 500):
        chunk = keys[i : i + 500]
        yield from read(sql.format(",".join("?" * len(chunk))), chunk)
