"""Redis-specific guarantees: optimistic transactions lose no update across real processes."""

from __future__ import annotations

import multiprocessing as mp
import time
import uuid

import numpy as np
import pytest

from rated.errors import IndexFormatError, StoreError
from rated.store.base import OutcomeRecord
from rated.store.codec import decode_state, encode_state

pytestmark = pytest.mark.redis

N_PROCS, N_UPDATES = 4, 25


def _bump(cur):
    n = decode_state(cur["count"])["n"] if "count" in cur else np.zeros(1, np.int64)
    return {"count": encode_state({"n": n + 1})}


def _writer(url: str, namespace: str, worker: int) -> None:
    from rated.store.redis import RedisStore

    store = RedisStore(url, namespace=namespace, busy_timeout=30)
    for i in range(N_UPDATES):
        store.update_states(["count"], _bump, OutcomeRecord(time.time(), f"w{worker}", "success", str(i)))
    store.close()


def test_concurrent_processes_lose_no_update(redis_url):
    from rated.store.redis import RedisStore

    ns = f"c{uuid.uuid4().hex[:8]}"
    ctx = mp.get_context("spawn")
    procs = [ctx.Process(target=_writer, args=(redis_url, ns, w)) for w in range(N_PROCS)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    store = RedisStore(redis_url, namespace=ns)
    assert int(decode_state(store.load_states()["count"])["n"][0]) == N_PROCS * N_UPDATES
    assert len(store.outcomes(limit=None)) == N_PROCS * N_UPDATES
    store.close()


def test_missing_database_and_format_mismatch(redis_url):
    import redis

    from rated.store.redis import RedisStore

    ns = f"f{uuid.uuid4().hex[:8]}"
    with pytest.raises(StoreError, match="no rated database"):
        RedisStore(redis_url, namespace=ns, create=False)
    redis.Redis.from_url(redis_url).set(f"{ns}:format", "999")
    with pytest.raises(IndexFormatError, match="999"):
        RedisStore(redis_url, namespace=ns)


def test_unreachable_server_is_a_store_error():
    from rated.store.redis import RedisStore

    with pytest.raises(StoreError, match="127.0.0.1:1"):
        RedisStore("redis://127.0.0.1:1/0")
