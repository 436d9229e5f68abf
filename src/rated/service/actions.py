"""What the HTTP routes and the MCP tools both do, written once: they are thin adapters over these."""

from __future__ import annotations

import logging
from collections.abc import Mapping

from rated.errors import ConfigError, StoreError, UnknownToolError
from rated.reported import reported_outcome
from rated.retired import RetiredStatus, is_evidence, status_of
from rated.retriever import Retriever
from rated.service.schemas import FeedbackOut, RetiredOut
from rated.service.settings import Settings

__all__ = ["checked_k", "record_feedback"]

log = logging.getLogger(__name__)


def checked_k(k: int | None, settings: Settings) -> int:
    """``k``, or the service's default when None; a ``ConfigError`` when it exceeds ``max_k``."""
    k = settings.default_k if k is None else k
    if k > settings.max_k:
        raise ConfigError(f"k is {k}; this service returns at most {settings.max_k} tools (max_k)")
    return k


def record_feedback(
    retriever: Retriever,
    tool_id: str,
    query: str | None,
    *,
    outcome: str | None = None,
    status: int | None = None,
    headers: Mapping[str, str] | None = None,
    retry_after: float | None = None,
) -> FeedbackOut:
    """Resolve the outcome (a name, or the tool's HTTP status classified: ``reported_outcome``), persist
    it, and answer with what was recorded and the tool's health right after it; for a 404/410, the tool's
    run of them (``rated.retired``) and whether the policy counted this one as a tool error."""
    reported = reported_outcome(outcome, status=status, headers=headers, retry_after=retry_after)
    learned = retriever.feedback(tool_id, reported, query=query)  # what the policy learned it as
    try:
        health = retriever.health(tool_id, stats=False)
    except (UnknownToolError, StoreError):  # removed, or the index rebuilt, since the outcome was recorded:
        healthy: bool | None = None  # an error now would have the caller report (and record) it twice
    else:
        healthy, tool_id = health.healthy, health.tool.id  # as the catalog spells it (Unicode form)
    # a 404/410: the tool's run of them now (rated.retired), once we know the tool is there
    retired = _run_of(retriever, tool_id) if healthy is not None and is_evidence(reported) else None
    return FeedbackOut(
        recorded=True,
        tool_id=tool_id,
        outcome=reported.kind.value,
        retry_after=reported.retry_after,
        healthy=healthy,
        counted_as=None if learned.kind is reported.kind else learned.kind.value,
        retired=RetiredOut.of(retired),
    )


def _run_of(retriever: Retriever, tool_id: str) -> RetiredStatus | None:
    """The tool's run of 404/410s, read after its report was persisted: what goes wrong here leaves it out
    of the answer (logged), never fails it, or the caller would report (and record) the outcome again."""
    try:
        return status_of(retriever, [tool_id]).get(tool_id)
    except Exception:
        log.warning(
            "could not read the retired-endpoint evidence of %r; answered without it", tool_id, exc_info=True
        )
        return None
