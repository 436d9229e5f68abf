"""``POST /retrieve`` and ``POST /retrieve/batch``: the best tools for a query, each hit also as a model
API's tool definition when the body names a ``format`` (``rated.catalog.export``), among the tools the
body's ``where`` allows (``rated.tool_filter``: an unknown tool id there is a 404, a filter that allows
none an empty list)."""

from __future__ import annotations

from fastapi import APIRouter

from rated.errors import QueryError
from rated.service.actions import checked_k
from rated.service.deps import MetricsDep, ServingDep, SettingsDep
from rated.service.routes._errors import BODY, responses
from rated.service.schemas import RetrieveIn, RetrieveManyIn, RetrieveManyOut, RetrieveOut

__all__ = ["router"]

router = APIRouter(prefix="/retrieve", tags=["retrieve"])


@router.post("", response_model=RetrieveOut, responses=responses(*BODY, 404, 503))
def retrieve(
    body: RetrieveIn, serving: ServingDep, settings: SettingsDep, metrics: MetricsDep
) -> RetrieveOut:
    k = checked_k(body.k, settings)
    where = None if body.where is None else body.where.parsed()
    hits = serving.call(lambda r: r.retrieve(body.query, k=k, where=where))
    out = RetrieveOut.of(body.query, k, hits, body.format)
    if out.degraded:
        metrics.degraded.inc()
    return out


@router.post("/batch", response_model=RetrieveManyOut, responses=responses(*BODY, 404, 503))
def retrieve_many(
    body: RetrieveManyIn, serving: ServingDep, settings: SettingsDep, metrics: MetricsDep
) -> RetrieveManyOut:
    k = checked_k(body.k, settings)
    if len(body.queries) > settings.max_batch:
        raise QueryError(
            f"{len(body.queries)} queries; a batch holds at most {settings.max_batch} (max_batch)"
        )
    where = None if body.where is None else body.where.parsed()
    ranked = serving.call(lambda r: r.retrieve_many(body.queries, k, where=where))
    results = [RetrieveOut.of(q, k, hits, body.format) for q, hits in zip(body.queries, ranked, strict=True)]
    metrics.degraded.inc(sum(r.degraded for r in results))
    return RetrieveManyOut(count=len(results), results=results)
