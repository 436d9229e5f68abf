"""The health prober a server runs from its settings (``RATED_PROBE_EVERY``, ``--probe-every``): ``rated
serve`` in each worker, ``rated mcp`` in its process; both follow the retriever they currently serve
(reopened after a rebuild) and stop it when they stop.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from rated.probe_checks import _mcp_sdk_problem, default_check
from rated.probing import Prober, ProbeResult
from rated.retriever import Retriever
from rated.service.settings import Settings

__all__ = ["astop_prober", "start_prober", "stop_prober"]

log = logging.getLogger(__name__)


def start_prober(
    settings: Settings,
    current: Callable[[], Retriever],
    on_round: Callable[[list[ProbeResult]], None] | None = None,
) -> Prober | None:
    """Probe the suspected tools every ``probe_every`` seconds (None: off), each wait within 20% of it so
    that replicas drift apart: ``default_check`` (an MCP ping for tools of MCP servers over HTTP, a
    request to other http(s) endpoints), each check waiting ``probe_timeout`` seconds; ``current`` gives
    the retriever at each round. The mcp SDK's client is imported now, in a thread (``_load_mcp_sdk``)."""
    if settings.probe_every is None:
        return None
    check = default_check(timeout=settings.probe_timeout)
    _load_mcp_sdk()
    return Prober(
        current,
        check,
        every=settings.probe_every,
        budget=settings.probe_budget,
        on_round=on_round,
        timeout=settings.probe_timeout,  # the check's own: it runs as it is, in the prober's thread
    ).start()


def stop_prober(prober: Prober | None, settings: Settings) -> None:
    """Stop after the check in flight (each step of its request waits up to ``probe_timeout``); one still
    running after that records nothing once it answers, so the caller may close the store next. Blocks
    for as long: from an event loop, ``astop_prober``."""
    if prober is not None and not prober.stop(timeout=settings.probe_timeout + 1.0):
        log.warning("a health probe was still running at shutdown; its answer is dropped")


async def astop_prober(prober: Prober | None, settings: Settings) -> None:
    """Stop probing from an event loop (an app's lifespan) without blocking it: the wait runs in a worker
    thread, and lasts only while the prober reads or writes the store (its round's targets, an answer
    being recorded), at most ``busy_timeout`` + 1 s; a check in flight is not waited for (its answer is
    dropped), so a worker stops (SIGHUP, SIGTERM) as soon as its requests are done rather than up to
    ``probe_timeout`` later. The caller may close the store next."""
    if prober is None:
        return
    import anyio

    bound = settings.busy_timeout + 1.0
    # not abandoned when the lifespan is cancelled: the store must not close under a recording
    if not await anyio.to_thread.run_sync(lambda: prober.stop(timeout=bound, wait_check=False)):
        log.warning("the health prober still used the store %.0f s into the shutdown", bound)


def _load_mcp_sdk() -> None:
    """Import the mcp SDK's client in a daemon thread, when ``default_check`` pings MCP servers: the first
    ping would otherwise import it (half a second or more) while the server serves."""
    if _mcp_sdk_problem() is not None:
        return

    def load() -> None:
        from rated.mcp_ping import load_sdk

        try:
            load_sdk()
        except Exception as exc:  # a broken install: the pings record nothing and say why
            log.debug("importing the mcp SDK failed: %s", exc)

    threading.Thread(target=load, name="rated-mcp-import", daemon=True).start()
