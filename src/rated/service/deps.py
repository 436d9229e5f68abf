"""Typed dependencies: what a route may ask for (the served retriever, the settings, the metrics)."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request

from rated.service.metrics import Metrics
from rated.service.reopen import Reopening
from rated.service.settings import Settings

__all__ = ["MetricsDep", "ServingDep", "SettingsDep"]


def get_serving(request: Request) -> Reopening:
    return request.app.state.serving


def get_settings(request: Request) -> Settings:
    return request.app.state.settings


def get_metrics(request: Request) -> Metrics:
    return request.app.state.metrics


# Routes get the retriever only through ``serving.call(fn)``: an index rebuilt under the service with
# another encoder or policy is then reopened and the request retried, instead of a 503 until a restart.
ServingDep = Annotated[Reopening, Depends(get_serving)]
SettingsDep = Annotated[Settings, Depends(get_settings)]
MetricsDep = Annotated[Metrics, Depends(get_metrics)]
