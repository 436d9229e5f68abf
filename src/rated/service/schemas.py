"""Wire models of the HTTP service and MCP server, kept apart from library types on purpose.

The library may grow fields; what clients see changes only here.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from rated.catalog.export import ExportFormat, tool_definitions
from rated.catalog.schema import AuthType
from rated.retired import RetiredStatus
from rated.retriever import Hit, ToolHealth
from rated.service.filter_values import FilterValue
from rated.service.tool_headers import ToolHeaders
from rated.tool_filter import ToolFilter

__all__ = [
    "ErrorOut",
    "FeedbackIn",
    "FeedbackOut",
    "HealthOut",
    "HitOut",
    "RetiredOut",
    "RetrieveIn",
    "RetrieveManyIn",
    "RetrieveManyOut",
    "RetrieveOut",
    "ToolOut",
    "ToolRemovedOut",
    "ToolsAddedOut",
    "ToolsIn",
    "ToolsSyncIn",
    "ToolsSyncOut",
    "ToolsOut",
    "WHERE_KEYS",
    "WhereIn",
]


def _is_none(value: Any) -> bool:
    """For ``exclude_if``: a field left out of the answer while null (answers stay as they were before it)."""
    return value is None


class _In(BaseModel):
    """Request bodies: unknown fields and coercions are errors (lax mode read ``"k": true`` as 1 and
    ``"query": 5`` style mistakes silently; ints stay accepted where a float is expected)."""

    model_config = ConfigDict(extra="forbid", strict=True)


_FORMAT = (
    "also give each hit its definition in this model API's function-calling format (openai: Chat "
    "Completions, openai_responses, anthropic, mcp) and the name the model calls it by (call_name): "
    "names are made valid for the API and unique within the answer; map the called name back to the id"
)


# What each filter key allows, for the HTTP schema and the MCP arguments alike (rated.tool_filter).
WHERE_KEYS = {
    "tools": "only these tool ids (an empty list allows no tool; an unknown id is an error)",
    "exclude": "never these tool ids, e.g. ones that just failed (an unknown id excludes nothing)",
    "source": "only tools of these platforms (langchain, n8n, mcp, openai, custom, ...; any case)",
    "tags": "only tools with any of these tags (any case)",
    "provider": "only tools of these providers (a tool without one is its own provider, under its id)",
    "auth": f"only tools with these auth kinds: {', '.join(AuthType)} (any case)",
}
_ONE_OR_MORE = "; a string or a list of strings"


def _where_field(key: str) -> Any:
    return Field(None, description=WHERE_KEYS[key] + _ONE_OR_MORE)


class WhereIn(_In):
    """Rank only the tools this allows: a tool must pass every key given, and within a key any of its values.
    An unknown tool id in ``tools`` is a 404 naming the key (one in ``exclude`` excludes nothing); a filter
    that allows no tool is an empty answer, not an error."""

    tools: FilterValue = _where_field("tools")
    exclude: FilterValue = _where_field("exclude")
    source: FilterValue = _where_field("source")
    tags: FilterValue = _where_field("tags")
    provider: FilterValue = _where_field("provider")
    auth: FilterValue = Field(
        None,
        description=WHERE_KEYS["auth"] + _ONE_OR_MORE,
        examples=[["none", "api_key"]],
    )

    def parsed(self) -> ToolFilter | None:
        """The library's filter (``None`` when it constrains nothing); a bad auth kind is a QueryError."""
        return ToolFilter.parse(self.model_dump(exclude_none=True))


_WHERE = "rank only the tools this allows (default: every tool); see WhereIn"


class RetrieveIn(_In):
    query: str = Field(description="what the agent wants to do, in natural language")
    k: int | None = Field(None, ge=1, description="how many tools to return (default: the service's)")
    format: ExportFormat | None = Field(None, description=_FORMAT)
    where: WhereIn | None = Field(
        None, description=_WHERE, examples=[{"exclude": ["gmail.send"], "source": "mcp"}]
    )


class RetrieveManyIn(_In):
    queries: list[str]
    k: int | None = Field(None, ge=1)
    format: ExportFormat | None = Field(None, description=_FORMAT + " (unique within each result)")
    where: WhereIn | None = Field(None, description=_WHERE + " (the same for every query)")


