"""Each call of the client as one ``Call``: the HTTP request it makes and how its answer becomes rated's own
types (``Hit``, ``ToolDefinitions``, ``ToolHealth``, ``Outcome``, ``RetiredStatus``), written once for
the sync and async clients, which only send it.

Arguments are checked here, before anything is sent, where the check needs no index: a query that is not
text or blank (``QueryError``), an outcome name, status, headers or retry_after that ``Retriever.feedback``
or the service would refuse (``ConfigError``, by ``rated.reported``, the code the service runs). What needs
the index (a tool id, a query's length limit, ``k`` above the service's ``max_k``) is the service's to
answer, and ``errors.error_from_answer`` raises it as the same class.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from functools import partial
from numbers import Integral, Real
from typing import Any, Generic, TypeVar
from urllib.parse import quote

import httpx

from rated.catalog.export import ExportFormat, ToolDefinitions
from rated.catalog.schema import Tool
from rated.classify import outcome_from_status
from rated.client.errors import ServiceError, error_from_answer
from rated.errors import ConfigError, QueryError, RatedError, UnknownToolError
from rated.hits import Hit, ToolHealth
from rated.outcome import Outcome, OutcomeKind
from rated.reported import reported_outcome
from rated.retired import RetiredStatus
from rated.shown import shown
from rated.store.base import OutcomeStats
from rated.tool_filter import ToolFilter

__all__ = [
    "Call",
    "FeedbackResult",
    "ServiceHealth",
    "check_query",
    "feedback",
    "health",
    "retrieve",
    "retrieve_many",
    "tool_health",
    "tools",
]

T = TypeVar("T")
Retrieved = list[Hit] | ToolDefinitions
RetrievedMany = list[list[Hit]] | list[ToolDefinitions]  # every query's the same kind


@dataclass(frozen=True)
class FeedbackResult:
    """What the service recorded: the outcome (with ``status``, what it was classified as, and the wait of
    a rate limit) and the tool's health right after it (None if the tool was removed since).

    For a 404/410 (``rated.retired``): ``retired``, the tool's run of them right after this report (None:
    no run, or another report), and ``counted_as``, ``OutcomeKind.TOOL_ERROR`` when the run holds, so the
    policy learned this report as a tool error while the outcome log keeps ``outcome`` (None otherwise)."""

    tool_id: str  # as the catalog spells it
    outcome: Outcome
    healthy: bool | None
    recorded: bool = True
    counted_as: OutcomeKind | None = None
    retired: RetiredStatus | None = None


@dataclass(frozen=True)
class ServiceHealth:
    """``GET /health``: the service is up and can serve its index (``tools`` is None while a reopen after
    a rebuild with another encoder or policy is pending: the next request reopens it)."""

    status: str
    tools: int | None
    encoder: str
    policy: str
    version: str
    reopen_pending: bool


@dataclass(frozen=True)
class Call(Generic[T]):
    """One request and the reading of its answer; ``tool_id`` is the id it names, for the
    ``UnknownToolError`` a 404 becomes."""

    method: str
    path: str
    read: Callable[[Any], T]
    body: dict[str, Any] | None = None
    params: dict[str, str] | None = None
    tool_id: str | None = None

    def request(self) -> dict[str, Any]:
        """The arguments of ``httpx.Client.request``. The body is JSON in ASCII: a lone surrogate in a query
        reaches the service, which names it, instead of failing to encode here."""
        if self.body is None:
            return {"method": self.method, "url": self.path, "params": self.params}
        try:
            content = json.dumps(self.body, allow_nan=False, default=_plain).encode()
        except (TypeError, ValueError) as exc:  # an object json cannot write, NaN or infinity
            raise ConfigError(f"{self.path}: cannot send the arguments as JSON: {exc}") from None
        headers = {"Content-Type": "application/json"}
        return {"method": self.method, "url": self.path, "content": content, "headers": headers}

    def answer(self, response: httpx.Response, url: str) -> T:
        """The answer read into rated's types, or the exception it stands for."""
        if not response.is_success:
            raise error_from_answer(response, url, self.tool_id)
        try:
            return self.read(json.loads(response.content))
        except RatedError:
            raise
        except (ValueError, KeyError, TypeError, AttributeError) as exc:  # pydantic's errors are ValueErrors
            raise ServiceError(
                f"{url} answered {response.status_code} with a body this client cannot read "
                f"({type(exc).__name__}: {shown(str(exc), 120)}): is it a rated service of this version?",
                url,
                response.status_code,
            ) from None


# ---- the calls -----------------------------------------------------------------------------------------
Where = ToolFilter | Mapping[str, Any] | None


