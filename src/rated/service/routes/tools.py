"""``GET /tools`` and ``GET /tools/{tool_id}``: indexed tools with their current health."""

from __future__ import annotations

from fastapi import APIRouter

from rated.service.deps import ServingDep
from rated.service.routes._errors import responses
from rated.service.schemas import ToolOut, ToolsOut

__all__ = ["router"]

router = APIRouter(prefix="/tools", tags=["tools"])


@router.get("", response_model=ToolsOut, responses=responses(422, 503))
def list_tools(serving: ServingDep, unhealthy: bool = False) -> ToolsOut:
    rows = [ToolOut.of(t) for t in serving.call(lambda r: r.tools()) if not (unhealthy and t.healthy)]
    return ToolsOut(count=len(rows), data=rows)


@router.get("/{tool_id:path}", response_model=ToolOut, responses=responses(404, 422, 503))
def get_tool(tool_id: str, serving: ServingDep) -> ToolOut:
    return ToolOut.of(serving.call(lambda r: r.health(tool_id)))
