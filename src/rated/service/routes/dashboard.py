"""``GET /dashboard`` (an auto-refreshing HTML page) and ``GET /dashboard/outcomes.png`` (its chart).

Plain ``def`` handlers like every route here: the store reads and the drawing run in the thread pool, and
each request reads at most ``MAX_OUTCOMES`` outcome records. Nothing is written to the store.
"""

from __future__ import annotations

import time
from typing import Annotated, Any

from fastapi import APIRouter, Query, Response
from fastapi.responses import HTMLResponse

from rated.service.dashboard import outcomes_png, read_outcomes, render_page, take_snapshot
from rated.service.deps import ServingDep
from rated.service.routes._errors import responses

__all__ = ["router"]

router = APIRouter(prefix="/dashboard", tags=["dashboard"])

_NO_STORE = {"Cache-Control": "no-store"}  # always the state of now, also for the <img> on each reload

Minutes = Annotated[
    int, Query(ge=1, le=1440, description="the window of the summary and the chart, in minutes")
]


def _documented(media_type: str, schema: dict[str, str], description: str) -> dict[int | str, dict[str, Any]]:
    """The 200 in ``media_type``, the errors as ``ErrorOut`` JSON. The routes declare ``response_class=
    Response`` (no media type of its own): with ``HTMLResponse`` FastAPI documents the errors as text/html."""
    ok = {"content": {media_type: {"schema": schema}}, "description": description}
    return {200: ok, **responses(422, 503)}


@router.get(
    "",
    response_class=Response,
    responses=_documented(
        "text/html", {"type": "string"}, "a self-contained HTML page (no script, no external asset)"
    ),
)
def dashboard(
    serving: ServingDep,
    refresh: Annotated[
        int, Query(ge=0, le=3600, description="reload the page every N seconds (0: never)")
    ] = 10,
    minutes: Minutes = 60,
    recent: Annotated[int, Query(ge=1, le=500, description="how many recent outcomes to list")] = 50,
) -> HTMLResponse:
    """Which tools are unhealthy now and since when, tool health bars, traffic and recent outcomes."""
    now = time.time()
    snap = serving.call(lambda r: take_snapshot(r, now, minutes=minutes, recent=recent))
    page = render_page(snap, refresh=refresh, chart_url="dashboard/outcomes.png")
    return HTMLResponse(page, headers=_NO_STORE)


@router.get(
    "/outcomes.png",
    response_class=Response,
    responses=_documented(
        "image/png", {"type": "string", "format": "binary"}, "outcomes over time, stacked by kind"
    ),
)
def outcomes_chart(serving: ServingDep, minutes: Minutes = 60) -> Response:
    """Outcomes per minute over the last ``minutes``, stacked by kind (the span of the latest outcomes
    read when none fall in that window; an empty chart with a note when there are none)."""
    records, capped = serving.call(read_outcomes)
    png = outcomes_png(records, time.time(), minutes, capped=capped)
    return Response(png, media_type="image/png", headers=_NO_STORE)
