"""EcoAgent catalog collectors: real agent tools from the packages the platforms publish.

One module per source (``n8n``, ``langchain``, ``crewai``, ``llamaindex``, ``public_apis``), each reading its
pinned package archives (fetched with ``pip download`` / ``npm pack``, cached, never installed or imported),
plus ``build_catalog`` that merges, deduplicates and scores them.
"""

from rated.catalog.collect.build import SOURCES, BuildResult, SourceReport, build_catalog
from rated.catalog.collect.fetch import Fetcher, FetchError, PackageSpec

__all__ = ["SOURCES", "BuildResult", "FetchError", "Fetcher", "PackageSpec", "SourceReport", "build_catalog"]
