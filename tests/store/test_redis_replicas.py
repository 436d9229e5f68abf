"""Several replicas (real processes, each a ``Retriever.open`` on one Redis URL) against one index: no lost
or doubled feedback, the policy state a sequential replay of the log gives, and no replica drifting."""

from __future__ import annotations

import hashlib
import json
import multiprocessing as mp
import random
import uuid
from collections import Counter

import pytest

from rated import Tool
from rated.encode.testing import HashEncoder
from rated.retriever import Retriever

pytestmark = pytest.mark.redis

QUERIES = ["send an email message", "mail a letter to a friend", "weather forecast for a city"]
OUTCOMES = ["success", "tool_error", "timeout", "caller_error", "success"]
TOOLS = [
    Tool(id="hot", name="send_email", description="Send an email message", provider="mailcorp"),
    Tool(id="mail.b", name="email_send", description="Send an email message", provider="mailcorp"),
    Tool(id="mail.c", name="post_mail", description="Mail a letter to a friend"),
    Tool(id="weather", name="weather_forecast", description="Weather forecast for a city"),
    Tool(id="weather.b", name="forecast", description="Weather forecast for a city", provider="meteo"),
]
N_PROCS, N_FEEDBACK = 6, 15


def _now() -> float:
    return 1000.0


def _replica(db: str, worker: int, out: str) -> None:
    r = Retriever.open(db, clock=_now, busy_timeout=30)
    rng = random.Random(worker)
    done = []
    for i in range(N_FEEDBACK):
        query = rng.choice(QUERIES)
        r.retrieve(query, k=3)
        tool = "hot" if i % 2 == 0 else rng.choice(TOOLS).id  # one tool (and provider) everyone hits
        outcome = rng.choice(OUTCOMES)
        r.feedback(tool, outcome, query=query)
        done.append([tool, outcome, query])
    r.close()
    with open(out, "w") as f:
        json.dump(done, f)


def _scores(r: Retriever) -> list[list[tuple[str, float]]]:
    return [[(h.id, h.score) for h in r.retrieve(q, k=5)] for q in QUERIES]


def _qhash(query: str) -> str:
    return hashlib.sha256(query.encode()).hexdigest()[:16]


