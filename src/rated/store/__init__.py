"""State persistence: SQLite (embedded default), Redis (many replicas), memory (tests)."""

from rated.store.base import OutcomeRecord, StateStore

__all__ = ["OutcomeRecord", "StateStore"]
