"""Report a tool call's outcome by itself: success when the block returns, the classified outcome when it
raises (``rated.classify``), or what the caller says, exactly once per call.

``Retriever.track`` / ``atrack`` / ``call`` / ``acall`` build these; the classes only need something that
reports (``Retriever.feedback`` / ``afeedback``), so they are tested without a store.

Reporting is best-effort towards the call it wraps (the retriever fails open for the agent too): a report
that fails (store busy or gone, the tool removed meanwhile) never replaces the tool's own exception and
never turns a tool's success into an exception, which would invite a retry of a call that has already had
its effect (an email sent twice). It is logged as a warning on the ``rated.tracking`` logger, kept on
``call.report_error`` and, when the tool raised, added to that exception as a note.

Nested blocks count a failure once, in the innermost block that saw it: the tool that failed. ::

    with retriever.track("web_research") as outer:  # a tool that runs another, or a step of calls
        with retriever.track("tavily_search") as inner:
            raise httpx.ConnectTimeout("...")  # inner.outcome: timeout, counted against tavily_search
    # outer.outcome: None (nothing reported for web_research); outer.failed_inside: "tavily_search"

The outer tool did not fail by itself: the exception passed through it. Counting it against the outer
tool as well would make the agent avoid that tool for a fault that is the inner one's, which the
retriever already routes around (its breaker trips; a retrieval inside the outer step picks another
tool). So a block whose exception a nested block has reported (that exception, one raised ``from`` it,
or a group of only such) reports nothing for its own tool, unless its caller chose an outcome with
``report``, and names the inner tool in ``failed_inside``. An exception the outer code raises otherwise
(a bug while handling the inner failure, a check of its own) is its own and counts against it, as does
an inner failure the outer code handled before failing in its own way.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Awaitable, Callable, Mapping
from types import TracebackType
from typing import Any, Self, TypeVar

from rated.classify import outcome_from_exception, outcome_from_status
from rated.errors import ConfigError
from rated.outcome import Outcome, OutcomeKind

__all__ = ["AsyncTrackedCall", "TrackedCall"]

log = logging.getLogger("rated.tracking")
_REPORTED_BY = "_rated_reported_by"  # set on an exception a tracked call counted: that call's tool id
T = TypeVar("T")
# what reports an outcome (``Retriever.feedback`` / ``afeedback``); what it returns is not used
Send = Callable[[str, Outcome, str | None], object]
ASend = Callable[[str, Outcome, str | None], Awaitable[object]]


class _Tracked:
    """What the sync and async forms share: the caller's override and the choice of the outcome."""

    def __init__(self, tool_id: str, query: str | None) -> None:
        self.tool_id = tool_id
        self.query = query
        self.outcome: Outcome | None = None  # what was reported, once the block has ended
        self.report_error: Exception | None = None  # why reporting failed, if it did
        # the tool of a nested tracked call that counted the exception this block ended with (not this one)
        self.failed_inside: str | None = None
        self._chosen: Outcome | None = None
        self._used = False
        self._misused = False
        self._ended = False

    def report(self, outcome: Outcome | OutcomeKind | str | bool, retry_after: float | None = None) -> None:
        """Report ``outcome`` when the block ends, instead of what its end implies (the last call wins;
        an interrupted block still reports nothing). Checked now: a bad name is a ``ConfigError`` here, as
        is a report after the block ended (its outcome is reported already)."""
        self._choose(_outcome, outcome, retry_after)

    def report_status(self, status: int, headers: Mapping[str, str] | None = None) -> None:
        """``report`` the outcome of an HTTP status, for clients that return error responses instead of
        raising them (``outcome_from_status``: a 429's ``Retry-After`` becomes the block's length)."""
        self._choose(outcome_from_status, status, headers)

    def _choose(self, make: Callable[..., Outcome], *args: Any) -> None:
        if self._ended:
            raise ConfigError(
                f"the tracked call of {self.tool_id!r} has ended (reported: "
                f"{'nothing' if self.outcome is None else self.outcome.kind.value}): report inside the block"
            )
        try:
            self._chosen = make(*args)
        except ConfigError:
            self._misused = True  # the caller's mistake, not the tool's: this call reports nothing
            raise

    def _refuse(self, why: str) -> ConfigError:
        """A misuse found while running the tool: this call reports nothing (raise what this returns)."""
        self._misused = True
        return ConfigError(f"tool {self.tool_id!r}: {why}")

    def _begin(self) -> None:
        if self._used:
            raise ConfigError(f"a tracked call of {self.tool_id!r} reports once: track each call anew")
        self._used = True

    def _decide(self, exc: BaseException | None) -> Outcome | None:
        """The caller's choice, else success or the exception's outcome; None when interrupted (Ctrl-C,
        cancelled, exiting), which says nothing about the tool whatever the caller chose before, or after
        a ``report`` the caller got wrong."""
        if self._misused:
            return None
        if exc is None:
            return self._chosen or Outcome(OutcomeKind.SUCCESS)
        self.failed_inside = _reported_by(exc)
        if self.failed_inside is not None:  # counted where it failed (see the module doc)
            return self._chosen
        outcome = outcome_from_exception(exc)
        if outcome is None:
            return None
        _mark_reported(exc, self.tool_id)
        return self._chosen or outcome

    def _failed(self, error: Exception, exc: BaseException | None) -> None:
        self.report_error = error
        log.warning("could not report the outcome of tool %r: %s", self.tool_id, error, exc_info=error)
        if exc is not None:
            exc.add_note(f"rated could not report this call's outcome for tool {self.tool_id!r}: {error!r}")

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.tool_id!r}, outcome={self.outcome})"


