"""Typed dependencies: what a route may ask for (the retriever, the settings, the metrics)."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request

from rated.retriever import Retriever
from rated.service.metrics import Metrics
from rated.service.settings import Settings

__all__ = ["MetricsDep", "RetrieverDep", "SettingsDep"]


def get_retriever(request: Request) -> Retriever:
    return request.app.state.retriever


def get_settings(request: Request) -> Settings:
    return request.app.state.settings


def get_metrics(request: Request) -> Metrics:
    return request.app.state.metrics


RetrieverDep = Annotated[Retriever, Depends(get_retriever)]
SettingsDep = Annotated[Settings, Depends(get_settings)]
MetricsDep = Annotated[Metrics, Depends(get_metrics)]
