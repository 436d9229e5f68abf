"""``create_app(settings)``: assembles the FastAPI app (routers, error handler, metrics); no logic here.

Routes call the ``Retriever``; they hold no ranking logic. Handlers are plain ``def`` (run in the thread
pool) because retrieval is CPU-bound and the SQLite store blocks; the retriever is thread-safe. They reach
it through ``reopen.Reopening``: an index rebuilt under the running service with another encoder or
policy is reopened over the same store (once, whatever the number of requests failing together), and a
service nobody restarts keeps serving.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import cast

from fastapi import Depends, FastAPI, Request, Response
from fastapi.responses import JSONResponse
from starlette.routing import Route

from rated.errors import ConfigError
from rated.probing import ProbeResult
from rated.retriever import Retriever
from rated.service.auth import KeyFirst, require_api_key
from rated.service.errors import error_response, install_error_handler
from rated.service.limits import BodyLimit
from rated.service.metrics import Metrics
from rated.service.probes import astop_prober, start_prober
from rated.service.reopen import Reopening
from rated.service.routes import OPEN_ROUTERS, ROUTERS
from rated.service.settings import Settings

__all__ = ["app_from_env", "create_app"]

log = logging.getLogger(__name__)

_RESTART_HINT = "restart the HTTP service (rated serve)"


def create_app(
    settings: Settings | None = None,
    *,
    retriever: Retriever | None = None,
    metrics: Metrics | None = None,
) -> FastAPI:
    """The HTTP service. Pass a ready ``retriever`` (it stays yours to close), or let the app open
    ``settings.db`` at start-up and close it at shutdown. A retriever reopened after a rebuild shares the
    store of the first one, so that store is all there is to close, and a passed one's stays open.
    ``metrics``: this app's own by default (``Metrics(multiprocess=True)`` to sum worker processes)."""
    from rated import __version__

    settings = settings or Settings.from_env()
    if retriever is None and not settings.db:
        raise ConfigError("the service needs a database: set RATED_DB or pass --db")

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        # settings.db is set when no retriever is given (checked above)
        first = retriever or Retriever.open(cast(str, settings.db), busy_timeout=settings.busy_timeout)
        stop = threading.Event()
        try:
            first.index  # noqa: B018 - build the index before the first request

            def parse_in_background(target: Retriever) -> None:  # Retriever.parse_tools, off the request path
                app.state.parsing = threading.Thread(
                    target=_parse_in_background, args=(target, stop), name="rated-parse-tools", daemon=True
                )
                app.state.parsing.start()

            def reopened() -> None:  # a retriever reopened after a rebuild has parsed no record either
                app.state.metrics.reopens.inc()
                parse_in_background(serving.current)

            serving = app.state.serving = Reopening(first, restart_hint=_RESTART_HINT, on_reopen=reopened)
            # a scrape never reopens a rebuilt index (seconds with a real encoder): NaN until a request does
            app.state.metrics.watch_catalog(lambda: serving.probe(_catalog_health))
            parse_in_background(first)
            app.state.prober = start_prober(settings, lambda: serving.current, _counted(app.state.metrics))
            yield
        finally:
            stop.set()
            # before the store closes; the event loop serves on meanwhile
            await astop_prober(getattr(app.state, "prober", None), settings)
            if retriever is None:
                first.close()  # the store every reopened retriever shares

    app = FastAPI(
        title="rated",
        version=__version__,
        summary="Reliability-aware tool retrieval for AI agents",
        lifespan=lifespan,
        generate_unique_id_function=lambda route: route.name,  # stable OpenAPI operation ids
    )
    app.state.settings = settings
    app.state.metrics = metrics or Metrics()
    install_error_handler(app)
    keyed = [Depends(require_api_key)] if settings.api_key is not None else []
    for router in ROUTERS:
        app.include_router(router, dependencies=[] if router in OPEN_ROUTERS else keyed)
    errors = app.state.metrics.errors
    app.add_middleware(
        BodyLimit,
        max_bytes=settings.max_body_bytes,
        on_reject=lambda: errors.labels("RequestTooLarge").inc(),
    )
    if keyed:  # outside BodyLimit: a caller without the key learns nothing, not even the body limit
        prefixes = [router.prefix for router in ROUTERS if router not in OPEN_ROUTERS]
        app.add_middleware(KeyFirst, prefixes=prefixes, respond=error_response)
    app.middleware("http")(_observe)  # added last: outermost, so it also counts the 413s
    return app


