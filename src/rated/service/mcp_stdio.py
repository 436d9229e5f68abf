"""``rated mcp`` on stdio: the SDK's transport, plus the JSON-RPC error reply to a line it cannot read.

The SDK's stdio transport parses each line of stdin and puts what fails to parse on its read stream as an
exception, which the server only logs: the client that wrote the line waits for an answer forever.
JSON-RPC 2.0 says to answer -32700 (not JSON) or -32600 (JSON, but not a JSON-RPC message). This module
wraps the transport's read stream (the ``ReadStream`` protocol the server reads) so that each such item
is answered on the transport's own write stream and never reaches the server; everything else, including
the SDK's claim of stdin/stdout, stays the SDK's.
"""

from __future__ import annotations

import json
import logging
from types import TracebackType
from typing import TYPE_CHECKING, Any

import anyio
from pydantic import ValidationError

if TYPE_CHECKING:
    import contextvars

    from mcp.server.mcpserver import MCPServer
    from mcp.shared._stream_protocols import ReadStream, WriteStream
    from mcp.shared.message import SessionMessage
    from mcp_types import JSONRPCError

__all__ = ["AnsweringReadStream", "error_reply", "run_stdio"]

log = logging.getLogger(__name__)

_STRICTER = (
    "the line is JSON, but this server's parser refuses lone surrogate escapes (such as \\ud800), "
    "very deep nesting and numbers out of range"
)


def run_stdio(server: MCPServer) -> None:
    """``server.run("stdio")``, with every unreadable line answered (blocks until stdin closes)."""
    anyio.run(_serve_stdio, server)


async def _serve_stdio(server: MCPServer) -> None:
    from mcp.server.stdio import stdio_server

    # what MCPServer.run_stdio_async does, with the read stream wrapped; the low-level server is the
    # one attribute of the SDK's that this needs and that has no public name
    lowlevel = server._lowlevel_server
    async with stdio_server() as (read_stream, write_stream):
        await lowlevel.run(
            AnsweringReadStream(read_stream, write_stream),
            write_stream,
            lowlevel.create_initialization_options(),
        )


class AnsweringReadStream:
    """A transport's read stream without its parse failures: each is answered with a JSON-RPC error."""

    def __init__(
        self, inner: ReadStream[SessionMessage | Exception], write: WriteStream[SessionMessage]
    ) -> None:
        self._inner = inner
        self._write = write

    @property
    def last_context(self) -> contextvars.Context | None:
        """The sender's context of the last item, which the SDK's server reads when the stream has it."""
        return getattr(self._inner, "last_context", None)

    async def receive(self) -> SessionMessage | Exception:
        from mcp.shared.message import SessionMessage

        while True:
            item = await self._inner.receive()
            if not isinstance(item, Exception):
                return item
            reply = error_reply(item)
            if reply is None:
                continue
            log.warning("answered an unreadable message: %s", reply.error.message)
            try:
                await self._write.send(SessionMessage(reply))
            except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                return item  # nobody to answer: the server sees it as before, and the stream ends next

    async def aclose(self) -> None:
        await self._inner.aclose()

    def __aiter__(self) -> AnsweringReadStream:
        return self

    async def __anext__(self) -> SessionMessage | Exception:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def __aenter__(self) -> AnsweringReadStream:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()


def error_reply(exc: Exception) -> JSONRPCError | None:
    """The JSON-RPC error answering a line that failed to parse as ``exc`` (None for a blank line).

    The id is the request's when the line is a request object with a usable id, so that the client's
    pending call ends; otherwise null, as JSON-RPC 2.0 says. The line itself is never echoed.
    """
    from mcp_types import INVALID_REQUEST, PARSE_ERROR, ErrorData, JSONRPCError

    errors = exc.errors() if isinstance(exc, ValidationError) else []
    bad_json = next((e for e in errors if e["type"] == "json_invalid"), None)
    if bad_json is not None:
        line = bad_json.get("input")
        if isinstance(line, str) and not line.strip():
            return None  # an empty line: no message at all, so nobody waits for an answer
        detail = bad_json.get("ctx", {}).get("error", "not JSON")
        rid = _id_of_line(line)
        if rid is not None:  # JSON, but not to the SDK's parser, whose message then reads like a typo
            detail += f"; {_STRICTER}"
        return JSONRPCError(
            jsonrpc="2.0", id=rid, error=ErrorData(code=PARSE_ERROR, message=f"Parse error: {detail}")
        )
    message = "Invalid Request: not a JSON-RPC 2.0 request, notification or response"
    if not errors:  # not a validation failure at all (no SDK version sends one): say what it was
        message = f"Invalid Request: {type(exc).__name__}"
    return JSONRPCError(
        jsonrpc="2.0",
        id=_request_id(errors),
        error=ErrorData(code=INVALID_REQUEST, message=message),
    )


def _request_id(errors: list[Any]) -> int | str | None:
    """The id of the object that failed validation, when it is shaped like a request (has a method).

    Pydantic names the whole object as the input of a "missing field" error at its top level; a response
    has no method, and answering its id would resolve one of the client's own calls with a wrong reply.
    """
    for error in errors:
        obj = error.get("input")
        if error["type"] == "missing" and len(error["loc"]) == 2 and isinstance(obj, dict):
            return _usable_id(obj)
    return None


def _id_of_line(line: object) -> int | str | None:
    """The id of a request on a line the SDK's parser refused but that is JSON to the standard library:
    a lone surrogate escape (``"\\ud800"``), nesting deeper than the SDK's limit, or a number beyond its
    range. Its sender waits for an answer under that id; one under a null id would never end the call."""
    if not isinstance(line, str):
        return None
    try:  # a number over 4,300 digits is no id, and int() refuses it: read it as None
        obj = json.loads(line, parse_int=lambda digits: int(digits) if len(digits) < 4300 else None)
    except (ValueError, RecursionError):
        return None
    return _usable_id(obj)


def _usable_id(obj: object) -> int | str | None:
    """The id of ``obj`` when it is shaped like a request (has a method) with an int or string id."""
    if not isinstance(obj, dict):
        return None
    rid = obj.get("id")
    if "method" not in obj or not isinstance(rid, (int, str)) or isinstance(rid, bool):
        return None
    if isinstance(rid, str) and not _utf8(rid):
        return None  # a lone surrogate in the id itself: no reply carrying it could be written
    return rid


def _utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True
