"""``GET /health``: liveness plus a check that this process can still serve the store's index."""

from __future__ import annotations

from fastapi import APIRouter

from rated.service.deps import RetrieverDep
from rated.service.routes._errors import responses
from rated.service.schemas import HealthOut

__all__ = ["router"]

router = APIRouter(prefix="/health", tags=["health"])


@router.get("", response_model=HealthOut, responses=responses(503))
def health(retriever: RetrieverDep) -> HealthOut:
    from rated import __version__

    # 503 when the store is gone or was re-indexed with another encoder or policy: then every retrieve
    # fails, and a health check that only pinged the store would still say ok
    retriever.refresh()
    meta = retriever.meta
    return HealthOut(
        status="ok", tools=len(retriever), encoder=str(meta.encoder), policy=meta.policy, version=__version__
    )