class FeedbackIn(_In):
    """How a call went: ``outcome`` (a name) or ``status`` (the tool's HTTP status, classified here),
    exactly one of them."""

    tool_id: str = Field(min_length=1)
    outcome: str | None = Field(
        None,
        description="how the call went: success | tool_error | timeout | rate_limited | auth_error | "
        "caller_error (your own arguments were wrong: never held against the tool). Give this or status",
    )
    status: int | None = Field(
        None,
        ge=100,
        le=599,
        description="instead of outcome: the HTTP status the tool answered with, classified by RFC 9110 "
        "(rated.classify): 2xx/3xx success; 4xx caller_error (the caller's own request), except 401/402/"
        "403/407 auth_error, 408 timeout, 429 rate_limited; 5xx tool_error, except 504 timeout. A 503, or a "
        "403, whose headers name a wait is rate_limited for that long. The answer says which outcome was "
        "recorded",
    )
    headers: ToolHeaders = None
    query: str | None = Field(None, description="the request the tool was called for")
    retry_after: float | None = Field(
        None,
        ge=0,
        allow_inf_nan=False,
        description="rate-limit hint, seconds (finite); with status it stands for the tool's Retry-After "
        "and replaces the hints of headers",
    )


class ToolsIn(_In):
    tools: list[dict[str, Any]] = Field(
        description="the tools to add: Tool records (id, name, description, parameters, endpoint, source, "
        "provider, tags, auth, ...; only id and name are required), or OpenAI, Anthropic or MCP tool "
        "definitions (ids made as '<source>:<name>'), as `rated add` reads a {\"tools\": [...]} file",
        examples=[[{"id": "sms.send", "name": "send_sms", "description": "Send an SMS to a phone number"}]],
    )


class ToolsSyncIn(ToolsIn):
    tools: list[dict[str, Any]] = Field(
        description="the whole catalog the index should hold, in any form POST /tools takes: new ids are "
        "added, changed tools updated in place (learned state kept), unchanged ones cost nothing",
        examples=[[{"id": "sms.send", "name": "send_sms", "description": "Send an SMS to a phone number"}]],
    )
    prune: bool = Field(
        default=False, description="also remove indexed tools that `tools` does not hold (and their state)"
    )


class HitOut(BaseModel):
    rank: int
    id: str
    name: str
    description: str
    parameters: dict[str, Any]
    endpoint: str | None
    source: str
    provider: str | None
    score: float
    semantic: float
    bandit: float | None
    prior: float
    healthy: bool
    components: dict[str, float]
    # without a format the hit is what it was before formats existed, byte for byte: no nulls
    call_name: str | None = Field(
        None,
        description="with format: the name the model calls this tool by (absent without format)",
        exclude_if=_is_none,
    )
    definition: dict[str, Any] | None = Field(
        None,
        description="with format: the tool's definition for the model API (absent without format)",
        exclude_if=_is_none,
    )

    @classmethod
    def of(cls, hit: Hit, call_name: str | None = None, definition: dict[str, Any] | None = None) -> HitOut:
        t = hit.tool
        return cls(
            rank=hit.rank,
            id=t.id,
            name=t.name,
            description=t.description,
            parameters=t.parameters,
            endpoint=t.endpoint,
            source=t.source,
            provider=t.provider,
            score=hit.score,
            semantic=hit.semantic,
            bandit=hit.bandit,
            prior=hit.prior,
            healthy=hit.healthy,
            components=dict(hit.components),
            call_name=call_name,
            definition=definition,
        )


class RetrieveOut(BaseModel):
    query: str
    k: int
    count: int
    degraded: bool = Field(description="no candidate looked healthy; the list is ranked anyway (fail open)")
    hits: list[HitOut]

    @classmethod
    def of(cls, query: str, k: int, hits: list[Hit], format: ExportFormat | None = None) -> RetrieveOut:
        if format is None:
            out = [HitOut.of(h) for h in hits]
        else:
            defs = tool_definitions(hits, format)
            by_id = dict(zip((t.id for t in defs.tools), defs.definitions, strict=True))
            out = [HitOut.of(h, defs.names[h.id], by_id[h.id]) for h in hits]
        return cls(query=query, k=k, count=len(hits), degraded=any(h.degraded for h in hits), hits=out)


