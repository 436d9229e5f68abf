"""``RatedClient``: the ``Retriever`` API over rated's HTTP service, for agents in other processes.

>>> with RatedClient("http://127.0.0.1:8000") as rated:  # doctest: +SKIP
...     hits = rated.retrieve("send an email", k=5)        # list[Hit], as Retriever.retrieve
...     with rated.track(hits[0].id, query="send an email"):
...         send_email(**args)                             # reported once, classified as Retriever.track
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from types import TracebackType
from typing import Any, Self, TypeVar, overload

import httpx

from rated.catalog.export import ExportFormat, ToolDefinitions
from rated.client import wire
from rated.client.endpoint import DEFAULT_TIMEOUT, Endpoint
from rated.client.errors import unreachable
from rated.client.wire import Call, FeedbackResult, Retrieved, RetrievedMany, ServiceHealth, Where
from rated.hits import Hit, ToolHealth
from rated.outcome import Outcome, OutcomeKind
from rated.tracking import TrackedCall

__all__ = ["RatedClient"]

T = TypeVar("T")


class RatedClient:
    """A rated service at ``base_url`` (where ``rated serve`` listens), called as a ``Retriever`` is.

    ``api_key``: the service's ``RATED_API_KEY`` (sent as ``Authorization: Bearer``; None reads
    ``$RATED_API_KEY``). ``timeout``: seconds per request. ``transport``: an ``httpx`` transport (tests pass
    one that calls the app in-process). Errors are rated's classes (``UnknownToolError``, ``QueryError``,
    ``ConfigError``, ``StoreBusyError``...), plus ``ServiceError`` and its subclasses for what only a
    remote service can do: refuse the key, fail, or not answer. Thread-safe, as ``httpx.Client`` is.
    """

    def __init__(
        self,
        base_url: str,
        *,
        api_key: str | None = None,
        timeout: float | httpx.Timeout | None = DEFAULT_TIMEOUT,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self._endpoint = Endpoint(base_url, api_key, timeout)
        self._http = httpx.Client(transport=transport, **self._endpoint.options)

    @overload
    def retrieve(
        self, query: str, k: int | None = None, *, format: None = None, where: Where = None
    ) -> list[Hit]: ...
    @overload
    def retrieve(
        self, query: str, k: int | None = None, *, format: ExportFormat, where: Where = None
    ) -> ToolDefinitions: ...
    def retrieve(
        self, query: str, k: int | None = None, *, format: ExportFormat | None = None, where: Where = None
    ) -> Retrieved:
        """The best ``k`` tools for ``query`` as ``Hit`` objects (``k`` by default: the service's
        ``default_k``); with ``format`` (``"openai"``, ``"openai_responses"``, ``"anthropic"``, ``"mcp"``)
        their ``ToolDefinitions`` for that API, as ``tool_definitions(hits, format)`` gives them
        (``.tool_id(name)`` maps a called name back).
        ``where``: rank only the tools a filter allows, as ``Retriever.retrieve`` (a ``ToolFilter`` or a
        mapping of its keys; an unknown key is a ``QueryError`` here, an unknown id in ``tools`` the
        service's 404, raised as ``UnknownToolError`` with the key in ``.where``; one in ``exclude``
        excludes nothing)."""
        return self._send(wire.retrieve(query, k, format, where))

    @overload
    def retrieve_many(
        self, queries: Iterable[str], k: int | None = None, *, format: None = None, where: Where = None
    ) -> list[list[Hit]]: ...
    @overload
    def retrieve_many(
        self, queries: Iterable[str], k: int | None = None, *, format: ExportFormat, where: Where = None
    ) -> list[ToolDefinitions]: ...
    def retrieve_many(
        self,
        queries: Iterable[str],
        k: int | None = None,
        *,
        format: ExportFormat | None = None,
        where: Where = None,
    ) -> RetrievedMany:
        """``retrieve`` for a batch of queries in one request (at most the service's ``max_batch``), each
        under the same ``where``."""
        return self._send(wire.retrieve_many(queries, k, format, where))

    def feedback(
        self,
        tool_id: str,
        outcome: Outcome | OutcomeKind | str | bool | None = None,
        *,
        status: int | None = None,
        headers: Mapping[str, str] | None = None,
        query: str | None = None,
        retry_after: float | None = None,
    ) -> FeedbackResult:
        """Report how a call of ``tool_id`` went: ``outcome`` (as ``Retriever.feedback`` takes it), or the
        HTTP ``status`` (and ``headers``) the tool answered with, classified by the service. Recorded
        before this returns; the result says what was recorded. Not retried: a request that got no answer
        raises ``ServiceUnreachableError`` saying whether it may have been recorded."""
        call = wire.feedback(
            tool_id, outcome, status=status, headers=headers, query=query, retry_after=retry_after
        )
        return self._send(call)

    def tools(self, *, unhealthy: bool = False) -> list[ToolHealth]:
        """Every indexed tool (only the unhealthy ones with ``unhealthy``) with its health and counts; each
        ``.tool`` holds the id, name and source the service lists."""
        return self._send(wire.tools(unhealthy))

    def tool_health(self, tool_id: str) -> ToolHealth:
        """One tool's health, as ``Retriever.health(tool_id)``; ``UnknownToolError`` if it is not indexed."""
        return self._send(wire.tool_health(tool_id))

    def health(self) -> ServiceHealth:
        """The service's ``GET /health`` (answered without the API key)."""
        return self._send(wire.health())

    # ---- tracked calls: rated.tracking, with this client's feedback as the reporter -------------------
    def track(self, tool_id: str, query: str | None = None) -> TrackedCall:
        """``with client.track(tool_id, query=...) as call:`` reports the call made in the block once, as
        ``Retriever.track`` does; the id is checked with the service before the block runs."""
        return TrackedCall(self._check_call(tool_id, query), query, self._report)

    def call(
        self,
        tool_id: str,
        fn: Callable[..., T],
        arguments: Mapping[str, Any] | None = None,
        *,
        query: str | None = None,
    ) -> T:
        """``fn(**arguments)``, tracked as ``track`` does (``Retriever.call``)."""
        with self.track(tool_id, query) as tracked:
            return tracked.run(fn, arguments)

    def _check_call(self, tool_id: str, query: str | None) -> str:
        """The catalog's spelling of ``tool_id`` (``UnknownToolError`` if none), the query checked too."""
        if query is not None:
            wire.check_query(query)
        return self.tool_health(tool_id).tool.id

    def _report(self, tool_id: str, outcome: Outcome, query: str | None) -> None:
        self.feedback(tool_id, outcome, query=query)

    # ---- the connection --------------------------------------------------------------------------------
    def _send(self, call: Call[T]) -> T:
        url, request = self._endpoint.url(call.path), call.request()
        try:
            response = self._http.request(**request)
        except httpx.TransportError as exc:
            raise unreachable(exc, url) from exc
        return call.answer(response, url)

    @property
    def base_url(self) -> str:
        return self._endpoint.shown

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"RatedClient({self._endpoint.shown!r})"
