"""Outcomes reported to the retriever: ``feedback`` (and ``afeedback``), and ``track`` / ``call`` (and their
async forms), which classify a call's outcome themselves (``rated.tracking``, ``rated.classify``).

``OutcomeReports`` is a part of ``rated.retriever.Retriever``, not a class to use alone. It learns each
outcome through the store's atomic read-modify-write (``_store.update_states``) into the policy that
``StoreMirror`` keeps (``_policy``), weighs 404/410 answers by the rule for retired endpoints (``_retired``,
else the one in ``_meta``), and shares with the facade its ``_lock``, ``_clock`` and query checks
(``_check_query``, ``_encode_queries``).
"""

from __future__ import annotations

import asyncio
import hashlib
import threading
from collections.abc import Callable, Mapping, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

from rated import retriever_setup as setup
from rated.errors import ConfigError, IndexFormatError, UnknownToolError
from rated.outcome import Outcome, OutcomeKind, finite_seconds
from rated.policy.base import Feedback
from rated.retired import STATUSES, RetiredRule, weigh
from rated.retriever_mirror import StoreMirror
from rated.shown import shown
from rated.store.base import OutcomeRecord
from rated.store.codec import encode_state
from rated.tracking import AsyncTrackedCall, TrackedCall

__all__ = ["OutcomeReports"]

T = TypeVar("T")