def retrieve(query: str, k: int | None, format: ExportFormat | None, where: Where = None) -> Call[Retrieved]:
    check_query(query)
    body = _dropped(query=query, k=k, format=format, where=_where(where))
    return Call("POST", "/retrieve", lambda answer: _retrieved(answer, format), body)


def retrieve_many(
    queries: Iterable[str], k: int | None, format: ExportFormat | None, where: Where = None
) -> Call[RetrievedMany]:
    if isinstance(queries, str) or not isinstance(queries, Iterable):
        raise QueryError(f"retrieve_many takes a list of queries, got {type(queries).__name__}")
    listed = list(queries)
    for i, query in enumerate(listed):
        try:
            check_query(query)
        except QueryError as exc:  # name the culprit, as Retriever.retrieve_many does
            raise QueryError(f"queries[{i}]: {exc}") from None

    def read(body: Any) -> RetrievedMany:
        if format is None:
            return [_hits(result) for result in body["results"]]
        return [_definitions(result, format) for result in body["results"]]

    body = _dropped(queries=listed, k=k, format=format, where=_where(where))
    return Call("POST", "/retrieve/batch", read, body)


def feedback(
    tool_id: str,
    outcome: Outcome | OutcomeKind | str | bool | None,
    *,
    status: int | None,
    headers: Mapping[str, str] | None,
    query: str | None,
    retry_after: float | None,
) -> Call[FeedbackResult]:
    """``POST /feedback``; ``outcome`` in any form ``Retriever.feedback`` takes (an ``Outcome``'s own
    retry_after unless ``retry_after`` replaces it), or ``status`` (and ``headers``) to be classified."""
    _check_id(tool_id)
    name, kept_status = None, status  # the status the answer's Outcome keeps: sent, or the given Outcome's
    if outcome is not None:
        given = Outcome.of(outcome)  # a bad name is a ConfigError here
        name, kept_status = given.kind.value, given.status
        if retry_after is None and isinstance(outcome, Outcome):
            retry_after = given.retry_after
        plain = status is None and headers is None and retry_after is None
        if plain and given.status is not None and outcome_from_status(given.status).kind is given.kind:
            # sent as the status it was classified from (a tracked call's 404), which the service classifies
            # alike and keeps: a 404/410 is evidence of a retired endpoint (rated.retired) only with it
            name, status = None, given.status
    sent_headers = None if headers is None else dict(headers)  # httpx.Headers, requests' CaseInsensitiveDict
    reported_outcome(name, status=status, headers=sent_headers, retry_after=retry_after)  # ConfigError now
    if query is not None:
        check_query(query)
    body = _dropped(
        tool_id=tool_id,
        outcome=name,
        status=status,
        headers=sent_headers,
        query=query,
        retry_after=retry_after,
    )
    # the service answers with what the status was classified as; the status is this call's, kept on the
    # Outcome as outcome_from_status keeps it in process
    return Call("POST", "/feedback", partial(_feedback_result, status=kept_status), body, tool_id=tool_id)


def tools(unhealthy: bool) -> Call[list[ToolHealth]]:
    params = {"unhealthy": "true"} if unhealthy else None
    return Call("GET", "/tools", lambda body: [_tool_health(row) for row in body["data"]], params=params)


def tool_health(tool_id: str) -> Call[ToolHealth]:
    _check_id(tool_id)
    return Call("GET", f"/tools/{_segment(tool_id)}", _tool_health, tool_id=tool_id)


def health() -> Call[ServiceHealth]:
    def read(body: Any) -> ServiceHealth:
        return ServiceHealth(
            status=str(body["status"]),
            tools=None if body["tools"] is None else int(body["tools"]),
            encoder=str(body["encoder"]),
            policy=str(body["policy"]),
            version=str(body["version"]),
            reopen_pending=bool(body.get("reopen_pending", False)),
        )

    return Call("GET", "/health", read)


def check_query(query: object) -> None:
    """The checks of ``Retriever`` that need no index (its length limit is the service's to apply)."""
    if not isinstance(query, str):
        raise QueryError(f"query must be a string, got {type(query).__name__}")
    if not query.strip():
        raise QueryError("query is empty")


# ---- answers into rated's types ---------------------------------------------------------------------------
def _retrieved(result: Any, format: ExportFormat | None) -> Retrieved:
    return _hits(result) if format is None else _definitions(result, format)


def _hits(result: Any) -> list[Hit]:
    degraded = bool(result["degraded"])
    return [_hit(row, degraded) for row in result["hits"]]


