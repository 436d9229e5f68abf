"""Optional API key: with ``RATED_API_KEY`` set, every route but ``/health`` and the docs needs it.

Feedback steers every agent's ranking, so on a shared network an open ``POST /feedback`` lets anyone demote
any tool. The key travels as ``Authorization: Bearer KEY`` (agents, Prometheus' ``authorization``
setting) or as the password of HTTP Basic auth with any user name, so that a browser opening
``/dashboard`` can ask for it. Keys are compared in constant time and never echoed. Without a key the
service is open, as it should be on its default loopback address.

The key is checked twice on a keyed route, by the same code: by ``KeyFirst`` before anything else looks at
the request (FastAPI parses a JSON body before it runs any dependency, so a malformed body was answered
422, with the schema's field names, to a caller without the key), and by ``require_api_key``, the
route dependency that also declares the schemes in the OpenAPI schema.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Collection
from typing import Annotated

from fastapi import Depends, HTTPException, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBasic, HTTPBasicCredentials, HTTPBearer
from starlette.requests import HTTPConnection
from starlette.responses import Response
from starlette.types import ASGIApp, Receive, Scope, Send

from rated.errors import RatedError
from rated.service.settings import Settings

__all__ = ["AUTH_CHALLENGE", "KeyFirst", "Unauthorized", "check_api_key", "require_api_key"]

AUTH_CHALLENGE = 'Bearer, Basic realm="rated"'  # the WWW-Authenticate header of a 401

_bearer = HTTPBearer(auto_error=False, description="RATED_API_KEY as a bearer token")
_basic = HTTPBasic(auto_error=False, realm="rated", description="any user name, RATED_API_KEY as password")


class Unauthorized(RatedError):
    """The service has an API key and the request did not give it (401)."""


def require_api_key(
    request: Request,
    bearer: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
    basic: Annotated[HTTPBasicCredentials | None, Depends(_basic)],
) -> None:
    _verify(request.app.state.settings, _given(bearer, basic))


async def check_api_key(conn: HTTPConnection) -> None:
    """``require_api_key`` from the headers alone (the body is never touched): raises ``Unauthorized``."""
    settings: Settings = conn.app.state.settings
    if settings.api_key is None:
        return
    bearer = await _bearer(conn)
    try:
        basic = await _basic(conn)
    except HTTPException:  # "Basic" with a value that is not base64 of user:password
        raise Unauthorized("malformed Basic credentials: expected base64 of user:KEY") from None
    _verify(settings, _given(bearer, basic))


class KeyFirst:
    """Pure ASGI middleware: a request to a path under ``prefixes`` without the key is answered 401 here,
    before routing, body limits or body parsing (so also before a 405, a 413 or a 422)."""

    def __init__(
        self, app: ASGIApp, prefixes: Collection[str], respond: Callable[[Request, RatedError], Response]
    ) -> None:
        if any(not p.startswith("/") or p == "/" or p.endswith("/") for p in prefixes):
            raise ValueError(f"keyed path prefixes must look like '/name', got {sorted(prefixes)}")
        self.app = app
        self.prefixes = tuple(prefixes)
        self.respond = respond

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and self._keyed(_route_path(scope)):
            request = Request(scope)  # no receive: the body stays unread
            try:
                await check_api_key(request)
            except Unauthorized as exc:
                await self.respond(request, exc)(scope, receive, send)
                return
        await self.app(scope, receive, send)

    def _keyed(self, path: str) -> bool:
        return any(path == p or path.startswith(p + "/") for p in self.prefixes)


def _route_path(scope: Scope) -> str:
    """The path the routes see: without the ``root_path`` the app is mounted (or proxied) under, by
    Starlette's rule: a root of ``/re`` is not stripped from ``/retrieve``, which is routed as it is."""
    path, root = scope["path"], scope.get("root_path", "")
    if root and path.startswith(root) and path[len(root) : len(root) + 1] in ("", "/"):
        return path[len(root) :]
    return path


def _given(bearer: HTTPAuthorizationCredentials | None, basic: HTTPBasicCredentials | None) -> str | None:
    return bearer.credentials if bearer is not None else basic.password if basic is not None else None


def _verify(settings: Settings, given: str | None) -> None:
    if settings.api_key is None:
        return
    if given is None:
        raise Unauthorized("this service needs its API key: Authorization: Bearer KEY")
    expected = settings.api_key.get_secret_value().encode()
    if not secrets.compare_digest(given.encode("utf-8", "surrogateescape"), expected):
        raise Unauthorized("wrong API key")