class TrackedCall(_Tracked):
    """``with retriever.track(tool_id, query) as call:`` reports one call of the tool when the block ends
    (a failure that a block nested in it reported is not reported again: see the module doc)."""

    def __init__(self, tool_id: str, query: str | None, send: Send) -> None:
        super().__init__(tool_id, query)
        self._send = send

    def run(self, fn: Callable[..., T], arguments: Mapping[str, Any] | None = None) -> T:
        """``fn(**arguments)``. Arguments that do not fit ``fn``'s signature are the caller's error: it is
        reported and the ``TypeError`` raised without running ``fn``."""
        kwargs = {} if arguments is None else arguments
        _check_lazy(self, fn)
        if _is_coroutine_function(fn):
            raise self._refuse(f"{_name(fn)} is a coroutine function: use acall (or atrack and await it)")
        _check_binding(self, fn, kwargs)
        try:
            result = fn(**kwargs)
        except TypeError as exc:
            _caller_error_if_unbound(self, exc)
            raise
        if inspect.iscoroutine(result):  # nothing of it ran: closed, so Python does not warn it never did
            result.close()
            raise self._refuse(f"{_name(fn)} returned a coroutine: use acall (or atrack and await it)")
        return result

    def __enter__(self) -> Self:
        self._begin()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._ended = True
        outcome = self._decide(exc)
        if outcome is None:
            return
        try:
            self._send(self.tool_id, outcome, self.query)
        except Exception as error:
            self._failed(error, exc)
        else:
            self.outcome = outcome


class AsyncTrackedCall(_Tracked):
    """``async with retriever.atrack(tool_id, query) as call:``: ``TrackedCall`` for asyncio. Entering it
    checks the tool id (``start``, off the event loop) before the block runs."""

    def __init__(
        self, tool_id: str, query: str | None, send: ASend, start: Callable[[], Awaitable[str]]
    ) -> None:
        super().__init__(tool_id, query)
        self._send = send
        self._start = start

    async def run(self, fn: Callable[..., T | Awaitable[T]], arguments: Mapping[str, Any] | None = None) -> T:
        """``await fn(**arguments)`` (a plain function's result is returned as it is); arguments that do not
        fit ``fn`` are the caller's error, reported without running ``fn``."""
        kwargs = {} if arguments is None else arguments
        _check_lazy(self, fn)
        _check_binding(self, fn, kwargs)
        try:
            result = fn(**kwargs)
        except TypeError as exc:
            _caller_error_if_unbound(self, exc)
            raise
        if inspect.isawaitable(result):
            return await result
        return result

    async def __aenter__(self) -> Self:
        self._begin()
        self.tool_id = await self._start()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._ended = True
        outcome = self._decide(exc)
        if outcome is None:
            return
        try:
            await self._send(self.tool_id, outcome, self.query)
        except Exception as error:
            self._failed(error, exc)
        else:
            self.outcome = outcome


