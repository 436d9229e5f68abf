"""The health prober a server runs from its settings (``RATED_PROBE_EVERY``, ``--probe-every``): ``rated
serve`` in each worker, ``rated mcp`` in its process; both follow the retriever they currently serve
(reopened after a rebuild) and stop it when they stop.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from rated.probing import Prober, ProbeResult, default_check
from rated.retriever import Retriever
from rated.service.settings import Settings

__all__ = ["start_prober", "stop_prober"]

log = logging.getLogger(__name__)


def start_prober(
    settings: Settings,
    current: Callable[[], Retriever],
    on_round: Callable[[list[ProbeResult]], None] | None = None,
) -> Prober | None:
    """Probe the suspected tools every ``probe_every`` seconds (None: off), each wait within 20% of it so
    that replicas drift apart: ``default_check`` (an MCP ping for tools of MCP servers over HTTP, a
    request to other http(s) endpoints), each check waiting ``probe_timeout`` seconds; ``current`` gives
    the retriever at each round."""
    if settings.probe_every is None:
        return None
    check = default_check(timeout=settings.probe_timeout)
    return Prober(
        current, check, every=settings.probe_every, budget=settings.probe_budget, on_round=on_round
    ).start()


def stop_prober(prober: Prober | None, settings: Settings) -> None:
    """Stop after the check in flight (each step of its request waits up to ``probe_timeout``); one still
    running after that records nothing once it answers, so the caller may close the store next."""
    if prober is not None and not prober.stop(timeout=settings.probe_timeout + 1.0):
        log.warning("a health probe was still running at shutdown; its answer is dropped")
