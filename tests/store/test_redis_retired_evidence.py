"""Retired-endpoint evidence that a Redis store holds from before the set ``NAMESPACE:evidence`` existed
(rated before eceefaf wrote ``NAMESPACE:e:retired:TOOL_ID`` alone): it goes with its tool all the same,
found by name, so a tool removed and added again, or a rebuilt index, starts without it."""

from __future__ import annotations

import uuid

import numpy as np
import pytest

pytestmark = pytest.mark.redis


@pytest.fixture
def stores(redis_url):
    """A store, a raw client on its server, and its namespace."""
    import redis

    from rated.store.redis import RedisStore

    namespace = f"t{uuid.uuid4().hex[:8]}"
    store = RedisStore(redis_url, namespace=namespace, busy_timeout=30)
    raw = redis.Redis.from_url(redis_url)
    yield store, raw, namespace
    store.close()
    raw.close()


def _put(store, ids):
    store.put_tools(
        ids, [f'{{"id": "{i}"}}' for i in ids], np.ones((len(ids), 3), np.float32), np.ones(len(ids))
    )


def _old(raw, namespace, *tool_ids):
    """Evidence as rated before eceefaf wrote it: the key alone, not registered in the set."""
    for tool_id in tool_ids:
        raw.set(f"{namespace}:e:retired:{tool_id}", b"old")


def test_removing_a_tool_drops_its_unregistered_evidence(stores):
    store, raw, ns = stores
    _put(store, ["a", "b", "a:x", "c"])
    _old(raw, ns, "a", "b", "a:x", "c")
    assert store.load_evidence("retired:a") == b"old"  # what the retriever reads, so what it would count
    store.delete_tools(["a"], keep_one=True)
    assert store.load_evidence("retired:a") is None
    assert [store.load_evidence(f"retired:{t}") for t in ("b", "a:x", "c")] == [b"old"] * 3
    store.put_tools(["a"], ['{"id": "a"}'], np.ones((1, 3), np.float32), np.ones(1), delete=["b"])
    assert store.load_evidence("retired:b") is None  # removed in the change that added "a"
    assert store.load_evidence("retired:a") is None  # the tool added again starts with none
    assert [store.load_evidence(f"retired:{t}") for t in ("a:x", "c")] == [b"old"] * 2
    assert raw.smembers(f"{ns}:evidence") == set()  # nothing registered on the way


def test_removing_drops_registered_and_unregistered_evidence_alike(stores):
    store, raw, ns = stores
    _put(store, ["a", "b"])
    store.update_evidence("retired:a", lambda blob: b"new")
    _old(raw, ns, "b")
    store.delete_tools(["a", "b"])
    assert store.load_evidence("retired:a") is None and store.load_evidence("retired:b") is None
    assert raw.smembers(f"{ns}:evidence") == set()


def test_a_rebuild_and_clear_drop_the_old_catalogs_unregistered_evidence(stores):
    store, raw, ns = stores
    _put(store, ["a", "b"])
    _old(raw, ns, "a", "b")
    store.replace_catalog(["a"], ['{"id": "a"}'], np.ones((1, 3), np.float32), np.ones(1), None, {"k": 1})
    assert [store.load_evidence(k) for k in ("retired:a", "retired:b")] == [None, None]
    _old(raw, ns, "a")
    store.clear()
    assert store.load_evidence("retired:a") is None


def test_ids_with_glob_characters_are_names_not_patterns(stores):
    """Keys are deleted by name (DEL, never KEYS or SCAN with a pattern): removing "a*" or "[ab]" leaves the
    evidence of "ab" and "b", registered or not."""
    store, raw, ns = stores
    ids = ["a*", "a?", "[ab]", "ab", "b", "a:*"]
    _put(store, ids)
    _old(raw, ns, *ids)
    store.update_evidence("retired:ab", lambda blob: b"new")
    store.update_evidence("retired:a*", lambda blob: b"new")
    store.delete_tools(["a*", "[ab]", "a:*"])
    kept = store.load_evidence_many([f"retired:{t}" for t in ids])
    assert kept == {"retired:a?": b"old", "retired:ab": b"new", "retired:b": b"old"}
    assert raw.smembers(f"{ns}:evidence") == {b"retired:ab"}