def _definitions(result: Any, format: ExportFormat) -> ToolDefinitions:
    rows = result["hits"]
    hits = _hits(result)
    names = {row["id"]: row["call_name"] for row in rows}
    return ToolDefinitions(
        format,
        [row["definition"] for row in rows],
        tuple(h.tool for h in hits),
        names,
        {row["call_name"]: h.tool for row, h in zip(rows, hits, strict=True)},
    )


def _hit(row: Mapping[str, Any], degraded: bool) -> Hit:
    """A ``Hit`` whose tool holds what the wire carries (id, name, description, parameters, endpoint,
    source, provider; not tags, auth or extra)."""
    tool = Tool(
        id=row["id"],
        name=row["name"],
        description=row["description"],
        parameters=row["parameters"],
        endpoint=row["endpoint"],
        source=row["source"],
        provider=row["provider"],
    )
    return Hit(
        tool=tool,
        score=float(row["score"]),
        semantic=float(row["semantic"]),
        prior=float(row["prior"]),
        bandit=None if row["bandit"] is None else float(row["bandit"]),
        healthy=bool(row["healthy"]),
        degraded=degraded,
        rank=int(row["rank"]),
        components={str(name): float(value) for name, value in row["components"].items()},
    )


def _tool_health(row: Mapping[str, Any]) -> ToolHealth:
    """A ``ToolHealth`` whose tool holds id, name and source (what ``/tools`` lists); ``stats`` is None for
    a tool without any outcome, as ``Retriever.tools`` gives it."""
    counts = (int(row["successes"]), int(row["failures"]), int(row["caller_errors"]))
    last_time = row["last_time"]
    stats = (
        None
        if row["last_outcome"] is None and not any(counts)
        else OutcomeStats(
            row["id"], *counts, row["last_outcome"], None if last_time is None else float(last_time)
        )
    )
    return ToolHealth(
        tool=Tool(id=row["id"], name=row["name"], source=row["source"]),
        prior=float(row["prior"]),
        healthy=bool(row["healthy"]),
        stats=stats,
        components={str(name): float(value) for name, value in row["components"].items()},
        retired=_retired(row.get("retired")),  # absent from an older service's answer
    )


def _feedback_result(body: Any, status: int | None = None) -> FeedbackResult:
    healthy = body["healthy"]
    learned = body.get("counted_as")  # absent from an older service's answer, as retired
    return FeedbackResult(
        tool_id=str(body["tool_id"]),
        outcome=Outcome(OutcomeKind(body["outcome"]), body["retry_after"], status),
        healthy=None if healthy is None else bool(healthy),
        recorded=bool(body["recorded"]),
        counted_as=None if learned is None else OutcomeKind(learned),
        retired=_retired(body.get("retired")),
    )


def _retired(row: Mapping[str, Any] | None) -> RetiredStatus | None:
    """A tool's run of 404/410s as the service gives it (its ``summary`` is ``describe()``)."""
    if row is None:
        return None
    need = row["need"]
    return RetiredStatus(
        holds=bool(row["holds"]),
        queries=int(row["queries"]),
        need=None if need is None else int(need),
        counted=int(row["counted"]),
        since=float(row["since"]),
    )


# ---- helpers --------------------------------------------------------------------------------------------
def _where(where: Where) -> dict[str, list[str]] | None:
    """A filter as the service reads it (``where``), checked here as ``Retriever.retrieve`` checks it (an
    unknown key or auth kind is a ``QueryError`` before anything is sent); None when it constrains
    nothing. Ids are the service's to know: an unknown one is its 404, raised as ``UnknownToolError``."""
    parsed = ToolFilter.parse(where)
    return None if parsed is None else parsed.as_dict()


def _check_id(tool_id: object) -> None:
    if not isinstance(tool_id, str) or not tool_id:
        raise UnknownToolError(tool_id)  # type: ignore[arg-type]  # as Retriever: the message quotes it


def _segment(tool_id: str) -> str:
    """``tool_id`` as one path segment: every reserved character escaped (ids hold ``/``, ``?``, ``#``),
    and an id of dots too, which URL normalisation would otherwise resolve (``..`` is the parent)."""
    quoted = quote(tool_id, safe="")
    return quoted.replace(".", "%2E") if set(tool_id) == {"."} else quoted


def _dropped(**fields: Any) -> dict[str, Any]:
    """The fields given: the service's defaults stand for the others (and ``null`` is not always valid)."""
    return {name: value for name, value in fields.items() if value is not None}


def _plain(value: object) -> int | float:
    """numpy scalars (and other number types) as JSON numbers."""
    if isinstance(value, Integral) and not isinstance(value, bool):
        return int(value)
    if isinstance(value, Real):
        return float(value)
    raise TypeError(f"{type(value).__name__} is not a JSON value")
