"""A retriever whose store fails mid-feedback must not keep, in memory, learning the store never confirmed."""

from __future__ import annotations

import pytest

from rated import Tool
from rated.encode.testing import HashEncoder
from rated.errors import StoreError
from rated.retriever import Retriever
from rated.store.memory import MemoryStore

QUERY = "send an email message"
TOOLS = [
    Tool(id="mail.a", name="send_email", description="Send an email message", provider="mailcorp"),
    Tool(id="mail.b", name="email_send", description="Send an email message"),
    Tool(id="weather", name="weather_forecast", description="Weather forecast for a city"),
]


class Flaky(MemoryStore):
    """A store that, while ``down``, fails every call: a Redis or network outage."""

    down = False

    def __getattribute__(self, name):
        if object.__getattribute__(self, "down") and name in (
            "update_states", "load_states", "states_since", "version", "catalog_version",
        ):  # fmt: skip
            raise StoreError("store went away")
        return object.__getattribute__(self, name)


def scores(r: Retriever) -> list[tuple[str, float]]:
    return [(h.id, h.score) for h in r.retrieve(QUERY, k=3)]


def test_feedback_the_store_never_confirmed_is_forgotten_once_it_is_back():
    store = Flaky()
    now = lambda: 1000.0  # noqa: E731
    r = Retriever.from_catalog(TOOLS, store, encoder=HashEncoder(64), clock=now)
    before = scores(r)
    real_update = store.update_states

    def learn_then_fail(keys, update, record=None):
        update({})  # the policy learns in memory, then the store goes away before the commit ...
        store.down = True  # ... so the retriever cannot reread the state it must undo either
        raise StoreError("connection lost")

    store.update_states = learn_then_fail
    with pytest.raises(StoreError):
        r.feedback("mail.a", "tool_error", query=QUERY)
    store.update_states = real_update
    store.down = False
    assert store.outcomes() == []  # nothing was stored ...
    assert scores(r) == before  # ... so nothing is held against mail.a here either
    r.feedback("mail.b", "tool_error", query=QUERY)
    fresh = Retriever(store, r.encoder, r.policy, r.meta, clock=now)
    assert scores(r) == scores(fresh)
