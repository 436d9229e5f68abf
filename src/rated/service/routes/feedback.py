"""``POST /feedback``: report how a tool call went (persisted before the response is sent)."""

from __future__ import annotations

from fastapi import APIRouter

from rated.outcome import OutcomeKind
from rated.service.deps import MetricsDep, RetrieverDep
from rated.service.routes._errors import responses
from rated.service.schemas import FeedbackIn, FeedbackOut

__all__ = ["router"]

router = APIRouter(prefix="/feedback", tags=["feedback"])


@router.post("", response_model=FeedbackOut, responses=responses(404, 422, 503))
def feedback(body: FeedbackIn, retriever: RetrieverDep, metrics: MetricsDep) -> FeedbackOut:
    kind = OutcomeKind.parse(body.outcome)
    retriever.feedback(body.tool_id, kind, query=body.query, retry_after=body.retry_after)
    metrics.feedback.labels(kind.value).inc()
    health = retriever.health(body.tool_id, stats=False)
    return FeedbackOut(recorded=True, tool_id=body.tool_id, outcome=kind.value, healthy=health.healthy)
