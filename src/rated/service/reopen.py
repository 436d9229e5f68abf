"""``Reopening``: the retriever a long-lived server calls, reopened when its index is rebuilt under it.

A retriever refuses an index that was rebuilt with another encoder or policy (its query embeddings or its
learned state would not match): every call raises ``StoreError``, for as long as the process lives. An
MCP server is started by an agent host, which restarts nothing: its tools would fail until the user
restarted the host; an HTTP service would answer 503 until its supervisor restarted it. So the MCP tools
and the HTTP routes call through ``Reopening``, which reopens the index over the same store
(``Retriever.reopen``: the settings the rebuild stored; the served retriever's clock and query-cache size,
and its encoder or policy where the rebuild kept them) and retries the call once. An index it cannot
reopen (built with another custom encoder) keeps failing, with the reason and ``restart_hint``.

It reopens only when the store's saved index settings differ from the ones the failing retriever serves:
a store that is busy, gone, being rebuilt, or failing in another way gets its own error, not a reopen
(a stalled one, ``StoreTimeoutError``, is not even asked: that would wait out its timeout twice).
The old retriever is dropped, not closed: it shares the store, which stays the opener's to close, and a
call still running on it finishes (or fails and comes here too).

Probes never reopen (``probe``): a reopen loads the rebuilt index and maybe an encoder (seconds for a
real model), which a liveness check or a metrics scrape must not wait for; they report the rebuild, and
the next real call reopens. A reopen that failed is remembered with the index it failed on, so a probe
can report that failure (until the store holds another index) without trying again.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import TypeVar

from rated.errors import RatedError, StoreBusyError, StoreError
from rated.retriever import Retriever
from rated.retriever_setup import describe_db
from rated.store.base import StoreTimeoutError
from rated.store.meta import IndexMeta

__all__ = ["Reopening"]

# errors that say nothing about a rebuild, raised as they are: busy (retryable as it is), stalled (asking the
# store whether the index was rebuilt would wait out its timeout again)
_NOT_A_REBUILD = (StoreBusyError, StoreTimeoutError)

log = logging.getLogger(__name__)
T = TypeVar("T")


class Reopening:
    """Holds the current retriever; ``call(fn)`` runs ``fn(retriever)``, reopening it once if needed, and
    ``probe(fn)`` runs it without ever reopening."""

    def __init__(
        self,
        retriever: Retriever,
        *,
        restart_hint: str = "restart the server",
        on_reopen: Callable[[], object] | None = None,
    ) -> None:
        self._current = retriever
        self._lock = threading.Lock()  # one reopen at a time: concurrent calls that fail wait for it
        self._restart_hint = restart_hint
        self._on_reopen = on_reopen  # e.g. a metric's inc
        self._failed: tuple[IndexMeta, str] | None = None  # the last failed reopen: its index, and why

    @property
    def current(self) -> Retriever:
        return self._current

    def probe(self, fn: Callable[[Retriever], T]) -> T | None:
        """``fn(retriever)`` as ``call`` runs it, but never reopening: None where ``call`` would reopen (the
        store holds an index rebuilt with other settings), and the ``StoreError`` of the last failed reopen
        while the store still holds the index it failed on. For health probes and metric scrapes."""
        retriever = self._current
        try:
            return fn(retriever)
        except _NOT_A_REBUILD:
            raise
        except StoreError:
            saved = _rebuilt(retriever)
            if saved is None:
                raise
        if self._current is not retriever:  # another call reopened it meanwhile
            return fn(self._current)
        failed = self._failed
        if failed is not None and failed[0] == saved:
            raise StoreError(failed[1])  # a new one each time: a kept exception would grow its traceback
        return None

    def call(self, fn: Callable[[Retriever], T]) -> T:
        retriever = self._current
        try:
            return fn(retriever)
        except _NOT_A_REBUILD:
            raise
        except StoreError as exc:
            fresh = self._reopened(retriever, exc)
        return fn(fresh)

    def _reopened(self, stale: Retriever, exc: StoreError) -> Retriever:
        """The retriever to retry with; ``exc`` again when reopening is not the cure."""
        with self._lock:
            if self._current is not stale:  # another call reopened it meanwhile
                return self._current
            saved = _rebuilt(stale)
            if saved is None:
                raise exc
            try:
                fresh = stale.reopen()
            except StoreBusyError:
                raise  # a store locked for a moment: retryable as it is, and the next call reopens it
            except RatedError as reason:
                why = f"{exc}; reopening it failed: {reason}; {self._restart_hint} once it can be opened"
                self._failed = (saved, why)
                raise StoreError(why) from None
            self._failed = None
            log.warning(
                "%s was rebuilt (encoder %s, policy %r): reopened it",
                describe_db(stale.store),
                fresh.meta.encoder,
                fresh.meta.policy,
            )
            self._current = fresh
            if self._on_reopen is not None:
                self._on_reopen()
            return fresh


def _rebuilt(retriever: Retriever) -> IndexMeta | None:
    """The settings of the index the store now holds, when they differ from the ones ``retriever`` serves."""
    try:
        raw = retriever.store.get_meta()
        saved = IndexMeta.from_dict(raw) if raw else None
    except StoreBusyError:
        raise  # locked for a moment: retryable, and the next call looks again
    except RatedError:  # the store cannot even say: its own error tells the caller more
        return None
    return saved if saved is not None and saved != retriever.meta else None
