"""Catalog-row checks and defaults shared by the stores, so that every backend accepts and returns alike."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from rated.errors import ConfigError

__all__ = ["check_tool_rows", "empty_catalog_dim"]


def check_tool_rows(
    ids: Sequence[str],
    records: Sequence[str],
    embeddings: np.ndarray,
    prior: np.ndarray,
    prior_detail: Sequence[Mapping[str, Any]] | None,
) -> tuple[np.ndarray, list[Mapping[str, Any]]]:
    """``put_tools``' arguments, checked to be aligned: the embeddings as C-contiguous little-endian
    float32 ``(n, dim)`` and one prior-detail mapping per tool (empty when none was given)."""
    emb = np.ascontiguousarray(embeddings, dtype="<f4")
    if emb.ndim != 2 or emb.shape[0] != len(ids) or len(records) != len(ids) or len(prior) != len(ids):
        raise ConfigError("put_tools: ids, records, embeddings and prior must have the same length")
    details = list(prior_detail) if prior_detail is not None else [{} for _ in ids]
    return emb, details


def empty_catalog_dim(meta: Mapping[str, Any]) -> int:
    """The embedding size of a catalog with no tools yet: the saved encoder's, else 0."""
    return int(meta.get("encoder", {}).get("dim", 0))
