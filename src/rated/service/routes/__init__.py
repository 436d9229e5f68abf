"""One router per file; ``ROUTERS`` is what the app includes."""

from rated.service.routes import dashboard, feedback, health, metrics, retrieve, tools

__all__ = ["OPEN_ROUTERS", "ROUTERS"]

ROUTERS = (retrieve.router, feedback.router, tools.router, health.router, metrics.router, dashboard.router)
OPEN_ROUTERS = (health.router,)  # answered without the API key: liveness probes carry no credentials
