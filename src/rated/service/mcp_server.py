"""An MCP server over a ``Retriever``: agents call ``find_tools`` before acting, ``report_outcome`` after.

Transport is stdio (``rated mcp --db PATH``, through ``mcp_stdio.run_stdio``, which also answers lines
it cannot read). The two tools return the same wire models as the HTTP service. A rated error (empty
query, unknown tool id, busy store) comes back as a tool error with its one-line message, which the model
can read and act on. Any other exception (a bug) is logged with its traceback and also comes back as a
tool error naming it, not the SDK's bare "Error executing tool". When the index is rebuilt under the
server with another encoder or policy, the tools reopen it (``reopen.Reopening``): no agent host restarts
an MCP server that has started failing.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import TYPE_CHECKING, Annotated, Any

from pydantic import ConfigDict, Field, Strict, model_validator

from rated.catalog.export import ExportFormat
from rated.errors import ConfigError, RatedError
from rated.extras import install_hint
from rated.outcome import OutcomeKind
from rated.retriever import Retriever
from rated.service.actions import checked_k, record_feedback
from rated.service.filter_values import FilterValue
from rated.service.probes import astop_prober, start_prober
from rated.service.reopen import Reopening
from rated.service.schemas import WHERE_KEYS, FeedbackOut, RetrieveOut
from rated.service.settings import Settings
from rated.service.tool_headers import ToolHeaders
from rated.shown import clipped
from rated.tool_filter import ToolFilter
from rated.tool_filter_names import named_as

if TYPE_CHECKING:
    from collections.abc import Callable

    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.tools import Tool
    from mcp.server.mcpserver.utilities.func_metadata import ArgModelBase

__all__ = ["build_mcp_server"]

log = logging.getLogger(__name__)

_SHOWN = 5  # unknown arguments named in an error (then "and N more")

INSTRUCTIONS = (
    "Use find_tools to pick a tool for a task: it ranks the catalog by relevance and by how reliably each "
    "tool has been working. After calling a tool, report how it went with report_outcome: the HTTP status "
    "it answered with (status, and its headers for a 429, 403 or 503), or an outcome name (success, "
    "tool_error, timeout, rate_limited, auth_error, or caller_error when your own arguments were wrong), "
    "so that failing tools are avoided until they recover."
)
# Given explicitly: the SDK would send a function's docstring as it is, indentation and markup included.
FIND_TOOLS = (
    "Find the best tools for a task described in natural language, most suitable first. Each hit has the "
    "tool's id, description and parameters, a score, and whether it currently looks healthy. degraded is "
    "true when no candidate looked healthy (the list is ranked anyway). With format (openai, "
    "openai_responses, anthropic or mcp), each hit also has its definition for that model API and "
    "call_name, the name it is called by there; report outcomes with the id. To choose among some tools "
    "only, give exclude (ids not to return, e.g. a tool that just failed for this task: you get the next "
    "best ones; an id of no tool excludes nothing), only (the ids you may call; an id of no tool is an "
    "error), source, tags, provider or auth; a tool must match every one given. No hits means no tool "
    "matches them."
)
REPORT_OUTCOME = (
    "Report how a call of a tool went, so that failing tools are demoted until they recover. Give either "
    "status (the tool's HTTP status, with its response headers for a 429, 403 or 503) or outcome. A status "
    "is classified for you: 2xx success; 400/404/422 caller_error (your own bad arguments, never held "
    "against the tool); 401/403 auth_error; 429, or a 403/503 whose headers name a wait, rate_limited for "
    "that long (not held against the tool); 5xx tool_error. The result says which outcome was recorded."
)


# The parameters as the model sees them (JSON schema with descriptions). Strict: no "5" for 5, no true for 1.
Task = Annotated[str, Field(description="the task, in natural language")]
ToolFormat = Annotated[
    ExportFormat | None,
    Field(
        description="also give each hit its definition in this model API's function-calling format and the "
        "name it is called by (call_name: valid for that API, unique in the result)"
    ),
]
ToolId = Annotated[str, Field(description="the id of the tool called, as find_tools returned it")]
OutcomeName = Annotated[
    str | None,
    Field(
        description="how the call went, when not giving status; caller_error: your own arguments were wrong",
        json_schema_extra={"enum": [kind.value for kind in OutcomeKind]},
    ),
]
# the bounds are in the schema only: out of range, a status gets rated's own message, not pydantic's
Status = Annotated[
    int | None,
    Strict(),
    Field(
        description="the HTTP status the tool answered with, instead of outcome: rated classifies it",
        json_schema_extra={"minimum": 100, "maximum": 599},
    ),
]
CalledFor = Annotated[str | None, Field(description="the task the tool was called for")]
RetryAfter = Annotated[
    float | None,
    Strict(),
    Field(
        description="seconds until the tool may be called again, when it said so (rate_limited; with "
        "status, it replaces the Retry-After of headers)",
        json_schema_extra={"minimum": 0},
    ),
]


# each filter key (``rated.tool_filter``) as an optional argument: flat arguments, which a model fills in
# more reliably than a nested object
_ONE_OR_MORE = "; a list of strings, or one string"
Exclude = Annotated[FilterValue, Field(description=WHERE_KEYS["exclude"] + _ONE_OR_MORE)]
# not "tools", which a model could take for the tools it is asking for
Only = Annotated[FilterValue, Field(description=WHERE_KEYS["tools"] + _ONE_OR_MORE)]
Source = Annotated[FilterValue, Field(description=WHERE_KEYS["source"] + _ONE_OR_MORE)]
Tags = Annotated[FilterValue, Field(description=WHERE_KEYS["tags"] + _ONE_OR_MORE)]
Provider = Annotated[FilterValue, Field(description=WHERE_KEYS["provider"] + _ONE_OR_MORE)]
AuthKinds = Annotated[FilterValue, Field(description=WHERE_KEYS["auth"] + _ONE_OR_MORE)]
# how a filter error names the argument at fault: "argument 'only': unknown tool id: 'x'"
_FILTER_ERRORS = {key: f"argument {key!r}" for key in WHERE_KEYS} | {"tools": "argument 'only'"}


def _k_param(max_k: int) -> Any:
    # the bounds are in the schema only: out of range, k gets this service's own message, not pydantic's
    return Annotated[
        int,
        Strict(),
        Field(
            description=f"how many tools to return (1 to {max_k})",
            json_schema_extra={"minimum": 1, "maximum": max_k},
        ),
    ]


def build_mcp_server(retriever: Retriever, settings: Settings | None = None) -> MCPServer:
    """An ``MCPServer`` exposing ``find_tools`` and ``report_outcome`` over ``retriever`` (or a retriever
    reopened over its store, should the index be rebuilt with another encoder or policy: the store stays
    the caller's to close). With ``settings.probe_every``, each run of the server health-checks the
    suspected tools (``rated.service.probes``), stopped before the run ends."""
    try:
        from mcp.server.mcpserver import MCPServer
        from mcp.server.mcpserver.exceptions import ToolError
    except ImportError:
        raise ConfigError(f"the MCP server needs the mcp SDK: {install_hint('service')}") from None
    from rated import __version__

    settings = settings or Settings()
    serving = Reopening(retriever, restart_hint="restart the MCP server (rated mcp)")

    def find_tools(
        query: Task,
        k: int = settings.default_k,
        format: ToolFormat = None,
        exclude: Exclude = None,
        only: Only = None,
        source: Source = None,
        tags: Tags = None,
        provider: Provider = None,
        auth: AuthKinds = None,
    ) -> RetrieveOut:
        given = {"exclude": exclude, "tools": only, "source": source, "tags": tags}
        given |= {"provider": provider, "auth": auth}
        with _as_tool_error("find_tools", ToolError), named_as(_FILTER_ERRORS):
            k = checked_k(k, settings)
            where = ToolFilter.parse(given)
            return serving.call(
                lambda r: RetrieveOut.of(query, k, r.retrieve(query, k=k, where=where), format)
            )

    def report_outcome(
        tool_id: ToolId,
        outcome: OutcomeName = None,
        status: Status = None,
        headers: ToolHeaders = None,
        query: CalledFor = None,
        retry_after: RetryAfter = None,
    ) -> FeedbackOut:
        with _as_tool_error("report_outcome", ToolError):
            return serving.call(
                lambda r: record_feedback(
                    r,
                    tool_id,
                    query,
                    outcome=outcome,
                    status=status,
                    headers=headers,
                    retry_after=retry_after,
                )
            )

    @asynccontextmanager
    async def probing(_: MCPServer) -> AsyncIterator[dict[str, Any]]:
        """Health probes while the server runs, when ``settings.probe_every`` is set (``rated mcp
        --probe-every``): a recovered tool is back without an agent paying a failed call to find out.
        Stopped without blocking the event loop, which may still be answering or closing sessions."""
        prober = start_prober(settings, lambda: serving.current)
        try:
            yield {}
        finally:
            await astop_prober(prober, settings)

    find_tools.__annotations__["k"] = _k_param(settings.max_k)  # the limit is known only now
    tools = [_closed_tool(find_tools, FIND_TOOLS), _closed_tool(report_outcome, REPORT_OUTCOME)]
    return MCPServer(
        name="rated", instructions=INSTRUCTIONS, version=__version__, tools=tools, lifespan=probing
    )


def _closed_tool(fn: Callable[..., Any], description: str) -> Tool:
    """``fn`` as an MCP tool whose arguments are closed: an unknown one is an error naming it.

    The SDK drops unknown arguments silently, so a model that sends ``top_k`` would get the default ``k``
    and one that sends ``retry_after_seconds`` would have a rate limit held against the tool, with no sign
    of either. The closed model also says ``additionalProperties: false`` in the published schema.
    """
    from mcp.server.mcpserver.tools import Tool

    tool = Tool.from_function(fn, description=description)
    model = tool.fn_metadata.arg_model
    known = [field.alias or name for name, field in model.model_fields.items()]

    def known_arguments_only(data: Any) -> Any:
        """One short error for every unknown argument: pydantic's own is four lines per argument, each
        quoting its name whole (300 unknown arguments, or one 3,000-character name, made 43 KB)."""
        unknown = [key for key in data if key not in known] if isinstance(data, dict) else []
        if unknown:
            names = ", ".join(repr(clipped(str(key))) for key in unknown[:_SHOWN])
            more = f" and {len(unknown) - _SHOWN} more" if len(unknown) > _SHOWN else ""
            raise ValueError(f"unknown argument(s) {names}{more}; this tool takes {', '.join(known)}")
        return data

    # hide_input_in_errors: a validation error names the argument and the problem, never echoes the value
    config = ConfigDict(extra="forbid", hide_input_in_errors=True)
    check = model_validator(mode="before")(known_arguments_only)
    closed: type[ArgModelBase] = type(
        model.__name__, (model,), {"model_config": config, "check_known_arguments": check}
    )
    tool.fn_metadata.arg_model = closed  # read at each call (the SDK documents this field as live)
    tool.parameters = closed.model_json_schema(by_alias=True)
    return tool


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
