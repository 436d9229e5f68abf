"""``GET /metrics``: Prometheus text exposition of this app's registry."""

from __future__ import annotations

from fastapi import APIRouter, Response
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from rated.service.deps import MetricsDep

__all__ = ["router"]

router = APIRouter(prefix="/metrics", tags=["metrics"])


@router.get("", response_class=Response)
def metrics(m: MetricsDep) -> Response:
    return Response(generate_latest(m.registry), media_type=CONTENT_TYPE_LATEST)
