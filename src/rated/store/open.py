"""Pick a store from what the user passed as ``db``: nothing, a path, a Redis URL, or a ready store."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from rated.errors import ConfigError
from rated.store.base import Store
from rated.store.memory import MemoryStore
from rated.store.redis_url import split_url
from rated.store.sqlite import SQLiteStore

__all__ = ["REDIS_SCHEMES", "open_store"]

REDIS_SCHEMES = ("redis://", "rediss://", "unix://")


def open_store(db: str | Path | Store | None, *, create: bool = True, **options: Any) -> Store:
    """``None`` -> MemoryStore; ``redis://host:port/n[#namespace]`` -> RedisStore; a path -> SQLiteStore.

    ``options`` go to the store's constructor (``durability``, ``busy_timeout``, ``namespace`` ...). A
    Redis URL can carry rated's own options too, prefixed ``rated_`` so that they never clash with
    redis-py's (``?rated_max_outcomes=500000&rated_namespace=prod&socket_timeout=2``; see
    ``rated.store.redis_url``). An option given both in the URL and here must have the same value.
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

        url, from_url = split_url(text)
        for name, value in from_url.items():
            if name in options and options[name] != value:
                raise ConfigError(
                    f"{name} is given twice, {value!r} in the Redis URL and {options[name]!r} as an option"
                )
            options[name] = value
        return RedisStore(url, create=create, **options)
    return SQLiteStore(Path(text).expanduser(), create=create, **options)
