"""Test-wide set-up: a user's encoder preferences in the environment must not change what tests run, and
the hypothesis settings the fuzz tests share (registered here, so no test imports a helper module: the
tests folder is not a package).

Fuzz profiles ``fuzz-20``, ``fuzz-100`` and ``fuzz-200``: that many examples per property (what each
file's examples cost decides), one fixed run in CI (derandomized, no example database), no deadline, and
the health checks that a slow or data-hungry property trips suppressed. ``FUZZ_N=5000`` runs that many
examples everywhere, with fresh seeds, to hunt. A test module takes one as ``settings.get_profile(name)``.
"""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, settings

FUZZ_SIZES = (20, 100, 200)


def _register_fuzz_profiles() -> None:
    hunt = os.environ.get("FUZZ_N")
    for examples in FUZZ_SIZES:
        settings.register_profile(
            f"fuzz-{examples}",
            max_examples=int(hunt) if hunt else examples,
            deadline=None,
            database=None,
            derandomize=not hunt,
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
        )


_register_fuzz_profiles()


@pytest.fixture(autouse=True)
def _no_encoder_preferences(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("RATED_ENCODER_BACKEND", "RATED_ENCODER_INT8"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def store_contents():
    """Reads everything a refused catalog change must leave as it was in a database: the catalog version
    other processes poll, ids, records, embeddings, prior, learned states (index 5) and the outcome log."""
    from rated.store.open import open_store

    def read(db: object) -> tuple:
        store = open_store(str(db), create=False)
        try:
            cat = store.load_catalog()
            return (
                store.catalog_version(),
                list(cat.ids),
                list(cat.records),
                cat.embeddings.tobytes(),
                cat.prior.tobytes(),
                store.load_states(),
                store.outcomes(None, None),
            )
        finally:
            store.close()

    return read


class _Clock:
    """A clock a test sets: ``clock.t`` is now (seconds), so fading and cool-downs need no sleeping."""

    def __init__(self, t: float = 1000.0) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


@pytest.fixture
def clock() -> _Clock:
    """A settable clock starting at 1000.0 (pass it as a retriever's ``clock=``, move ``clock.t``)."""
    return _Clock()


@pytest.fixture
def fast_probes(monkeypatch: pytest.MonkeyPatch) -> None:
    """Probe rounds as often as a test asks: ``rated.probing.MIN_EVERY`` (1 s) lowered to 1 ms, so that a
    test waiting for a prober's rounds waits milliseconds (``Prober`` and ``Settings`` read it at each
    check)."""
    monkeypatch.setattr("rated.probing.MIN_EVERY", 0.001)


@pytest.fixture
def parses(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Ids whose stored tool record was parsed (``rated.stored_tool.parse_record``), in order."""
    from rated import stored_tool

    seen: list[str] = []
    real = stored_tool.parse_record
    monkeypatch.setattr(
        stored_tool, "parse_record", lambda rec, tid, where: seen.append(tid) or real(rec, tid, where)
    )
    return seen


@pytest.fixture(scope="session")
def filter_catalog() -> list:
    """Five tools with distinct platforms, tags, providers and auth kinds, for the filtered-retrieval tests
    of every surface (HTTP, MCP, CLI): each filter key separates some of them."""
    from rated import Tool
    from rated.catalog.schema import Auth

    return [
        Tool(id="gmail.send", name="send_email", description="Send an email message", source="mcp",
             tags=("mail",), provider="google", auth=Auth(type="oauth2")),
        Tool(id="outlook.send", name="send_mail", description="Send an email message now",
             source="langchain", tags=("mail", "office"), provider="microsoft", auth=Auth(type="oauth2")),
        Tool(id="smtp.send", name="smtp_send", description="Send an email over SMTP", source="n8n",
             tags=("mail",), auth=Auth(type="basic")),
        Tool(id="slack.post", name="post_message", description="Post a message on Slack", source="n8n",
             tags=("chat",), provider="slack", auth=Auth(type="api_key")),
        Tool(id="weather", name="weather_forecast", description="Weather forecast for a city", source="mcp",
             auth=Auth(type="none")),
    ]  # fmt: skip
