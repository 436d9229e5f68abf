"""The operator's dashboard: which tools fail now, since when, and how traffic and outcomes evolve.

``snapshot`` reads (bounded, read-only), ``page`` renders HTML, ``chart`` draws the PNG; the routes in
``rated.service.routes.dashboard`` only wire them to ``GET /dashboard`` and ``GET /dashboard/outcomes.png``.
"""

from rated.service.dashboard.chart import outcomes_png
from rated.service.dashboard.page import render_page
from rated.service.dashboard.snapshot import MAX_OUTCOMES, Snapshot, read_outcomes, take_snapshot

__all__ = ["MAX_OUTCOMES", "Snapshot", "outcomes_png", "read_outcomes", "render_page", "take_snapshot"]