def _reported_by(exc: BaseException) -> str | None:
    """The tool whose tracked call counted ``exc`` already: ``exc`` itself, an exception it was raised
    ``from`` (explicitly: one raised while handling another is a failure of its own), or, for a group,
    the one every exception in it names (the first such tool); None when none did."""
    seen: set[int] = set()
    at: BaseException | None = exc
    while at is not None and id(at) not in seen:
        seen.add(id(at))
        tool_id = getattr(at, _REPORTED_BY, None)
        if isinstance(tool_id, str):
            return tool_id
        if isinstance(at, BaseExceptionGroup):
            named = [_reported_by(e) for e in at.exceptions]
            if named and all(named):
                return named[0]
        at = at.__cause__
    return None


def _mark_reported(exc: BaseException, tool_id: str) -> None:
    """Note on ``exc`` that ``tool_id``'s tracked call counted it, so that enclosing ones do not."""
    try:
        setattr(exc, _REPORTED_BY, tool_id)
    except Exception:  # an exception class that refuses attributes: enclosing blocks count it too
        pass


def _outcome(value: Outcome | OutcomeKind | str | bool, retry_after: float | None) -> Outcome:
    """As ``Retriever.feedback`` reads its arguments: a ``retry_after`` given replaces an Outcome's own."""
    if isinstance(value, Outcome) and retry_after is not None:
        return Outcome(value.kind, retry_after, value.status)
    return Outcome.of(value, retry_after)


def _check_lazy(call: _Tracked, fn: Callable[..., Any]) -> None:
    """Refuse a generator function: its body runs when iterated, after the call has reported success."""
    if _code_flag(fn, inspect.isgeneratorfunction) or _code_flag(fn, inspect.isasyncgenfunction):
        raise call._refuse(
            f"{_name(fn)} is a generator function: its body runs only when iterated, after the call is "
            "reported; iterate it inside a track() block instead"
        )


def _is_coroutine_function(fn: Callable[..., Any]) -> bool:
    return _code_flag(fn, inspect.iscoroutinefunction)


def _code_flag(fn: Callable[..., Any], test: Callable[[Any], bool]) -> bool:
    """``test`` on ``fn`` (functions, methods, partials), or on a callable object's ``__call__``."""
    try:
        return test(fn) or (not inspect.isroutine(fn) and test(type(fn).__call__))
    except Exception:  # an object whose attributes fail when read: the call itself will tell
        return False


def _name(fn: Callable[..., Any]) -> str:
    return f"{getattr(fn, '__qualname__', None) or type(fn).__name__}()"


def _check_binding(call: _Tracked, fn: Callable[..., Any], arguments: object) -> None:
    """Raise (and report a caller error) when ``arguments`` cannot bind to ``fn``: checked on the signature,
    which follows ``functools.wraps``, so a decorated tool is not entered either."""
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):  # no signature (some builtins, not a callable): the call will tell
        return
    try:
        signature.bind(**arguments)  # type: ignore[arg-type]
    except TypeError as exc:
        call.report(OutcomeKind.CALLER_ERROR)
        raise TypeError(f"arguments for tool {call.tool_id!r} do not fit {_name(fn)}: {exc}") from None


def _caller_error_if_unbound(call: _Tracked, exc: TypeError) -> None:
    """A ``TypeError`` raised by the call expression itself (``fn`` never ran) is the caller's."""
    tb = exc.__traceback__
    if tb is not None and tb.tb_next is None:
        call.report(OutcomeKind.CALLER_ERROR)
