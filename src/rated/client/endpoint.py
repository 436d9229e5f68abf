"""Where the service is and how to talk to it: the base URL (checked), the API key header, the timeout.
Shared by the sync and async clients, which only differ in how they send."""

from __future__ import annotations

import os
from typing import Any

import httpx

from rated.errors import ConfigError
from rated.shown import shown

__all__ = ["API_KEY_ENV", "DEFAULT_TIMEOUT", "Endpoint"]

API_KEY_ENV = "RATED_API_KEY"  # the service's own setting: an agent beside it finds the key there too
# seconds: retrieval takes milliseconds, but a feedback may wait for a busy store (the service's
# busy_timeout, 5 s by default) and the first request after a rebuild reopens the index
DEFAULT_TIMEOUT = 30.0


class Endpoint:
    """``options`` for ``httpx.Client`` / ``AsyncClient``; ``url(path)`` for messages (no credentials)."""

    def __init__(self, base_url: str, api_key: str | None, timeout: float | httpx.Timeout | None) -> None:
        try:
            url = httpx.URL(base_url)
        except (TypeError, httpx.InvalidURL) as exc:
            raise ConfigError(f"base_url {shown(base_url)} is not a URL: {exc}") from None
        if url.scheme not in ("http", "https") or not url.host:
            raise ConfigError(
                "base_url must look like http://host:8000 (where `rated serve` listens), "
                f"got {shown(base_url)}"
            )
        # host[:port] without the userinfo a URL may carry: messages never show credentials
        self.shown = f"{url.scheme}://{url.netloc.decode('ascii')}{url.path.rstrip('/')}"
        key = (os.environ.get(API_KEY_ENV) or None) if api_key is None else api_key
        headers = {"Accept": "application/json", "User-Agent": "rated-client"}
        if key is not None:
            headers["Authorization"] = f"Bearer {_checked_key(key)}"
        self.options: dict[str, Any] = {"base_url": url, "headers": headers, "timeout": timeout}

    def url(self, path: str) -> str:
        return self.shown + path


def _checked_key(key: object) -> str:
    """The key as a header value can carry it (never quoted back: it is a secret)."""
    if not isinstance(key, str) or not key.strip():
        raise ConfigError("api_key must be a non-empty string")
    if not (key.isascii() and key.isprintable()) or key != key.strip():
        raise ConfigError(
            "api_key must be printable ASCII without surrounding spaces (an HTTP header carries it)"
        )
    return key
