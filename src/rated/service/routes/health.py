"""``GET /health``: liveness plus a cheap check that the store answers."""

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

    retriever.store.version()  # raises StoreError (503) when the store is gone
    meta = retriever.meta
    return HealthOut(
        status="ok", tools=len(retriever), encoder=str(meta.encoder), policy=meta.policy, version=__version__
    )
