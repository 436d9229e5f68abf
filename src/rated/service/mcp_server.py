"""An MCP server over a ``Retriever``: agents call ``find_tools`` before acting, ``report_outcome`` after.

Transport is stdio (``rated mcp --db PATH``). The two tools return the same wire models as the HTTP
service. A rated error (empty query, unknown tool id, busy store) comes back as a tool error with its
one-line message, which the model can read and act on. Any other exception (a bug) is logged with its
traceback and also comes back as a tool error naming it, not the SDK's bare "Error executing tool".
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Annotated

from pydantic import Strict

from rated.errors import ConfigError, RatedError
from rated.retriever import Retriever
from rated.service.actions import checked_k, record_feedback
from rated.service.schemas import FeedbackOut, RetrieveOut
from rated.service.settings import Settings

if TYPE_CHECKING:
    from mcp.server.mcpserver import MCPServer

__all__ = ["build_mcp_server"]

log = logging.getLogger(__name__)

INSTRUCTIONS = (
    "Use find_tools to pick a tool for a task: it ranks the catalog by relevance and by how reliably each "
    "tool has been working. After calling a tool, report how it went with report_outcome (success, "
    "tool_error, timeout, rate_limited, auth_error, or caller_error when your own arguments were wrong), "
    "so that failing tools are avoided until they recover."
)


def build_mcp_server(retriever: Retriever, settings: Settings | None = None) -> MCPServer:
    """An ``MCPServer`` exposing ``find_tools`` and ``report_outcome`` over ``retriever``."""
    try:
        from mcp.server.mcpserver import MCPServer
        from mcp.server.mcpserver.exceptions import ToolError
    except ImportError:
        raise ConfigError("the MCP server needs the mcp SDK: pip install 'rated[service]'") from None
    from rated import __version__

    settings = settings or Settings()
    server = MCPServer(name="rated", instructions=INSTRUCTIONS, version=__version__)

    @server.tool()
    def find_tools(query: str, k: Annotated[int, Strict()] = settings.default_k) -> RetrieveOut:
        """Find the best tools for a task described in natural language, most suitable first.

        Each hit has the tool's id, description and parameters, a score, and whether it currently looks
        healthy. ``degraded`` is true when no candidate looked healthy (the list is ranked anyway).
        """
        with _as_tool_error("find_tools", ToolError):
            k = checked_k(k, settings)
            return RetrieveOut.of(query, k, retriever.retrieve(query, k=k))

    @server.tool()
    def report_outcome(
        tool_id: str,
        outcome: str,
        query: str | None = None,
        retry_after: Annotated[float, Strict()] | None = None,
    ) -> FeedbackOut:
        """Report how a call of ``tool_id`` went, so that failing tools are demoted until they recover.

        ``outcome``: success, tool_error, timeout, rate_limited, auth_error, or caller_error (your own bad
        arguments: never held against the tool). ``query``: the task the tool was called for.
        ``retry_after``: seconds, when the tool said when to come back.
        """
        with _as_tool_error("report_outcome", ToolError):
            return record_feedback(retriever, tool_id, outcome, query, retry_after)

    return server


@contextmanager
def _as_tool_error(tool: str, tool_error: type[Exception]) -> Iterator[None]:
    """A rated error as its own message; anything else as a named internal error (traceback logged)."""
    try:
        yield
    except RatedError as exc:
        raise tool_error(str(exc)) from None
    except Exception as exc:
        log.exception("%s raised an unexpected exception", tool)
        raise tool_error(
            f"internal error: {type(exc).__name__}: {exc} (a bug; traceback in the server log)"
        ) from None