class OutcomeReports(StoreMirror):
    """How each call of a tool went, learned by the policy and logged, shared through the store."""

    # set by the facade (Retriever.__init__)
    _lock: threading.RLock
    _clock: Callable[[], float]
    _retired: RetiredRule | None

    if TYPE_CHECKING:  # the facade's query checks (Retriever)

        def _check_query(self, query: object) -> None: ...

        def _encode_queries(self, queries: Sequence[str]) -> np.ndarray: ...

    def feedback(
        self,
        tool_id: str,
        outcome: Outcome | OutcomeKind | str | bool,
        query: str | None = None,
        retry_after: float | None = None,
        *,
        probe: bool = False,
    ) -> Outcome:
        """Report how a call of ``tool_id`` went; persisted (and shared) before this returns, which gives
        what the policy learned: the outcome reported, or a ``tool_error`` for a 404/410 the rule below
        counted.

        ``outcome``: ``"success"``, ``"tool_error"``, ``"timeout"``, ``"rate_limited"``, ``"auth_error"``,
        ``"caller_error"`` (never counts against the tool), an ``Outcome``, or a bool. ``query`` (the
        request the tool was called for) lets the policy learn query-specific failures; ``retry_after``
        (seconds) is a rate-limit hint. ``probe``: a health check no agent paid for (``rated.probing``):
        it moves the policy's belief but is not written to the outcome log, whose counts are calls.

        A ``caller_error`` that came from a 404 or 410 (an ``Outcome`` whose ``status`` says so, as
        ``outcome_from_status`` and ``track`` make them) is weighed as evidence of a retired endpoint
        (``rated.retired``): once the tool has answered so to enough different queries since its last
        success, the policy learns it as a ``tool_error``; the outcome log still records ``caller_error``.
        """
        if not isinstance(tool_id, str) or not tool_id:
            raise UnknownToolError(tool_id)  # as passed: the message quotes it (short), str() may fail
        retry_after = _check_retry_after(retry_after)
        if isinstance(outcome, Outcome) and retry_after is not None:
            outcome = Outcome(outcome.kind, retry_after, outcome.status)
        result = Outcome.of(outcome, retry_after)
        context = None
        query_hash = None
        if query is not None:
            self._check_query(query)
            context = self._encode_queries([query])[0]
            query_hash = hashlib.sha256(query.encode("utf-8")).hexdigest()[:16]
        with self._lock:
            self._refresh()  # the tool may have been added or removed by another process since
            tool_id = self._known_id(tool_id)  # as the catalog spells it, whichever Unicode form was typed
            entry = self._by_id[tool_id]
            now = float(self._clock())
            learned, learned_context = result, context
            # the rule is read only for a 404/410 (what it weighs), not on every feedback
            rule = None if probe or result.status not in STATUSES else self._retired_rule()
            if (
                rule is not None
                and rule.applies(result)
                and weigh(self._store, rule, tool_id, query_hash, now).counts
            ):
                # the evidence is about the tool (many queries, all answered "gone"), not about this query
                learned, learned_context = Outcome(OutcomeKind.TOOL_ERROR, None, result.status), None
            fb = Feedback(
                tool_id=tool_id,
                outcome=learned,
                now=now,
                context=learned_context,
                provider=entry.tool.provider_key,
                probe=bool(probe),
            )
            record = (
                None
                if probe
                else OutcomeRecord(now, tool_id, result.kind.value, query_hash, result.retry_after)
            )
            counts = learned.is_success or learned.counts_against_tool
            keys = list(self._policy.state_keys(fb)) if counts else []

            def update(current: Mapping[str, bytes]) -> dict[str, bytes]:
                self._set_states(keys, current)
                self._policy.learn(fb)
                out = {}
                for key in keys:
                    state = self._policy.get_state(key)
                    if state is not None:
                        out[key] = encode_state(state)
                return out

            try:
                self._store.update_states(keys, update, record)
            except BaseException:
                self._undo_local(keys)  # the policy may hold a change the store refused
                raise
        return learned

    # agents built on asyncio must not block their event loop on a store write (a lock wait)
    async def afeedback(
        self,
        tool_id: str,
        outcome: Outcome | OutcomeKind | str | bool,
        query: str | None = None,
        retry_after: float | None = None,
    ) -> Outcome:
        """``feedback``, awaitable: runs in a worker thread; returns once the outcome is persisted."""
        return await asyncio.to_thread(self.feedback, tool_id, outcome, query, retry_after)

    @property
    def retired_rule(self) -> RetiredRule:
        """The rule for retired endpoints that ``feedback`` applies: this process's own (``open(...,
        retired=...)``), else the one saved with the index."""
        return self._retired_rule()

    def _retired_rule(self) -> RetiredRule:
        """The rule for retired endpoints: this process's own, else the one saved with the index."""
        if self._retired is not None:
            return self._retired
        try:
            return RetiredRule.parse(self._meta.retired)
        except ConfigError as exc:
            raise IndexFormatError(
                f"{setup.describe_db(self._store)}: the saved rule for retired endpoints is damaged ({exc})"
            ) from None

    # ---- tracked calls: the outcome reported and classified by itself (rated.tracking, rated.classify) --
    def track(self, tool_id: str, query: str | None = None) -> TrackedCall:
        """``with r.track(tool_id, query=...) as call:`` reports the call made in the block, once: success
        when it returns, ``outcome_from_exception`` when it raises (the exception propagates), or what
        ``call.report(...)`` / ``call.report_status(status, headers)`` said. An unknown tool id or a bad
        query fails here, before the tool runs; a report that fails is logged, never raised over the call.
        """
        return TrackedCall(self._check_call(tool_id, query), query, self.feedback)

    def atrack(self, tool_id: str, query: str | None = None) -> AsyncTrackedCall:
        """``track`` for ``async with``: entering checks the id off the event loop; ``afeedback`` reports."""
        start = partial(asyncio.to_thread, self._check_call, tool_id, query)
        return AsyncTrackedCall(tool_id, query, self.afeedback, start)

    def call(
        self,
        tool_id: str,
        fn: Callable[..., T],
        arguments: Mapping[str, Any] | None = None,
        *,
        query: str | None = None,
    ) -> T:
        """``fn(**arguments)``, tracked as ``track`` does; arguments that do not fit ``fn`` are reported as
        a caller error and raise ``TypeError`` without running it."""
        with self.track(tool_id, query) as tracked:
            return tracked.run(fn, arguments)

    async def acall(
        self,
        tool_id: str,
        fn: Callable[..., Any],
        arguments: Mapping[str, Any] | None = None,
        *,
        query: str | None = None,
    ) -> Any:
        """``call`` for coroutine functions (a plain function's result is returned as it is)."""
        async with self.atrack(tool_id, query) as tracked:
            return await tracked.run(fn, arguments)

    def _check_call(self, tool_id: object, query: object) -> str:
        """The catalog's spelling of ``tool_id`` (``UnknownToolError`` if none), the query checked too."""
        if query is not None:
            self._check_query(query)
        with self._lock:
            self._refresh()
            return self._known_id(tool_id)


def _check_retry_after(value: Any) -> float | None:
    if value is None:
        return None
    seconds = finite_seconds(value)  # numpy scalars too: a retry-after is often computed
    if seconds is None:
        raise ConfigError(f"retry_after must be a finite number of seconds >= 0, got {shown(value)}")
    return seconds
