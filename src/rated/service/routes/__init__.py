"""One router per file; ``ROUTERS`` is what the app includes."""

from rated.service.routes import dashboard, feedback, health, metrics, retrieve, tools

__all__ = ["ROUTERS"]

ROUTERS = (retrieve.router, feedback.router, tools.router, health.router, metrics.router, dashboard.router)
