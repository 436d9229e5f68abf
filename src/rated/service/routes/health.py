"""``GET /health``: liveness plus a check that this process can still serve the store's index (after
reopening it, when it was rebuilt with another encoder or policy: healthy again if that worked)."""

from __future__ import annotations

from fastapi import APIRouter

from rated.retriever import Retriever
from rated.service.deps import ServingDep
from rated.service.routes._errors import responses
from rated.service.schemas import HealthOut

__all__ = ["router"]

router = APIRouter(prefix="/health", tags=["health"])


@router.get("", response_model=HealthOut, responses=responses(503))
def health(serving: ServingDep) -> HealthOut:
    return serving.call(_check)


def _check(retriever: Retriever) -> HealthOut:
    from rated import __version__

    # 503 when the store is gone, or was re-indexed in a way no reopened retriever can serve either: then
    # every retrieve fails, and a health check that only pinged the store would still say ok
    retriever.refresh()
    meta = retriever.meta
    return HealthOut(
        status="ok", tools=len(retriever), encoder=str(meta.encoder), policy=meta.policy, version=__version__
    )
