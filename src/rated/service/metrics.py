"""Prometheus metrics of one app instance (its own registry, so several apps can live in one process).

Counters and the latency histogram are updated as requests run; the catalog gauges (``rated_tools``,
``rated_unhealthy_tools``) are read from the served retriever when Prometheus scrapes, so an alert on
failing tools needs no request traffic to stay current.
"""

from __future__ import annotations

from collections.abc import Callable

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

__all__ = ["Metrics"]

_LATENCY_BUCKETS = (0.0005, 0.001, 0.002, 0.003, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0, 5.0)


class Metrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.requests = Counter(
            "rated_http_requests_total",
            "HTTP requests by route and status",
            ["route", "status"],
            registry=self.registry,
        )
        self.latency = Histogram(
            "rated_http_request_seconds",
            "HTTP request latency by route",
            ["route"],
            buckets=_LATENCY_BUCKETS,
            registry=self.registry,
        )
        self.feedback = Counter(
            "rated_feedback_total", "Outcomes reported, by kind", ["outcome"], registry=self.registry
        )
        self.degraded = Counter(
            "rated_degraded_rankings_total",
            "Rankings in which no candidate looked healthy (fail open)",
            registry=self.registry,
        )
        self.errors = Counter(
            "rated_errors_total",
            "Requests that ended in a rated error, by class",
            ["error"],
            registry=self.registry,
        )
        self.reopens = Counter(
            "rated_index_reopens_total",
            "Times the index was rebuilt under the service with another encoder or policy and reopened",
            registry=self.registry,
        )
        self.catalog_changes = Counter(
            "rated_catalog_changes_total",
            "Tools added (POST /tools, PUT /tools), updated in place (PUT /tools) or removed (DELETE "
            "/tools/{id}, PUT /tools with prune) through this service, by change",
            ["change"],
            registry=self.registry,
        )
        for change in (
            "added",
            "updated",
            "removed",
        ):  # exposed at 0 from the start: rate() sees the first change
            self.catalog_changes.labels(change)
        self.tools = Gauge("rated_tools", "Tools in the served catalog", registry=self.registry)
        self.unhealthy = Gauge(
            "rated_unhealthy_tools",
            "Tools the policy currently considers unhealthy (ranked last, or priced down)",
            registry=self.registry,
        )

    def watch_catalog(self, count: Callable[[], tuple[int, int] | None]) -> None:
        """Read ``(tools, unhealthy tools)`` from ``count`` at each scrape (NaN when it fails: the
        store may be gone, which /health reports; a scrape must not fail with it; and NaN for None: an
        index rebuilt under the service, which a scrape does not reopen)."""

        def read(which: int) -> float:
            try:
                counts = count()
                return float("nan") if counts is None else float(counts[which])
            except Exception:
                return float("nan")

        self.tools.set_function(lambda: read(0))
        self.unhealthy.set_function(lambda: read(1))
