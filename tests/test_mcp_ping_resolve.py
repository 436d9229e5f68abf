"""``aping`` awaited on its own (not through ``ping``, ``mcp_check`` or ``aprobe``, which look the host up
first) keeps to the same rule: a resolver that has not answered by the deadline is this host's failure,
``None`` (nothing said of the server, which was never asked), not the server's ``timeout``. Before, the
SDK's lookup was cancelled at the deadline and the ping counted as a timeout, while the lookup held a
thread of the caller's event loop executor until the resolver gave up (one per ping)."""

from __future__ import annotations

import asyncio
import logging
import socket
import threading
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("mcp")

from rated import probe_checks  # noqa: E402
from rated.mcp_ping import aping, load_sdk  # noqa: E402
from rated.probe_threads import Pool  # noqa: E402

BOUND = 20.0  # seconds the pings get to come back on a busy machine: a safety net, not a speed assertion


@pytest.fixture(autouse=True)
def _fresh_state(monkeypatch) -> None:
    monkeypatch.setattr(probe_checks, "_RESOLVERS", Pool("rated-probe-resolve", 4))
    monkeypatch.setattr(probe_checks, "_warned", set())


@pytest.fixture
def silent(monkeypatch) -> Iterator[list[str]]:
    """``tools.test`` resolves only once the test is over; its lookups, listed."""
    real, release, asked = socket.getaddrinfo, threading.Event(), []

    def getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
        if host in ("tools.test", b"tools.test"):  # anyio passes the name IDNA-encoded
            asked.append(host)
            release.wait(60)
            raise socket.gaierror(socket.EAI_NONAME, "no such name")
        return real(host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    yield asked
    release.set()


def test_aping_counts_a_resolver_that_does_not_answer_as_this_hosts_failure(silent, caplog):
    load_sdk()  # imported before the deadline in any case: not what this test waits on

    async def three_pings() -> tuple[list[Any], list[str]]:
        answers = await asyncio.gather(*(aping("http://tools.test/mcp", 0.3) for _ in range(3)))
        return answers, [t.name for t in threading.enumerate() if t.name.startswith("asyncio_")]

    out: list[Any] = []
    with caplog.at_level(logging.WARNING, logger="rated.probe_checks"):
        thread = threading.Thread(target=lambda: out.append(asyncio.run(three_pings())), daemon=True)
        thread.start()
        thread.join(BOUND)
    assert out, "the pings did not come back"
    answers, executor_threads = out[0]
    assert answers == [None, None, None]  # before: three timeouts
    assert executor_threads == []  # no thread of the caller's loop waits on the resolver
    assert len(silent) == 1  # the three pings waited for one lookup
    warned = [r.getMessage() for r in caplog.records]
    assert any("tools.test" in m and "name resolution did not answer within 0.3 s" in m for m in warned)
