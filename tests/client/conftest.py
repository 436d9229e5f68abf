"""The real service app served in-process to the clients (no socket): a sync httpx transport that runs
the ASGI app on an anyio portal, and the app's lifespan entered as ``rated serve`` enters it."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import AbstractAsyncContextManager, ExitStack, asynccontextmanager

import httpx
import pytest
from anyio.from_thread import BlockingPortal, start_blocking_portal
from fastapi import FastAPI

from rated import Tool
from rated.client import AsyncRatedClient, RatedClient
from rated.encode.testing import HashEncoder
from rated.retriever import Retriever
from rated.service import Settings, create_app

BASE = "http://rated.test"
QUERY = "send an email message"


def catalog() -> list[Tool]:
    """Only the fields a hit carries over the wire, so a client's hit equals the retriever's."""
    return [
        Tool(
            id="mail.a",
            name="send_email",
            description="Send an email message",
            parameters={"type": "object", "properties": {"to": {"type": "string"}}},
            provider="mailer",
            endpoint="https://mail.example/send",
        ),
        Tool(id="mail.b", name="send_email", description="Send an email message to a person"),
        Tool(id="weather", name="weather_forecast", description="Weather forecast for a city"),
        Tool(id="ns/with slash?#%", name="calendar", description="Create a calendar event"),
        Tool(id="..", name="dots", description="Count the dots in a text"),
    ]


class PortalTransport(httpx.BaseTransport):
    """``httpx.ASGITransport`` for a sync client: each request runs on ``portal``'s event loop."""

    def __init__(self, app: FastAPI, portal: BlockingPortal) -> None:
        self._asgi = httpx.ASGITransport(app)
        self._portal = portal

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        async def run() -> httpx.Response:
            response = await self._asgi.handle_async_request(request)
            body = await response.aread()
            return httpx.Response(response.status_code, headers=response.headers, content=body)

        return self._portal.call(run)


@pytest.fixture
def retriever() -> Iterator[Retriever]:
    r = Retriever.from_catalog(catalog(), encoder=HashEncoder(64), clock=lambda: 1000.0)
    yield r
    r.close()


@pytest.fixture
def app(retriever: Retriever) -> FastAPI:
    return create_app(Settings(default_k=3, max_k=5, max_batch=3), retriever=retriever)


@pytest.fixture
def connect(app: FastAPI) -> Iterator[Callable[..., RatedClient]]:
    """``connect(app=None, base=BASE, wrap=None, **client_options)``: a ``RatedClient`` of ``app`` (its
    lifespan entered once), closed after the test; ``wrap`` wraps the transport (to record or fail)."""
    with start_blocking_portal() as portal, ExitStack() as stack:
        started: set[int] = set()

        def make(
            served: FastAPI | None = None,
            *,
            base: str = BASE,
            wrap: Callable[[httpx.BaseTransport], httpx.BaseTransport] | None = None,
            **options: object,
        ) -> RatedClient:
            served = served or app
            if id(served) not in started:
                started.add(id(served))
                stack.enter_context(portal.wrap_async_context_manager(served.router.lifespan_context(served)))
            transport = PortalTransport(served, portal)
            transport = wrap(transport) if wrap else transport
            return stack.enter_context(RatedClient(base, transport=transport, **options))  # type: ignore[arg-type]

        yield make


class Recording(httpx.BaseTransport):
    """A ``wrap`` for ``connect``: passes requests on, keeping ``(method, path)`` of each; ``fail`` maps a
    path to the transport error raised instead of sending the request there."""

    def __init__(self, fail: dict[str, httpx.TransportError] | None = None) -> None:
        self.fail = fail or {}
        self.sent: list[tuple[str, str]] = []
        self.inner: httpx.BaseTransport | None = None

    def __call__(self, inner: httpx.BaseTransport) -> Recording:
        self.inner = inner
        return self

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        assert self.inner is not None
        self.sent.append((request.method, request.url.path))
        if request.url.path in self.fail:
            raise self.fail[request.url.path]
        return self.inner.handle_request(request)


@pytest.fixture
def recording() -> type[Recording]:
    return Recording


@pytest.fixture
def client(connect: Callable[..., RatedClient]) -> RatedClient:
    return connect()


@pytest.fixture
def aconnect(app: FastAPI) -> Callable[..., AbstractAsyncContextManager[AsyncRatedClient]]:
    """``async with aconnect(**client_options) as c``: an ``AsyncRatedClient`` of the app through
    ``httpx.ASGITransport``, inside the app's lifespan (run it with ``asyncio.run``)."""

    @asynccontextmanager
    async def make(**options: object) -> AsyncIterator[AsyncRatedClient]:
        async with app.router.lifespan_context(app):
            transport = httpx.ASGITransport(app)
            async with AsyncRatedClient(BASE, transport=transport, **options) as c:  # type: ignore[arg-type]
                yield c

    return make
