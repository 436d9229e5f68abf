"""rated: reliability-aware tool retrieval for AI agents (RATED, CIKM 2026).

Semantic retrieval over a tool catalog, re-ranked by a contextual bandit that learns from every execution
outcome, so agents stop picking tools that are failing and return to them once they recover.
"""

from rated.catalog.export import ToolDefinitions, tool_definitions
from rated.catalog.schema import Auth, AuthType, Provenance, Tool
from rated.classify import outcome_from_exception, outcome_from_status
from rated.errors import (
    CatalogError,
    ConfigError,
    DataError,
    IndexFormatError,
    ModelError,
    QueryError,
    RatedError,
    RemovedToolError,
    StoreBusyError,
    StoreError,
    ToolExistsError,
    UnknownToolError,
    UnknownToolNameError,
)
from rated.outcome import Outcome, OutcomeKind
from rated.policy.base import BasePolicy, Candidates, Feedback, Policy, Ranking
from rated.retriever import Hit, Retriever, SyncReport, ToolHealth
from rated.tool_filter import ToolFilter
from rated.toolbox import Selected, Toolbox
from rated.tracking import AsyncTrackedCall, TrackedCall

__version__ = "0.1.0"

__all__ = [
    "AsyncTrackedCall",
    "Auth",
    "AuthType",
    "BasePolicy",
    "Candidates",
    "CatalogError",
    "ConfigError",
    "DataError",
    "Feedback",
    "Hit",
    "IndexFormatError",
    "ModelError",
    "Outcome",
    "OutcomeKind",
    "Policy",
    "Provenance",
    "QueryError",
    "Ranking",
    "RatedError",
    "RemovedToolError",
    "Retriever",
    "Selected",
    "StoreBusyError",
    "StoreError",
    "SyncReport",
    "Tool",
    "ToolDefinitions",
    "ToolExistsError",
    "ToolFilter",
    "ToolHealth",
    "Toolbox",
    "TrackedCall",
    "UnknownToolError",
    "UnknownToolNameError",
    "outcome_from_exception",
    "outcome_from_status",
    "tool_definitions",
    "__version__",
]
