"""``AsyncRatedClient``: ``RatedClient`` for asyncio; the same calls, awaited, none blocking the loop.

The ``a``-prefixed names of ``Retriever`` (``aretrieve``, ``aretrieve_many``, ``afeedback``, ``atrack``,
``acall``) are the same methods, so agent code written for an in-process retriever on asyncio runs against
the service unchanged.

>>> async with AsyncRatedClient("http://127.0.0.1:8000") as rated:  # doctest: +SKIP
...     hits = await rated.retrieve("send an email", k=5)
...     async with rated.track(hits[0].id, query="send an email"):
...         await send_email(**args)
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from functools import partial
from types import TracebackType
from typing import Any, NoReturn, Self, TypeVar, overload

import httpx

from rated.catalog.export import ExportFormat, ToolDefinitions
from rated.client import wire
from rated.client.endpoint import DEFAULT_TIMEOUT, Endpoint
from rated.client.errors import unreachable
from rated.client.wire import Call, FeedbackResult, Retrieved, RetrievedMany, ServiceHealth, Where
from rated.hits import Hit, ToolHealth
from rated.outcome import Outcome, OutcomeKind
from rated.tracking import AsyncTrackedCall

__all__ = ["AsyncRatedClient"]

T = TypeVar("T")


class AsyncRatedClient:
    """``RatedClient`` on ``httpx.AsyncClient``: every call is a coroutine, ``track`` an ``async with``
    block. ``transport``: an ``httpx`` async transport (``httpx.ASGITransport(app)`` in tests)."""

    def __init__(
        self,
        base_url: str,
        *,
        api_key: str | None = None,
        timeout: float | httpx.Timeout | None = DEFAULT_TIMEOUT,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self._endpoint = Endpoint(base_url, api_key, timeout)
        self._http = httpx.AsyncClient(transport=transport, **self._endpoint.options)

    @overload
    async def retrieve(
        self, query: str, k: int | None = None, *, format: None = None, where: Where = None
    ) -> list[Hit]: ...
    @overload
    async def retrieve(
        self, query: str, k: int | None = None, *, format: ExportFormat, where: Where = None
    ) -> ToolDefinitions: ...
    async def retrieve(
        self, query: str, k: int | None = None, *, format: ExportFormat | None = None, where: Where = None
    ) -> Retrieved:
        """``RatedClient.retrieve``: ``Hit`` objects, or ``ToolDefinitions`` with ``format``."""
        return await self._send(wire.retrieve(query, k, format, where))

    @overload
    async def retrieve_many(
        self, queries: Iterable[str], k: int | None = None, *, format: None = None, where: Where = None
    ) -> list[list[Hit]]: ...
    @overload
    async def retrieve_many(
        self, queries: Iterable[str], k: int | None = None, *, format: ExportFormat, where: Where = None
    ) -> list[ToolDefinitions]: ...
    async def retrieve_many(
        self,
        queries: Iterable[str],
        k: int | None = None,
        *,
        format: ExportFormat | None = None,
        where: Where = None,
    ) -> RetrievedMany:
        return await self._send(wire.retrieve_many(queries, k, format, where))

    async def feedback(
        self,
        tool_id: str,
        outcome: Outcome | OutcomeKind | str | bool | None = None,
        *,
        status: int | None = None,
        headers: Mapping[str, str] | None = None,
        query: str | None = None,
        retry_after: float | None = None,
    ) -> FeedbackResult:
        """``RatedClient.feedback``: an outcome, or the tool's HTTP status classified by the service."""
        call = wire.feedback(
            tool_id, outcome, status=status, headers=headers, query=query, retry_after=retry_after
        )
        return await self._send(call)

    async def tools(self, *, unhealthy: bool = False) -> list[ToolHealth]:
        return await self._send(wire.tools(unhealthy))

    async def tool_health(self, tool_id: str) -> ToolHealth:
        return await self._send(wire.tool_health(tool_id))

    async def health(self) -> ServiceHealth:
        return await self._send(wire.health())

    # ---- tracked calls: rated.tracking, with this client's feedback as the reporter -------------------
    def track(self, tool_id: str, query: str | None = None) -> AsyncTrackedCall:
        """``async with client.track(tool_id, query=...) as call:`` as ``Retriever.atrack``: entering asks
        the service for the id before the block runs; the outcome is reported when it ends."""
        return AsyncTrackedCall(tool_id, query, self._report, partial(self._check_call, tool_id, query))

    async def call(
        self,
        tool_id: str,
        fn: Callable[..., Any],
        arguments: Mapping[str, Any] | None = None,
        *,
        query: str | None = None,
    ) -> Any:
        """``await fn(**arguments)`` (a plain function's result as it is), tracked (``Retriever.acall``)."""
        async with self.track(tool_id, query) as tracked:
            return await tracked.run(fn, arguments)

    aretrieve = retrieve
    aretrieve_many = retrieve_many
    afeedback = feedback
    atrack = track
    acall = call

    async def _check_call(self, tool_id: str, query: str | None) -> str:
        if query is not None:
            wire.check_query(query)
        return (await self.tool_health(tool_id)).tool.id

    async def _report(self, tool_id: str, outcome: Outcome, query: str | None) -> None:
        await self.feedback(tool_id, outcome, query=query)

    # ---- the connection --------------------------------------------------------------------------------
    async def _send(self, call: Call[T]) -> T:
        url, request = self._endpoint.url(call.path), call.request()
        try:
            response = await self._http.request(**request)
        except httpx.TransportError as exc:
            raise unreachable(exc, url) from exc
        return call.answer(response, url)

    @property
    def base_url(self) -> str:
        return self._endpoint.shown

    async def aclose(self) -> None:
        """Close the connections (``async with`` does it on leaving the block)."""
        await self._http.aclose()

    @property
    def close(self) -> NoReturn:
        """None: ``await client.aclose()``, as ``httpx.AsyncClient``. A ``close`` coroutine, called as
        ``RatedClient.close()`` and ``Retriever.close()`` are (without ``await``), closed nothing and said
        nothing; reading ``close`` raises an ``AttributeError`` naming ``aclose`` instead (``hasattr`` is
        False)."""
        raise AttributeError(
            "AsyncRatedClient has no close(): use 'await client.aclose()' (as httpx.AsyncClient) "
            "or 'async with AsyncRatedClient(...) as client'"
        )

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    def __repr__(self) -> str:
        return f"AsyncRatedClient({self._endpoint.shown!r})"
