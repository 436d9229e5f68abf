"""Errors raised by rated.

Every error derives from one root so that callers can catch everything with a single ``except``::

    RatedError
    ├── ConfigError          bad option or setting (weights, k, paths)
    ├── CatalogError         malformed catalog: ``.problems`` lists every (location, field, reason)
    │   └── ToolExistsError  tools to add whose ids are indexed already (``.tool_ids``)
    ├── QueryError           empty, non-text or oversized query
    ├── UnknownToolError     a tool id that the catalog does not hold (``.tool_id``)
    │   ├── UnknownToolNameError  a called name that exported definitions did not issue (``.name``)
    │   └── RemovedToolError      a Toolbox's tool that was removed from its index since (``.db``)
    ├── IndexFormatError     an index/model folder written by another format version, or damaged
    ├── ModelError           the encoder model cannot be prepared or loaded
    ├── DataError            a benchmark dataset is missing or inconsistent
    └── StoreError           the state store cannot be read or written
        └── StoreBusyError   a writer held the lock for too long (retryable)

The CLI maps each class to a non-zero exit code and one clear line; the HTTP service maps them to 4xx/5xx.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from rated.shown import shown

__all__ = [
    "CatalogError",
    "CatalogProblem",
    "ConfigError",
    "DataError",
    "IndexFormatError",
    "ModelError",
    "QueryError",
    "RatedError",
    "RemovedToolError",
    "StoreBusyError",
    "StoreError",
    "ToolExistsError",
    "UnknownToolError",
    "UnknownToolNameError",
]


class RatedError(Exception):
    """Root of every error that rated raises on purpose."""


class ConfigError(RatedError, ValueError):
    """A configuration value is invalid."""


@dataclass(frozen=True)
class CatalogProblem:
    """One defect found while reading a catalog."""

    location: str  # "line 3", "item 12", "tools[4]"
    field: str  # "id", "description", "" for the whole record
    reason: str

    def __str__(self) -> str:
        where = f"{self.location}, field {self.field!r}" if self.field else self.location
        return f"{where}: {self.reason}"


class CatalogError(RatedError, ValueError):
    """A catalog could not be read; ``problems`` lists every defect found, not just the first."""

    def __init__(self, message: str, problems: list[CatalogProblem] | None = None, path: str | None = None):
        self.problems = list(problems or [])
        self.path = path
        detail = ""
        if self.problems:
            shown = "\n".join(f"  - {p}" for p in self.problems[:20])
            more = f"\n  ... and {len(self.problems) - 20} more" if len(self.problems) > 20 else ""
            detail = f"\n{shown}{more}"
        prefix = f"{path}: " if path else ""
        super().__init__(f"{prefix}{message}{detail}")


class ToolExistsError(CatalogError):
    """Tools to add whose ids the index holds already (``tool_ids``): adding never overwrites a tool, whose
    learned state belongs to the tool it was learned for. One line names them; ``problems`` has one each."""

    def __init__(self, tool_ids: Sequence[str]):
        self.tool_ids = list(tool_ids)
        n = len(self.tool_ids)
        listed = ", ".join(shown(i, 80) for i in self.tool_ids[:10])
        more = f" and {n - 10} more" if n > 10 else ""
        super().__init__(
            f"{n} tool id(s) already indexed: {listed}{more} "
            "(remove them first, or give the new tools other ids)"
        )
        # set after the message, which stays one line (a CatalogError lists its problems below it)
        self.problems = [
            CatalogProblem(f"tool {shown(i, 80)}", "id", "already in the index") for i in self.tool_ids
        ]


class QueryError(RatedError, ValueError):
    """A query is empty, not text, or too long."""


class UnknownToolError(RatedError, KeyError):
    """A tool id is not in the catalog."""

    def __init__(self, tool_id: str, where: str = ""):
        self.tool_id = tool_id
        self.where = where  # what named it, when not the call's own tool id argument (a filter key)
        super().__init__(tool_id)

    def __str__(self) -> str:
        prefix = f"{self.where}: " if self.where else ""
        return f"{prefix}unknown tool id: {shown(self.tool_id)}"  # short, whatever was passed as the id


class UnknownToolNameError(UnknownToolError):
    """A function name the model called that tool definitions (``rated.catalog.export``) did not issue:
    made up by the model, or issued for another list. ``name`` is it, ``issued`` the names that were."""

    def __init__(self, name: str, issued: Sequence[str] = ()):
        super().__init__(name)
        self.name = name
        self.issued = list(issued)

    def __str__(self) -> str:
        listed = ", ".join(shown(n, 80) for n in self.issued[:10])
        more = f" and {len(self.issued) - 10} more" if len(self.issued) > 10 else ""
        return f"unknown tool name {shown(self.name)}: these definitions issued {listed or 'none'}{more}"


class RemovedToolError(UnknownToolError):
    """A tool a ``Toolbox`` holds the object of, which its index no longer holds: removed since it was
    indexed, by another process sharing the index (``db`` names it) or through ``toolbox.retriever``."""

    def __init__(self, tool_id: str, db: str = ""):
        super().__init__(tool_id)
        self.db = db

    def __str__(self) -> str:
        at = f" ({self.db})" if self.db else ""
        return (
            f"tool {shown(self.tool_id)} was removed from the index{at} since this toolbox indexed it, by "
            "another process or through toolbox.retriever: toolbox.add_tools indexes it again (with the "
            "object given), or toolbox.remove_tools drops it here"
        )


class IndexFormatError(RatedError):
    """A stored index or model folder has an unexpected format or version."""


class ModelError(RatedError):
    """The encoder model could not be prepared or loaded."""


class DataError(RatedError, ValueError):
    """A benchmark dataset is missing or inconsistent."""


class StoreError(RatedError):
    """The state store could not be read or written."""


class StoreBusyError(StoreError):
    """The store stayed locked by another writer for longer than the timeout."""
