"""The HTTP service (FastAPI) and the MCP server over a ``Retriever`` (the ``service`` extra)."""

from rated.service.app import create_app
from rated.service.settings import Settings

__all__ = ["Settings", "create_app"]
