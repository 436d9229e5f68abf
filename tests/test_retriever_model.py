"""The Retriever with the real embedded encoder (slow: loads all-MiniLM-L6-v2)."""

from __future__ import annotations

import pytest

from rated import Tool
from rated.encode.testing import HashEncoder
from rated.errors import ConfigError
from rated.retriever import Retriever

pytestmark = pytest.mark.slow

TOOLS = [
    Tool(id="gmail.send", name="GmailSendMessage", description="Send an email through a Gmail account"),
    Tool(id="weather.now", name="get_current_weather", description="Current weather conditions for a city"),
    Tool(id="cal.create", name="create_calendar_event", description="Add an event to the user's calendar"),
    Tool(id="tr.text", name="translate", description="Translate a text into another language"),
    Tool(id="stock.quote", name="stock_price", description="Latest share price for a ticker symbol"),
]


def test_real_encoder_ranks_and_reopens_identically(tmp_path):
    db = tmp_path / "real.db"
    clock = lambda: 1000.0  # noqa: E731
    queries = ["write an e-mail to my colleague", "is it raining in Lisbon?", "how much is AAPL trading at"]
    with Retriever.from_catalog(TOOLS, db=db, clock=clock) as r:
        tops = [r.retrieve(q, k=1)[0].id for q in queries]
        assert tops == ["gmail.send", "weather.now", "stock.quote"]
        r.feedback("gmail.send", "tool_error", query=queries[0])
        before = [[(h.id, h.score) for h in r.retrieve(q, k=5)] for q in queries]
        assert r.meta.encoder.dim == 384 and r.meta.encoder.fingerprint
    with Retriever.open(db, clock=clock) as r:  # encoder found again from the stored identity
        assert [[(h.id, h.score) for h in r.retrieve(q, k=5)] for q in queries] == before
    with pytest.raises(ConfigError, match="indexed with encoder"):
        Retriever.open(db, encoder=HashEncoder(384))
