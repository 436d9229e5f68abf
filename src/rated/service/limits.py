"""``BodyLimit``: refuse request bodies over a size limit before they are read (413, ``ErrorOut`` shape).

Route-level checks (query length, batch size) run only after the whole body is in memory and parsed; a
100 MB body would be read in full first. A declared ``Content-Length`` over the limit is refused without
reading a byte; a body without one (chunked) is read only up to the limit, then refused.
"""

from __future__ import annotations

import json
from collections.abc import Callable

from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = ["BodyLimit"]


class BodyLimit:
    """Pure ASGI middleware (no ``BaseHTTPMiddleware``: it would buffer and add a task per request)."""

    def __init__(self, app: ASGIApp, max_bytes: int, on_reject: Callable[[], None] | None = None) -> None:
        self.app = app
        self.max_bytes = max_bytes
        self.on_reject = on_reject

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        length = _content_length(scope)
        if length is not None:
            if length > self.max_bytes:
                await self._reject(send, f"the body is {length:,} bytes")
                return
            await self.app(scope, receive, send)  # the server holds the body to its declared length
            return
        # no declared length: read it here, up to the limit, and replay it to the app
        chunks: list[Message] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":  # the client went away: let the app see it
                chunks.append(message)
                break
            size += len(message.get("body", b""))
            if size > self.max_bytes:
                await self._reject(send, f"the body is over {self.max_bytes:,} bytes")
                return
            chunks.append(message)
            if not message.get("more_body", False):
                break

        async def replay() -> Message:
            return chunks.pop(0) if chunks else await receive()

        await self.app(scope, replay, send)

    async def _reject(self, send: Send, what: str) -> None:
        if self.on_reject is not None:
            self.on_reject()
        body = json.dumps(
            {
                "error": "RequestTooLarge",
                "detail": f"{what}; the limit is {self.max_bytes:,} (max_body_bytes)",
            }
        ).encode()
        await send(
            {
                "type": "http.response.start",
                "status": 413,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(body)).encode()),
                    (b"connection", b"close"),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})


def _content_length(scope: Scope) -> int | None:
    """The declared body length; None when absent or malformed (then the body is counted as it comes)."""
    for key, value in scope["headers"]:
        if key == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None
    return None
