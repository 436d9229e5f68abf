"""``GET /tools`` and ``GET /tools/{tool_id}``: indexed tools with their current health."""

from __future__ import annotations

from fastapi import APIRouter

from rated.service.deps import RetrieverDep
from rated.service.routes._errors import responses
from rated.service.schemas import ToolOut, ToolsOut

__all__ = ["router"]

router = APIRouter(prefix="/tools", tags=["tools"])


@router.get("", response_model=ToolsOut, responses=responses(422, 503))
def list_tools(retriever: RetrieverDep, unhealthy: bool = False) -> ToolsOut:
    rows = [ToolOut.of(t) for t in retriever.tools() if not (unhealthy and t.healthy)]
    return ToolsOut(count=len(rows), data=rows)


@router.get("/{tool_id:path}", response_model=ToolOut, responses=responses(404, 422, 503))
def get_tool(tool_id: str, retriever: RetrieverDep) -> ToolOut:
    return ToolOut.of(retriever.health(tool_id))
