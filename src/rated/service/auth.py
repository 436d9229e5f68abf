"""Optional API key: with ``RATED_API_KEY`` set, every route but ``/health`` and the docs needs it.

Feedback steers every agent's ranking, so on a shared network an open ``POST /feedback`` lets anyone demote
any tool. The key travels as ``Authorization: Bearer KEY`` (agents, Prometheus' ``authorization``
setting) or as the password of HTTP Basic auth with any user name, so that a browser opening
``/dashboard`` can ask for it. Keys are compared in constant time and never echoed. Without a key the
service is open, as it should be on its default loopback address.
"""

from __future__ import annotations

import secrets
from typing import Annotated

from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBasic, HTTPBasicCredentials, HTTPBearer

from rated.errors import RatedError
from rated.service.settings import Settings

__all__ = ["AUTH_CHALLENGE", "Unauthorized", "require_api_key"]

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
    settings: Settings = request.app.state.settings
    if settings.api_key is None:
        return
    given = bearer.credentials if bearer is not None else basic.password if basic is not None else None
    if given is None:
        raise Unauthorized("this service needs its API key: Authorization: Bearer KEY")
    expected = settings.api_key.get_secret_value().encode()
    if not secrets.compare_digest(given.encode("utf-8", "surrogateescape"), expected):
        raise Unauthorized("wrong API key")
