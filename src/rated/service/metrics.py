"""Prometheus metrics of one app instance (its own registry, so several apps can live in one process)."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Histogram

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
