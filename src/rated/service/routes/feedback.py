"""``POST /feedback``: report how a tool call went, as an outcome name or as the HTTP status (and headers)
the tool answered with, which rated classifies (persisted before the response is sent)."""

from __future__ import annotations

from fastapi import APIRouter

from rated.service.actions import record_feedback
from rated.service.deps import MetricsDep, ServingDep
from rated.service.routes._errors import BODY, responses
from rated.service.schemas import FeedbackIn, FeedbackOut

__all__ = ["router"]

router = APIRouter(prefix="/feedback", tags=["feedback"])


@router.post("", response_model=FeedbackOut, responses=responses(*BODY, 404, 503))
def feedback(body: FeedbackIn, serving: ServingDep, metrics: MetricsDep) -> FeedbackOut:
    out = serving.call(
        lambda r: record_feedback(
            r,
            body.tool_id,
            body.query,
            outcome=body.outcome,
            status=body.status,
            headers=body.headers,
            retry_after=body.retry_after,
        )
    )
    metrics.feedback.labels(out.outcome).inc()
    return out
