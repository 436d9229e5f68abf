"""State persistence: SQLite (embedded default), Redis (many replicas), memory (tests)."""

from rated.store.base import (
    CatalogStore,
    IndexExistsError,
    LastToolError,
    OutcomeRecord,
    OutcomeStats,
    StateStore,
    Store,
    StoredCatalog,
)
from rated.store.memory import MemoryStore
from rated.store.open import open_store
from rated.store.redis import RedisStore
from rated.store.sqlite import SQLiteStore

__all__ = [
    "CatalogStore",
    "IndexExistsError",
    "LastToolError",
    "MemoryStore",
    "OutcomeRecord",
    "OutcomeStats",
    "RedisStore",
    "SQLiteStore",
    "StateStore",
    "Store",
    "StoredCatalog",
    "open_store",
]
