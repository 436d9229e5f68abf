"""Pick a store from what the user passed as ``db``: nothing, a path, a Redis URL, or a ready store."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from rated.errors import ConfigError
from rated.store.base import Store
from rated.store.memory import MemoryStore
from rated.store.sqlite import SQLiteStore

__all__ = ["REDIS_SCHEMES", "open_store"]

REDIS_SCHEMES = ("redis://", "rediss://", "unix://")


def open_store(db: str | Path | Store | None, *, create: bool = True, **options: Any) -> Store:
    """``None`` -> MemoryStore; ``redis://host:port/n[#namespace]`` -> RedisStore; a path -> SQLiteStore.

    ``options`` go to the store's constructor (``durability``, ``busy_timeout``, ``namespace`` ...).
    """
    if db is None:
        return MemoryStore()
    if not isinstance(db, (str, os.PathLike)):
        if not isinstance(db, Store):  # else an AttributeError deep inside the first store call
            raise ConfigError(
                "db must be None (in memory), a file path, a redis:// URL or a Store, "
                f"got {type(db).__name__}"
            )
        return db
    text = os.fspath(db)
    if text.startswith(REDIS_SCHEMES):
        from rated.store.redis import RedisStore

        url, _, namespace = text.partition("#")
        if namespace:
            options.setdefault("namespace", namespace)
        return RedisStore(url, create=create, **options)
    return SQLiteStore(Path(text).expanduser(), create=create, **options)
