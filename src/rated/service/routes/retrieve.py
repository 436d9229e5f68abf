"""``POST /retrieve`` and ``POST /retrieve/batch``: the best tools for a query."""

from __future__ import annotations

from fastapi import APIRouter

from rated.errors import QueryError
from rated.service.actions import checked_k
from rated.service.deps import MetricsDep, RetrieverDep, SettingsDep
from rated.service.routes._errors import BODY, responses
from rated.service.schemas import RetrieveIn, RetrieveManyIn, RetrieveManyOut, RetrieveOut

__all__ = ["router"]

router = APIRouter(prefix="/retrieve", tags=["retrieve"])


@router.post("", response_model=RetrieveOut, responses=responses(*BODY, 503))
def retrieve(
    body: RetrieveIn, retriever: RetrieverDep, settings: SettingsDep, metrics: MetricsDep
) -> RetrieveOut:
    k = checked_k(body.k, settings)
    out = RetrieveOut.of(body.query, k, retriever.retrieve(body.query, k=k))
    if out.degraded:
        metrics.degraded.inc()
    return out


@router.post("/batch", response_model=RetrieveManyOut, responses=responses(*BODY, 503))
def retrieve_many(
    body: RetrieveManyIn, retriever: RetrieverDep, settings: SettingsDep, metrics: MetricsDep
) -> RetrieveManyOut:
    k = checked_k(body.k, settings)
    if len(body.queries) > settings.max_batch:
        raise QueryError(
            f"{len(body.queries)} queries; a batch holds at most {settings.max_batch} (max_batch)"
        )
    results = [
        RetrieveOut.of(q, k, hits)
        for q, hits in zip(body.queries, retriever.retrieve_many(body.queries, k), strict=True)
    ]
    metrics.degraded.inc(sum(r.degraded for r in results))
    return RetrieveManyOut(count=len(results), results=results)