@pytest.mark.slow
def test_replica_processes_match_a_sequential_replay_of_the_log(redis_url, tmp_path):
    db = f"{redis_url}#p{uuid.uuid4().hex[:8]}"
    builder = Retriever.from_catalog(TOOLS, db=db, encoder=HashEncoder(64), clock=_now)
    observer = Retriever.open(db, clock=_now)  # a replica that never writes
    _scores(observer)
    ctx = mp.get_context("forkserver")
    ctx.set_forkserver_preload(["rated.retriever", "rated.encode.testing", "rated.store.redis", "redis"])
    procs = [ctx.Process(target=_replica, args=(db, w, str(tmp_path / f"{w}.json"))) for w in range(N_PROCS)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
        assert p.exitcode == 0
    acked = [tuple(f) for w in range(N_PROCS) for f in json.loads((tmp_path / f"{w}.json").read_text())]
    log = builder.outcomes(limit=None)
    # every acknowledged feedback logged exactly once
    assert Counter((r.tool_id, r.outcome, r.query_hash) for r in log) == Counter(
        (t, o, _qhash(q)) for t, o, q in acked
    )
    stats = builder.store.outcome_stats()
    for tool in {t for t, _, _ in acked}:
        mine = [o for t, o, _ in acked if t == tool]
        assert stats[tool].successes == mine.count("success")
        assert stats[tool].caller_errors == mine.count("caller_error")
        assert stats[tool].failures == len(mine) - mine.count("success") - mine.count("caller_error")
    # the log's order is the commit order: replaying it alone gives the state the replicas built together
    by_hash = {_qhash(q): q for q in QUERIES}
    replay = Retriever.from_catalog(TOOLS, encoder=HashEncoder(64), clock=_now)
    for r in log:
        replay.feedback(r.tool_id, r.outcome, query=by_hash[r.query_hash])
    fresh = Retriever.open(db, clock=_now)
    assert _scores(observer) == _scores(fresh)  # the silent replica caught up exactly
    for got, want in zip(_scores(fresh), _scores(replay), strict=True):
        assert [i for i, _ in got] == [i for i, _ in want]
        assert [s for _, s in got] == pytest.approx([s for _, s in want], rel=1e-6)
    for r in (builder, observer, fresh):
        r.close()


def test_a_replica_catches_up_after_the_server_was_restored_from_an_older_copy(redis_url):
    """A failover to a lagging copy moves the change counter back; changes numbered anew must not be
    mistaken for ones a replica has already seen, nor the lost ones kept in its memory."""
    import redis

    ns = f"r{uuid.uuid4().hex[:8]}"
    db = f"{redis_url}#{ns}"
    writer = Retriever.from_catalog(TOOLS, db=db, encoder=HashEncoder(64), clock=_now)
    reader = Retriever.open(db, clock=_now)
    for tool in ("hot", "mail.b"):
        writer.feedback(tool, "success", query=QUERIES[0])
    _scores(reader)
    raw = redis.Redis.from_url(redis_url)
    snapshot = {k: raw.dump(k) for k in raw.scan_iter(f"{ns}:*")}
    for tool in ("hot", "hot", "mail.c", "weather"):  # lost in the failover
        writer.feedback(tool, "tool_error", query=QUERIES[0])
    _scores(reader)  # the reader has seen them
    raw.delete(*raw.scan_iter(f"{ns}:*"))
    for key, value in snapshot.items():
        raw.restore(key, 0, value, replace=True)
    raw.close()
    with Retriever.open(db, clock=_now) as other:
        other.feedback("weather.b", "timeout", query=QUERIES[2])  # numbered like a lost change
        assert _scores(reader) == _scores(other)
    writer.close(), reader.close()


def test_catalog_changes_and_a_forced_rebuild_reach_every_replica(redis_url, tmp_path):
    from rated.cli import main
    from rated.errors import ConfigError, StoreError

    db = f"{redis_url}#i{uuid.uuid4().hex[:8]}"
    a = Retriever.from_catalog(TOOLS[:3], db=db, encoder=HashEncoder(64), clock=_now)
    b = Retriever.open(db, clock=_now)
    a.feedback("hot", "tool_error", query=QUERIES[0])
    a.add_tools(TOOLS[3:])
    assert "weather.b" in [h.id for h in b.retrieve(QUERIES[2], k=5)]
    b.remove_tools(["hot", "mail.b", "weather"])
    assert len(a) == 2 and b.tool("mail.c").id == "mail.c"
    with pytest.raises(Exception, match="hot"):
        a.feedback("hot", "success")  # removed by the other replica
    a.remove_tools("mail.c")  # each alone is allowed ...
    with pytest.raises(ConfigError, match="every tool"):
        b.remove_tools("weather.b")  # ... not both: the index keeps one
    assert [t.tool.id for t in b.tools()] == ["weather.b"]
    catalog = tmp_path / "cat.jsonl"
    catalog.write_text("".join(json.dumps(t.model_dump(exclude_none=True)) + "\n" for t in TOOLS[:2]))
    assert main(["index", str(catalog), "--db", db, "--encoder", "hash-64", "--force"]) == 0
    assert sorted(t.tool.id for t in a.tools()) == ["hot", "mail.b"]  # same encoder and policy: adopted
    assert [h.id for h in b.retrieve(QUERIES[0], k=2)] == [h.id for h in a.retrieve(QUERIES[0], k=2)]
    assert a.store.load_states() == {}  # learned state went with the old index
    assert main(["index", str(catalog), "--db", db, "--encoder", "hash-32", "--force"]) == 0
    with pytest.raises(StoreError, match="re-indexed with encoder"):
        b.retrieve(QUERIES[0])
    a.close(), b.close()