def app_from_env() -> FastAPI:
    """The app of one worker process (``rated serve --workers N``; or ``uvicorn --factory
    rated.service.app:app_from_env``): settings from ``RATED_*``, its own retriever opened over the shared
    store at start-up, and metrics summed over the workers when ``$PROMETHEUS_MULTIPROC_DIR`` is set. A
    worker ``rated serve`` started stops itself once that parent is gone (killed: it could not stop it)."""
    import os

    from rated.service.metrics import MULTIPROC_DIR_ENV
    from rated.service.workers import PARENT_PID_ENV, stop_with_parent

    app = create_app(Settings.from_env(), metrics=Metrics(multiprocess=MULTIPROC_DIR_ENV in os.environ))
    if os.environ.get(PARENT_PID_ENV, "").isdigit():
        stop_with_parent(int(os.environ[PARENT_PID_ENV]))
    return app


def _counted(metrics: Metrics) -> Callable[[list[ProbeResult]], None]:
    """Each probe round's outcomes counted in ``rated_probes_total``."""

    def count(results: list[ProbeResult]) -> None:
        for result in results:
            label = (
                result.outcome.kind.value
                if result.outcome
                else "not_recorded"
                if result.error
                else "unchecked"
            )
            metrics.probes.labels(label).inc()

    return count


def _parse_in_background(retriever: Retriever, stop: threading.Event) -> None:
    """Validate the stored tool records off the request path (``Retriever.parse_tools``)."""
    try:
        damaged = retriever.parse_tools(stop)
    except Exception:  # a bug here must not go unseen, nor stop the service: requests parse on need
        log.exception("parsing the stored tool records in the background failed")
        return
    if damaged:
        log.warning("%d stored tool record(s) are damaged: requests that need them answer an error", damaged)


def _catalog_health(retriever: Retriever) -> tuple[int, int]:
    """``(tools, unhealthy tools)`` for the catalog gauges."""
    tools = retriever.tools(stats=False)
    return len(tools), sum(not t.healthy for t in tools)


def _route_label(request: Request) -> str:
    """The path template of the app's route that served ``request`` (matched, or only its method did:
    a 405), else ``unmatched``. FastAPI puts its API routes in the scope as ``route``; its own (``/docs``,
    ``/openapi.json``, ``/redoc``) leave only their ``endpoint``, looked up among the app's routes. Never
    the raw path: a label per URL tried would grow without bound."""
    route = request.scope.get("route")
    if isinstance(route, Route):
        return route.path
    endpoint = request.scope.get("endpoint")
    if endpoint is not None:
        for route in request.app.routes:
            if isinstance(route, Route) and route.endpoint is endpoint:
                return route.path
    return "unmatched"


async def _observe(request: Request, call_next: Callable[[Request], Awaitable[Response]]) -> Response:
    """Count and time every request under its route template (not the raw path: bounded labels): an API
    route's or FastAPI's own (``/docs``, ``/openapi.json``, ``/redoc``), and ``unmatched`` for a request
    no route served (a 404 for any URL, a body refused before routing).

    An unexpected exception (a bug) is answered here, as a 500 in the one error shape, so that it is
    counted too: raised on, it would pass this middleware and reach the client as a plain-text 500
    that no metric shows.
    """
    start = time.perf_counter()
    metrics: Metrics = request.app.state.metrics
    try:
        response = await call_next(request)
    except Exception as exc:
        log.exception("%s %s raised an unexpected exception", request.method, request.url.path)
        metrics.errors.labels("InternalError").inc()
        response = JSONResponse(
            {
                "error": "InternalError",
                "detail": f"internal error: {type(exc).__name__} (a bug; traceback in the server log)",
            },
            status_code=500,
        )
    name = _route_label(request)
    metrics.latency.labels(name).observe(time.perf_counter() - start)
    metrics.requests.labels(name, str(response.status_code)).inc()
    return response
