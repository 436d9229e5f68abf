"""The four-tool pool the filter tests share: two platforms spelled in two cases, tags, a shared provider,
three auth kinds and a tool with none of them."""

from __future__ import annotations

from rated import Tool
from rated.catalog.schema import Auth

POOL = [
    Tool(
        id="a",
        name="a",
        source="langchain",
        tags=("Search", "web"),
        provider="acme",
        auth=Auth(type="api_key"),
    ),
    Tool(id="b", name="b", source="n8n", tags=("mail",), provider="acme", auth=Auth(type="none")),
    Tool(id="c", name="c", source="LangChain", tags=("web",), auth=Auth(type="oauth2")),
    Tool(id="d", name="d", source="mcp"),
]
