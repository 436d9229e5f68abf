"""The catalog the retired-endpoint tests of every surface share (HTTP, MCP, dashboard, CLI), and the
clean history that makes three different queries answering 404/410 enough evidence (``rated.retired``).

Imported by ``tests/service/conftest.py`` and ``tests/cli/conftest.py`` (their ``retriever`` and ``db``
fixtures) and by the tests that name its tools: the two folders are siblings, so one module serves both.
"""

from __future__ import annotations

import unicodedata

from rated import Tool
from rated.retriever import Retriever

CAFE = unicodedata.normalize("NFC", "café.menu")  # an id a client may type in another Unicode form
TOOLS = [
    Tool(id="mail.a", name="send_email", description="Send an email message to a recipient"),
    Tool(id="mail.b", name="email_send", description="Send an email"),
    Tool(id="weather", name="weather_forecast", description="Weather forecast for a city"),
    Tool(id=CAFE, name="cafe_menu", description="The menu of a cafe"),
]
# the tools with a clean history, and the topic of its queries; mail.b and weather have none (need 10)
CLEAN = {"mail.a": "email message", CAFE: "menu"}


def record_clean_history(retriever: Retriever) -> None:
    """Twenty successes from different queries for each tool in ``CLEAN``: with that much history, 404/410
    from three different queries are enough to count as a tool error."""
    for tool_id, topic in CLEAN.items():
        for i in range(20):
            retriever.feedback(tool_id, "success", query=f"{topic} number {i}")
