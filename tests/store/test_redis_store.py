"""Redis-specific guarantees: optimistic transactions lose no update across real processes."""

from __future__ import annotations

import multiprocessing as mp
import re
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
    ctx = mp.get_context("forkserver")  # real processes; the server imports once, workers fork from it
    ctx.set_forkserver_preload(["rated.store.redis", "rated.store.codec", "redis"])
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


def test_retrievers_share_catalog_and_health_through_redis(redis_url):
    from rated import Tool
    from rated.encode.testing import HashEncoder
    from rated.retriever import Retriever

    db = f"{redis_url}#r{uuid.uuid4().hex[:8]}"
    tools = [
        Tool(id="mail.a", name="send_email", description="Send an email message"),
        Tool(id="mail.b", name="email_send", description="Send an email message"),
        Tool(id="weather", name="weather_forecast", description="Weather forecast for a city"),
    ]
    now = lambda: 1000.0  # noqa: E731
    a = Retriever.from_catalog(tools, db=db, encoder=HashEncoder(64), clock=now)
    b = Retriever.open(db, clock=now)  # a second replica
    top = b.retrieve("send an email", k=1)[0].id
    a.feedback(top, "tool_error", query="send an email")
    assert b.retrieve("send an email", k=1)[0].id != top
    a.add_tools([Tool(id="sms", name="send_sms", description="Send an SMS text message")])
    assert b.retrieve("send an sms text message", k=1)[0].id == "sms"
    ranking = [(h.id, h.score) for h in b.retrieve("send an email", k=4)]
    a.close(), b.close()
    with Retriever.open(db, clock=now) as c:
        assert [(h.id, h.score) for h in c.retrieve("send an email", k=4)] == ranking
        assert [r.outcome for r in c.outcomes()] == ["tool_error"]


@pytest.mark.parametrize(
    ("key", "value", "match", "read"),
    [
        ("meta", b"{oops", r"damaged index settings: not valid JSON", "meta"),
        ("prior", b"nope", r"damaged prior for tool 'a': not valid JSON", "catalog"),
        ("prior", b"[0.5]", r"damaged prior for tool 'a'", "catalog"),
        ("emb", b"\x00\x00", r"incomplete record for tool 'a'", "catalog"),
        # a record that is not UTF-8: refused naming the tool, as SQLite refuses one that is not text (an
        # UnicodeDecodeError before, which stopped the service's start-up with a traceback)
        ("tools", b"\xff\xfe{", r"damaged record for tool 'a': not UTF-8 text", "catalog"),
        ("order", b"\xff", r"damaged catalog order: a tool id is not UTF-8 text", "catalog"),
        ("log", b"junk", r"damaged outcome log entry", "log"),
    ],
)
def test_damaged_stored_data_is_an_index_format_error_naming_the_url(redis_url, key, value, match, read):
    import redis

    from rated.store.redis import RedisStore

    ns = f"d{uuid.uuid4().hex[:8]}"
    store = RedisStore(redis_url, namespace=ns)
    store.put_tools(["a"], ['{"id": "a"}'], np.ones((1, 3), np.float32), np.array([0.5]))
    store.set_meta({"k": 1})
    store.update_states(["a"], lambda cur: {"a": b"1"}, OutcomeRecord(1.0, "a", "success"))
    raw = redis.Redis.from_url(redis_url)
    if key == "meta":
        raw.set(f"{ns}:meta", value)
    elif key == "order":
        raw.zadd(f"{ns}:order", {value: 5})
    elif key == "log":
        raw.rpush(f"{ns}:log", value)
    else:
        raw.hset(f"{ns}:{key}", "a", value)
    raw.close()
    read_it = {"meta": store.get_meta, "catalog": store.load_catalog, "log": store.outcomes}[read]
    with pytest.raises(IndexFormatError, match=rf"{redis_url} \({ns}\): {match}"):
        read_it()
    store.close()


@pytest.mark.parametrize(
    "url",
    [
        "redis://localhost:abc/0",
        "redis://[::1/0",
        "redis://localhost:99999/0",
        "redis://h/0?socket_timeout=x",
    ],
)
def test_malformed_url_is_a_config_error(url):
    pytest.importorskip("redis")
    from rated.errors import ConfigError
    from rated.store.open import open_store

    with pytest.raises(ConfigError, match=rf"^invalid Redis URL '{re.escape(url)}': "):
        open_store(url)


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("redis://:s3cret@localhost:abc/0", "redis://:***@localhost:abc/0"),
        ("redis://bob:s3cret@[::1/0", "redis://***@[::1/0"),  # unparsable: all user info hidden
    ],
)
def test_errors_never_show_the_password(url, shown):
    pytest.importorskip("redis")
    from rated.errors import ConfigError
    from rated.store.open import open_store

    with pytest.raises(ConfigError) as info:
        open_store(url)
    assert "s3cret" not in str(info.value) and shown in str(info.value)


def test_store_names_itself_without_the_password():
    from rated.store.redis import _redact

    assert _redact("redis://bob:s3cret@host:6379/0") == "redis://bob:***@host:6379/0"
    assert _redact("rediss://:pw@host/1") == "rediss://:***@host/1"
    assert _redact("redis://host:6379/0") == "redis://host:6379/0"


