"""``GET /tools`` and ``GET /tools/{tool_id}``: indexed tools with their current health (and a tool's run
of 404/410s when it has one, ``rated.retired``); ``POST /tools``, ``PUT /tools`` and
``DELETE /tools/{tool_id}``: change the catalog of the live index, keeping every other tool's learned
state (``PUT`` syncs it with a whole catalog: added, updated in place, optionally pruned).

The writes are ``Retriever.add_tools`` / ``sync_tools`` / ``remove_tools`` through ``Reopening`` like every
route: plain ``def`` handlers, so the encoding of new tools runs in the thread pool, not on the event loop.
A request that fails changes nothing: ids already indexed (409), invalid tools (422), an unknown id (404),
or removing the last tool, or with ``prune`` every indexed tool (409). Other replicas on the same store
follow the change. Not offered over MCP: agents find tools and report outcomes, they do not edit the
catalog.
"""

from __future__ import annotations

from fastapi import APIRouter

from rated.catalog.loaders import load_catalog
from rated.catalog_sync import SyncReport
from rated.retired import with_status
from rated.retriever import Retriever
from rated.service.deps import MetricsDep, ServingDep
from rated.service.routes._errors import BODY, responses
from rated.service.schemas import (
    ToolOut,
    ToolRemovedOut,
    ToolsAddedOut,
    ToolsIn,
    ToolsOut,
    ToolsSyncIn,
    ToolsSyncOut,
)

__all__ = ["router"]

router = APIRouter(prefix="/tools", tags=["tools"])


@router.get("", response_model=ToolsOut, responses=responses(422, 503))
def list_tools(serving: ServingDep, unhealthy: bool = False) -> ToolsOut:
    health = serving.call(lambda r: with_status(r, r.tools()))
    rows = [ToolOut.of(t) for t in health if not (unhealthy and t.healthy)]
    return ToolsOut(count=len(rows), data=rows)


@router.post("", status_code=201, response_model=ToolsAddedOut, responses=responses(*BODY, 409, 503))
def add_tools(body: ToolsIn, serving: ServingDep, metrics: MetricsDep) -> ToolsAddedOut:
    """Encode and add tools with the index's own encoder; the others keep their prior and learned state."""
    tools = load_catalog({"tools": body.tools})  # every problem at once (422), located as tools[i]

    def add(r: Retriever) -> int:
        r.add_tools(tools)
        return len(r)

    total = serving.call(add)
    metrics.catalog_changes.labels("added").inc(len(tools))
    return ToolsAddedOut(added=[t.id for t in tools], count=len(tools), tools=total)


@router.put("", response_model=ToolsSyncOut, responses=responses(*BODY, 409, 503))
def sync_tools(body: ToolsSyncIn, serving: ServingDep, metrics: MetricsDep) -> ToolsSyncOut:
    """Make the index hold ``tools``: new ids added, changed tools re-encoded in place with their learned
    state kept, unchanged ones left alone; with ``prune`` the tools not given are removed."""
    tools = load_catalog({"tools": body.tools})  # every problem at once (422), located as tools[i]

    def sync(r: Retriever) -> tuple[SyncReport, int]:
        return r.sync_tools(tools, prune=body.prune), len(r)

    report, total = serving.call(sync)
    for change in ("added", "updated", "removed"):
        if n := len(getattr(report, change)):
            metrics.catalog_changes.labels(change).inc(n)
    return ToolsSyncOut(**report.to_dict(), tools=total)


@router.get("/{tool_id:path}", response_model=ToolOut, responses=responses(404, 422, 503))
def get_tool(tool_id: str, serving: ServingDep) -> ToolOut:
    return ToolOut.of(serving.call(lambda r: with_status(r, [r.health(tool_id)])[0]))


@router.delete("/{tool_id:path}", response_model=ToolRemovedOut, responses=responses(404, 409, 422, 503))
def remove_tool(tool_id: str, serving: ServingDep, metrics: MetricsDep) -> ToolRemovedOut:
    """Remove a tool and its learned state (409 for the last tool: an index needs one)."""

    def remove(r: Retriever) -> tuple[str, int]:
        (removed,) = r.remove_tools([tool_id])
        return removed, len(r)

    removed, total = serving.call(remove)
    metrics.catalog_changes.labels("removed").inc()
    return ToolRemovedOut(removed=removed, tools=total)
