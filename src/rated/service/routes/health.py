"""``GET /health``: liveness plus a check that this process can still serve the store's index.

A probe never reopens the index (``Reopening.probe``): after a rebuild with another encoder or policy it
answers ok with ``reopen_pending`` (the next real request reopens it), and 503 only once a reopen was
tried and failed (an index no reopened retriever can serve either). Reopening here would load the rebuilt
index and maybe an encoder (seconds for a real model) inside a liveness check, whose timeout then kills
a process that was about to serve."""

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
    checked = serving.probe(_check)
    if checked is not None:
        return checked
    return _out(serving.current, tools=None, reopen_pending=True)  # what it serves until the next request


def _check(retriever: Retriever) -> HealthOut:
    # 503 when the store is gone: every retrieve fails then, and a check that only pinged it would say ok.
    # len() picks up what other writers changed, as a request would (StoreError after a rebuild)
    return _out(retriever, tools=len(retriever), reopen_pending=False)


def _out(retriever: Retriever, *, tools: int | None, reopen_pending: bool) -> HealthOut:
    from rated import __version__

    meta = retriever.meta
    return HealthOut(
        status="ok",
        tools=tools,
        encoder=str(meta.encoder),
        policy=meta.policy,
        version=__version__,
        reopen_pending=reopen_pending,
    )