@pytest.mark.parametrize("namespace", ["", "x:s", "a:b", None])
def test_a_namespace_that_could_share_keys_with_another_is_refused(namespace):
    """Namespace "x:s" would read and write the state keys of namespace "x" ("x:s:TOOL_ID")."""
    pytest.importorskip("redis")
    from rated.errors import ConfigError
    from rated.store.redis import RedisStore

    with pytest.raises(ConfigError, match="namespace"):
        RedisStore("redis://127.0.0.1:1/0", namespace=namespace)


def test_a_log_from_before_the_counters_gets_them_counted_once(redis_url):
    """A Redis index written before the per-tool counters existed: its outcomes are still counted (the
    counters are filled from its log once, on open), and a second opener does not count them again."""
    import redis

    from rated.store.redis import RedisStore
    from rated.store.stats import summarise_outcomes

    ns = f"o{uuid.uuid4().hex[:8]}"
    store = RedisStore(redis_url, namespace=ns)
    kinds = ["success", "tool_error", "caller_error", "timeout"]
    for i in range(11):
        store.update_states([], lambda cur: {}, OutcomeRecord(float(i), f"t{i % 3}", kinds[i % 4]))
    expected = summarise_outcomes(store.outcomes(limit=None))
    assert store.outcome_stats() == expected
    store.close()
    redis.Redis.from_url(redis_url).delete(f"{ns}:ostats")  # as the data was before the counters
    first, second = RedisStore(redis_url, namespace=ns), RedisStore(redis_url, namespace=ns)
    assert first.outcome_stats() == expected == second.outcome_stats()
    assert second.outcome_stats(["t1"]) == {"t1": expected["t1"]}
    first.update_states([], lambda cur: {}, OutcomeRecord(20.0, "t1", "success"))  # and on from there
    assert second.outcome_stats()["t1"].successes == expected["t1"].successes + 1
    first.close()
    second.close()


@pytest.mark.parametrize("write", ["save", "delete"])
def test_a_cached_write_for_a_version_is_refused_when_the_catalog_changes_before_it_commits(redis_url, write):
    """The version is read under WATCH: a catalog change landing between that read and EXEC makes the
    write run again, and then find the version gone."""
    from rated.store.redis import RedisStore

    ns = f"k{uuid.uuid4().hex[:8]}"
    store = RedisStore(redis_url, namespace=ns)
    store.save_cached("hnsw-graph", b"newer writer's")
    version = store.catalog_version()
    real_pipeline, reads = store._r.pipeline, []

    def pipeline(*args, **kwargs):
        pipe = real_pipeline(*args, **kwargs)
        real_get = pipe.get

        def get(key):
            value = real_get(key)
            reads.append(value)
            if len(reads) == 1:  # another writer's catalog change, after the read, before EXEC
                store._r.incr(f"{ns}:catver")
            return value

        pipe.get = get
        return pipe

    store._r.pipeline = pipeline
    if write == "save":
        assert store.save_cached("hnsw-graph", b"stale", catalog_version=version) is False
    else:
        assert store.delete_cached("hnsw-graph", catalog_version=version) is False
    store._r.pipeline = real_pipeline
    assert len(reads) == 2  # read again after the conflict
    assert store.load_cached("hnsw-graph") == b"newer writer's"
    store.close()


@pytest.mark.parametrize(
    ("change", "late_key", "runs", "kept"),
    [
        ({"ids": ["b"]}, "retired:a", 1, True),  # in place: a 404 report about another tool is no conflict
        ({"ids": ["b", "new"]}, "retired:new", 2, False),  # inserted: what a late writer left goes
        ({"ids": ["b"], "delete": ["c"]}, "retired:c", 2, False),  # deleted: its evidence goes with it
    ],
)
def test_put_tools_reruns_for_evidence_written_meanwhile_only_when_it_inserts_or_deletes(
    redis_url, change, late_key, runs, kept
):
    """Evidence another client writes between put_tools' reads and its EXEC: dropped in the same change
    when it is under an id the change inserts or deletes (the evidence set is watched then), and no reason
    to run the change again when it only replaces tools in place."""
    from rated.store.redis import RedisStore

    ns = f"p{uuid.uuid4().hex[:8]}"
    store, other = RedisStore(redis_url, namespace=ns), RedisStore(redis_url, namespace=ns)
    ids = ["a", "b", "c"]
    store.put_tools(ids, [f'{{"id": "{i}"}}' for i in ids], np.ones((3, 2), np.float32), np.ones(3))
    real_pipeline, bodies = store._r.pipeline, []

    def pipeline(*args, **kwargs):
        pipe = real_pipeline(*args, **kwargs)
        real_multi = pipe.multi

        def multi():
            bodies.append(1)
            if len(bodies) == 1:  # another client's evidence write, after the reads, before EXEC
                other.update_evidence(late_key, lambda blob: b"late")
            return real_multi()

        pipe.multi = multi
        return pipe

    store._r.pipeline = pipeline
    new = change["ids"]
    store.put_tools(
        new,
        [f'{{"id": "{i}", "v": 2}}' for i in new],
        np.full((len(new), 2), 2, np.float32),
        np.ones(len(new)),
        delete=change.get("delete", ()),
    )
    store._r.pipeline = real_pipeline
    assert len(bodies) == runs
    assert other.load_evidence(late_key) == (b"late" if kept else None)
    assert {"b", *new} <= set(other.load_catalog().ids)
    store.close()
    other.close()