class RetrieveManyOut(BaseModel):
    count: int
    results: list[RetrieveOut]


class RetiredOut(BaseModel):
    """A tool's run of 404/410 caller errors (a retired or moved endpoint answers every call so): once it
    came from ``need`` different queries since the tool's last success, each 404/410 counts as tool_error."""

    holds: bool = Field(description="the rule counts the tool's 404/410s as tool_error now")
    queries: int = Field(
        description="different queries answered 404/410 since its last success (in the window)"
    )
    need: int | None = Field(
        description="how many the rule needs for this tool (more for one whose callers often err; null: "
        "they err too often for a run to count)"
    )
    counted: int = Field(description="404/410s of this run the policy learned as tool_error")
    since: float = Field(description="when the oldest of that evidence came (the retriever's clock, seconds)")
    summary: str = Field(description="the same in words, e.g. '404/410 from 3 different queries since ...'")

    @classmethod
    def of(cls, status: RetiredStatus | None) -> RetiredOut | None:
        return None if status is None else cls(**status.to_dict())


class FeedbackOut(BaseModel):
    recorded: bool
    tool_id: str
    outcome: str = Field(description="the outcome recorded (with status: what the status was classified as)")
    retry_after: float | None = Field(
        description="the rate-limit hint recorded, seconds: a rate_limited tool is kept out that long, "
        "without it being held against the tool (null: none)"
    )
    healthy: bool | None = Field(
        description="the policy's view of the tool right after this outcome (null if it was removed since)"
    )
    # only a 404/410 adds to the answer (no nulls otherwise: it stays what it was, and short for agents)
    counted_as: str | None = Field(
        default=None,
        description="what the policy learned this report as, when not as recorded: tool_error when a "
        "404/410 came while the tool's run of them holds (a retired endpoint, see retired; the outcome log "
        "keeps outcome); absent otherwise",
        exclude_if=_is_none,
    )
    retired: RetiredOut | None = Field(
        default=None,
        description="for a 404/410: the tool's run of them right after this report (absent: another "
        "report, or no run)",
        exclude_if=_is_none,
    )


class ToolOut(BaseModel):
    id: str
    name: str
    source: str
    prior: float
    healthy: bool
    successes: int
    failures: int
    caller_errors: int
    last_outcome: str | None
    last_time: float | None
    components: dict[str, float]
    retired: RetiredOut | None = Field(  # a tool without a run is listed as before (no null)
        default=None,
        description="its run of 404/410 caller errors since its last success (absent: none): holds says "
        "whether they count as tool_error now (a retired endpoint)",
        exclude_if=_is_none,
    )

    @classmethod
    def of(cls, health: ToolHealth) -> ToolOut:
        return cls(**{**health.to_dict(), "retired": RetiredOut.of(health.retired)})


class ToolsOut(BaseModel):
    count: int
    data: list[ToolOut]


class ToolsAddedOut(BaseModel):
    added: list[str] = Field(description="the ids of the tools added, in the order given")
    count: int
    tools: int = Field(description="tools in the index after the change")


class ToolsSyncOut(BaseModel):
    added: list[str] = Field(description="ids of the tools added, in the order given")
    updated: list[str] = Field(description="ids of the tools re-encoded and replaced in place")
    removed: list[str] = Field(description="ids removed with their state (prune), in catalog order")
    unchanged: list[str] = Field(description="ids already indexed as given: neither encoded nor written")
    tools: int = Field(description="tools in the index after the change")


class ToolRemovedOut(BaseModel):
    removed: str = Field(description="the id removed, as the catalog spells it")
    tools: int = Field(description="tools in the index after the change")


class HealthOut(BaseModel):
    status: str
    tools: int | None = Field(description="tools in the served index; null while a reopen is pending")
    encoder: str = Field(description="the encoder of the index this process serves now")
    policy: str = Field(description="the policy of the index this process serves now")
    version: str
    reopen_pending: bool = Field(
        default=False,
        description="the index was rebuilt with another encoder or policy: the next request reopens it",
    )


class ErrorOut(BaseModel):
    error: str = Field(description="the error class, e.g. QueryError")
    detail: str
