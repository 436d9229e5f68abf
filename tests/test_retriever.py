"""The Retriever facade: ranking, feedback, persistence, concurrency, crash safety and malformed input."""

from __future__ import annotations

import multiprocessing as mp
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from rated import Tool
from rated.encode.testing import HashEncoder
from rated.errors import (
    CatalogError,
    ConfigError,
    ModelError,
    QueryError,
    StoreError,
    UnknownToolError,
)
from rated.policy import RatedPolicy
from rated.policy.base import BasePolicy
from rated.retriever import Hit, Retriever

QUERY = "send an email message"


def catalog() -> list[Tool]:
    return [
        Tool(id="mail.a", name="send_email", description="Send an email message", provider="mailcorp"),
        Tool(id="mail.b", name="email_send", description="Send an email message"),
        Tool(id="weather", name="weather_forecast", description="Weather forecast for a city"),
        Tool(id="calendar", name="create_event", description="Create a calendar event with a date"),
        Tool(id="search", name="web_search", description="Search the web for pages about a topic"),
        Tool(id="translate", name="translate_text", description="Translate text into another language"),
    ]


@pytest.fixture
def retriever(clock):
    r = Retriever.from_catalog(catalog(), encoder=HashEncoder(64), clock=clock)
    yield r
    r.close()


def ids(hits: list[Hit]) -> list[str]:
    return [h.tool.id for h in hits]


# ---- ranking -----------------------------------------------------------------------------------------
def test_retrieve_ranks_relevant_tools_first_with_components(retriever):
    hits = retriever.retrieve(QUERY, k=3)
    assert len(hits) == 3
    assert set(ids(hits[:2])) == {"mail.a", "mail.b"}
    top = hits[0]
    assert isinstance(top.tool, Tool) and top.id == top.tool.id
    assert [h.rank for h in hits] == [1, 2, 3]
    assert top.score >= hits[1].score >= hits[2].score
    assert top.semantic > hits[2].semantic
    assert 0 <= top.prior <= 1 and top.bandit is not None
    assert top.healthy and not top.degraded
    assert {"semantic", "bandit", "prior"} <= set(top.components)
    assert top.to_dict()["id"] == top.id


def test_k_larger_than_candidates_and_pool(retriever):
    assert len(retriever.retrieve(QUERY, k=50)) == len(catalog())


def test_retrieve_many_matches_retrieve(retriever):
    queries = [QUERY, "weather in Paris", "translate this text"]
    many = retriever.retrieve_many(queries, k=3)
    assert [ids(h) for h in many] == [ids(retriever.retrieve(q, k=3)) for q in queries]
    assert retriever.retrieve_many([], k=3) == []


# ---- feedback ----------------------------------------------------------------------------------------
def test_one_failure_demotes_a_tool_when_a_close_alternative_exists_and_it_recovers(retriever, clock):
    first = ids(retriever.retrieve(QUERY, k=2))[0]
    other = "mail.b" if first == "mail.a" else "mail.a"
    retriever.feedback(first, "tool_error", query=QUERY)
    clock.t += 1
    hits = retriever.retrieve(QUERY, k=6)
    assert ids(hits)[0] == other
    demoted = next(h for h in hits if h.id == first)
    assert not demoted.healthy
    # another, different query for the same tool: the evidence carries over
    assert ids(retriever.retrieve("email message to my boss", k=1)) == [other]
    clock.t += 10 * 86400  # long after the outage
    assert ids(retriever.retrieve(QUERY, k=2))[0] == first


def test_caller_errors_are_logged_but_never_count_against_the_tool(retriever, clock):
    before = retriever.retrieve(QUERY, k=6)
    for _ in range(5):
        retriever.feedback("mail.a", "caller_error", query=QUERY)
    clock.t += 1
    after = retriever.retrieve(QUERY, k=6)
    assert ids(after) == ids(before)
    assert [h.score for h in after] == pytest.approx([h.score for h in before])
    assert retriever.store.load_states() == {}  # nothing allocated
    assert [r.outcome for r in retriever.outcomes("mail.a")] == ["caller_error"] * 5


def test_state_is_allocated_only_for_tools_that_received_feedback(retriever):
    retriever.feedback("mail.b", "success")
    retriever.feedback("mail.a", "timeout", query=QUERY)
    keys = set(retriever.store.load_states())
    assert keys == {"mail.b", "mail.a", "provider:mailcorp"}


def test_feedback_record_and_outcome_forms(retriever):
    retriever.feedback("weather", False)
    retriever.feedback("weather", True, query="weather in Rome")
    retriever.feedback("weather", "RATE_LIMITED", retry_after=30)
    log = retriever.outcomes("weather")
    assert [r.outcome for r in log] == ["tool_error", "success", "rate_limited"]
    assert log[0].query_hash is None and len(log[1].query_hash) == 16
    assert log[2].retry_after == 30.0 and log[0].time == 1000.0


def test_tools_reports_current_health_and_counts(retriever, clock):
    retriever.feedback("mail.b", "success")
    retriever.feedback("mail.a", "tool_error", query=QUERY)
    retriever.feedback("mail.a", "auth_error")
    clock.t += 1
    health = {t.tool.id: t for t in retriever.tools()}
    assert len(health) == len(catalog())
    assert not health["mail.a"].healthy and health["mail.b"].healthy and health["weather"].healthy
    assert health["mail.a"].stats.failures == 2 and health["mail.a"].stats.last_outcome == "auth_error"
    assert health["mail.b"].stats.successes == 1 and health["weather"].stats is None
    assert health["mail.a"].to_dict()["failures"] == 2
    one = retriever.health("mail.a")
    assert one == health["mail.a"]
    assert retriever.health("mail.a", stats=False).stats is None
    with pytest.raises(UnknownToolError):
        retriever.health("nope")


def test_fail_open_when_every_candidate_is_down(retriever, clock):
    for tool in retriever.tools():
        retriever.feedback(tool.tool.id, "auth_error")
    clock.t += 1
    hits = retriever.retrieve(QUERY, k=3)
    assert len(hits) == 3 and all(h.degraded and not h.healthy for h in hits)
    assert set(ids(hits[:2])) == {"mail.a", "mail.b"}  # still ranked by relevance


# ---- malformed input ---------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "query", ["", "   \n\t", None, 42, b"bytes", ["list"], "x" * 10_001, "email \ud800", "\udcff"]
)
def test_bad_queries_raise_query_error(retriever, query):
    with pytest.raises(QueryError):
        retriever.retrieve(query)
    with pytest.raises(QueryError):
        retriever.retrieve_many([QUERY, query])
    if query is not None:  # feedback without a query is allowed
        with pytest.raises(QueryError):
            retriever.feedback("mail.a", "success", query=query)
        assert retriever.outcomes() == []  # nothing was recorded


def test_query_length_limit_is_configurable(clock):
    r = Retriever.from_catalog(catalog(), encoder=HashEncoder(32), max_query_chars=20, clock=clock)
    r.retrieve("x" * 20)
    with pytest.raises(QueryError, match="limit is 20"):
        r.retrieve("x" * 21)
    with pytest.raises(QueryError):
        r.retrieve_many(QUERY)  # one string, not a list


@pytest.mark.parametrize("k", [0, -1, 1.5, True, "3", None])
def test_bad_k_raises_config_error(retriever, k):
    with pytest.raises(ConfigError):
        retriever.retrieve(QUERY, k=k)


def test_bad_feedback_input(retriever):
    with pytest.raises(UnknownToolError, match="nope"):
        retriever.feedback("nope", "success")
    with pytest.raises(ConfigError, match="expected one of"):
        retriever.feedback("mail.a", "exploded")
    for bad in (-1, float("nan"), float("inf"), "soon"):
        with pytest.raises(ConfigError):
            retriever.feedback("mail.a", "rate_limited", retry_after=bad)
    with pytest.raises(QueryError):
        retriever.feedback("mail.a", "success", query="  ")
    assert retriever.outcomes(limit=None) == []  # nothing half-recorded


@pytest.mark.parametrize("limit", ["x", -1, 2.5, True, [3]])
def test_bad_outcomes_limit_raises_config_error(retriever, limit):
    with pytest.raises(ConfigError, match=r"^limit must be None or an integer >= 0, got "):
        retriever.outcomes(limit=limit)


def test_outcomes_limit(retriever):
    for outcome in ("success", "tool_error", "timeout"):
        retriever.feedback("weather", outcome)
    assert [r.outcome for r in retriever.outcomes(limit=2)] == ["tool_error", "timeout"]
    assert retriever.outcomes(limit=0) == []
    assert len(retriever.outcomes(limit=None)) == 3


def test_bad_construction_options(tmp_path):
    enc = HashEncoder(16)
    with pytest.raises(ConfigError, match="unknown Retriever option"):
        Retriever.from_catalog(catalog(), encoder=enc, colour="blue")
    with pytest.raises(ConfigError):
        Retriever.from_catalog(catalog(), encoder=enc, candidates=0)
    with pytest.raises(ConfigError, match="unknown policy"):
        Retriever.from_catalog(catalog(), encoder=enc, policy="nonsense")
    dup = catalog() + [Tool(id="mail.a", name="x", description="dup")]
    with pytest.raises(CatalogError, match="duplicate"):
        Retriever.from_catalog(dup, encoder=enc)
    with pytest.raises(CatalogError):
        Retriever.from_catalog([{"name": "no id or description", "id": ""}], encoder=enc)
    with pytest.raises(CatalogError, match="not found"):
        Retriever.from_catalog(tmp_path / "missing.jsonl", encoder=enc)
    with pytest.raises(StoreError, match="no rated database"):
        Retriever.open(tmp_path / "absent.db")


class _NaNPolicy(BasePolicy):
    name = "nan"

    def _score(self, candidates):
        return np.full(len(candidates), np.nan), {}, None


class _NaNEncoder(HashEncoder):
    def encode_queries(self, texts, **kw):
        return np.full((len(texts), self.dim), np.nan, dtype=np.float32)


def test_nan_scores_and_embeddings_are_rejected():
    r = Retriever.from_catalog(catalog(), encoder=HashEncoder(16), policy=_NaNPolicy())
    with pytest.raises(ConfigError, match="invalid scores|NaN"):
        r.retrieve(QUERY)
    r = Retriever.from_catalog(catalog(), encoder=_NaNEncoder(16))
    with pytest.raises(ModelError):
        r.retrieve(QUERY)


# ---- catalog changes ---------------------------------------------------------------------------------
def test_add_and_remove_tools(tmp_path, clock):
    db = tmp_path / "r.db"
    r = Retriever.from_catalog(catalog(), db=db, encoder=HashEncoder(64), clock=clock)
    other = Retriever.open(db, clock=clock)  # a second process's view of the same file
    r.add_tools([Tool(id="sms", name="send_sms", description="Send an SMS text message to a phone")])
    assert ids(r.retrieve("send an sms text message", k=1)) == ["sms"]
    assert ids(other.retrieve("send an sms text message", k=1)) == ["sms"]  # picked up from the store
    with pytest.raises(CatalogError, match="already"):
        r.add_tools([Tool(id="sms", name="x", description="y")])
    r.feedback("mail.a", "tool_error")
    r.remove_tools(["mail.a"])
    assert "mail.a" not in ids(r.retrieve(QUERY, k=10))
    assert "mail.a" not in ids(other.retrieve(QUERY, k=10))
    assert "mail.a" not in r.store.load_states()
    with pytest.raises(UnknownToolError):
        r.remove_tools(["mail.a"])
    with pytest.raises(UnknownToolError):
        r.feedback("mail.a", "success")
    r.close(), other.close()
    with Retriever.open(db, clock=clock) as reopened:
        assert len(reopened) == len(catalog()) and "sms" in {t.tool.id for t in reopened.tools()}


# ---- persistence -------------------------------------------------------------------------------------
class _CountingEncoder(HashEncoder):
    tool_calls = 0

    def encode_tools(self, texts, **kw):
        type(self).tool_calls += 1
        return super().encode_tools(texts, **kw)


def test_reopen_gives_identical_rankings_without_re_encoding(tmp_path, clock):
    db = tmp_path / "p.db"
    queries = [QUERY, "weather in Paris", "create a meeting in my calendar"]
    with Retriever.from_catalog(catalog(), db=db, encoder=HashEncoder(64), clock=clock) as r:
        r.feedback("mail.a", "tool_error", query=QUERY)
        r.feedback("weather", "success", query="weather in Paris")
        clock.t += 5
        before = [[(h.id, h.score, h.healthy) for h in r.retrieve(q, k=6)] for q in queries]
    enc = _CountingEncoder(64)
    with Retriever.open(db, encoder=enc, clock=clock) as r:
        after = [[(h.id, h.score, h.healthy) for h in r.retrieve(q, k=6)] for q in queries]
    assert after == before
    assert _CountingEncoder.tool_calls == 0  # embeddings came from the store
    with Retriever.open(db, clock=clock) as r:  # encoder rebuilt from the stored identity
        assert [[(h.id, h.score, h.healthy) for h in r.retrieve(q, k=6)] for q in queries] == before


def test_reopen_with_another_encoder_is_refused(tmp_path):
    db = tmp_path / "e.db"
    Retriever.from_catalog(catalog(), db=db, encoder=HashEncoder(64)).close()
    with pytest.raises(ConfigError, match="hash-64-s0"):
        Retriever.open(db, encoder=HashEncoder(32))


def test_open_and_search_while_another_process_holds_the_write_lock(tmp_path, clock):
    import sqlite3

    db = tmp_path / "busy.db"
    with Retriever.from_catalog(catalog(), db=db, encoder=HashEncoder(64), clock=clock) as r:
        r.feedback("mail.a", "success")
    blocker = sqlite3.connect(db, isolation_level=None)
    blocker.execute("BEGIN IMMEDIATE")  # e.g. a `rated feedback` in the middle of its transaction
    try:
        with Retriever.open(db, encoder=HashEncoder(64), clock=clock, busy_timeout=0.2) as r:
            assert set(ids(r.retrieve(QUERY, k=2))) == {"mail.a", "mail.b"}
            assert r.health("mail.a").stats.successes == 1
            assert [o.outcome for o in r.outcomes()] == ["success"]
    finally:
        blocker.execute("ROLLBACK")
        blocker.close()


def test_index_into_existing_db_needs_overwrite(tmp_path):
    db = tmp_path / "o.db"
    with Retriever.from_catalog(catalog(), db=db, encoder=HashEncoder(16)) as r:
        r.feedback("mail.a", "tool_error")
    with pytest.raises(ConfigError, match="already holds an index"):
        Retriever.from_catalog(catalog(), db=db, encoder=HashEncoder(16))
    with Retriever.from_catalog(catalog()[:3], db=db, encoder=HashEncoder(16), overwrite=True) as r:
        assert len(r) == 3 and r.store.load_states() == {}


@pytest.mark.parametrize("backend", ["memory", "sqlite"])
def test_an_index_created_by_another_writer_meanwhile_is_not_overwritten(tmp_path, monkeypatch, backend):
    """Two `rated index CAT --db new.db` at once: the second to write fails instead of replacing the first."""
    from rated import retriever_setup
    from rated.store.memory import MemoryStore

    db = MemoryStore() if backend == "memory" else tmp_path / "race.db"
    encode = retriever_setup.encode_tools
    raced = []

    def encode_while_another_writer_indexes(encoder, tools, progress):
        if not raced:  # after our "is it empty?" check, before our write: the other writer finishes
            raced.append(True)
            Retriever.from_catalog(catalog()[:2], db=db, encoder=HashEncoder(16)).store.close()
        return encode(encoder, tools, progress)

    monkeypatch.setattr(retriever_setup, "encode_tools", encode_while_another_writer_indexes)
    with pytest.raises(ConfigError, match="already holds an index: open it with Retriever.open"):
        Retriever.from_catalog(catalog(), db=db, encoder=HashEncoder(16))
    assert raced
    with Retriever.open(db, encoder=HashEncoder(16)) as r:
        assert [t.tool.id for t in r.tools()] == ["mail.a", "mail.b"]  # the first writer's index stands


def test_policy_and_its_parameters_are_persisted(tmp_path):
    db = tmp_path / "pp.db"
    Retriever.from_catalog(
        catalog(), db=db, encoder=HashEncoder(16), policy="global_mab", policy_params={"w_mab": 0.4}
    ).close()
    with Retriever.open(db) as r:
        assert r.policy.name == "global_mab" and r.policy.w_mab == 0.4


def test_second_retriever_sees_feedback_through_the_store(tmp_path, clock):
    db = tmp_path / "s.db"
    a = Retriever.from_catalog(catalog(), db=db, encoder=HashEncoder(64), clock=clock)
    b = Retriever.open(db, clock=clock)
    top = ids(b.retrieve(QUERY, k=1))[0]
    a.feedback(top, "tool_error", query=QUERY)
    clock.t += 1
    assert ids(b.retrieve(QUERY, k=1))[0] != top
    a.close(), b.close()


# ---- concurrency and crash safety with real processes -------------------------------------------------
N_PROCS, N_FEEDBACK = 4, 15


def _feedback_worker(db: str, worker: int) -> None:
    with Retriever.open(db, busy_timeout=30) as r:
        for i in range(N_FEEDBACK):
            r.feedback("mail.b", "success", query=f"send email number {i} from worker {worker}")


def test_concurrent_processes_lose_no_feedback(tmp_path):
    db = tmp_path / "c.db"
    params = {"gamma": 1.0}  # no discount: the success count must be exactly the number of reports
    Retriever.from_catalog(
        catalog(), db=db, encoder=HashEncoder(32), policy="global_mab", policy_params=params
    ).close()
    ctx = mp.get_context("forkserver")  # real processes; the server imports rated once, workers fork from it
    ctx.set_forkserver_preload(["rated.retriever", "rated.index.semantic", "rated.policy"])
    procs = [ctx.Process(target=_feedback_worker, args=(str(db), w)) for w in range(N_PROCS)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
        assert p.exitcode == 0
    with Retriever.open(db) as r:
        assert len(r.outcomes(limit=None)) == N_PROCS * N_FEEDBACK
        _, successes, failures = r.policy.get_state("mail.b")["counts"]
        assert successes == N_PROCS * N_FEEDBACK and failures == 0


def test_feedback_survives_kill_9_right_after_it_returns(tmp_path):
    db = tmp_path / "k.db"
    Retriever.from_catalog(catalog(), db=db, encoder=HashEncoder(32)).close()
    script = textwrap.dedent(
        f"""
        import time
        from rated.retriever import Retriever
        r = Retriever.open({str(db)!r})
        r.feedback("mail.a", "tool_error", query="send an email")
        print("acked", flush=True)
        time.sleep(60)
        """
    )
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "acked"
    finally:
        proc.kill()
        proc.wait(10)
    with Retriever.open(db) as r:
        assert [rec.outcome for rec in r.outcomes("mail.a")] == ["tool_error"]
        assert {"mail.a", "provider:mailcorp"} <= set(r.store.load_states())


def test_threads_share_one_retriever_safely(tmp_path):
    from concurrent.futures import ThreadPoolExecutor

    db = tmp_path / "t.db"
    r = Retriever.from_catalog(
        catalog(), db=db, encoder=HashEncoder(32), policy="global_mab", policy_params={"gamma": 1.0}
    )

    def work(worker: int) -> None:
        for i in range(20):
            r.feedback("weather", "success", query=f"weather {worker} {i}")
            assert r.retrieve("weather forecast", k=2)

    with ThreadPoolExecutor(4) as pool:  # map re-raises a worker's exception here
        list(pool.map(work, range(4)))
    assert len(r.outcomes(limit=None)) == 80
    assert r.policy.get_state("weather")["counts"][1] == 80
    r.close()


class CountingHashEncoder(HashEncoder):
    def __init__(self, dim: int):
        super().__init__(dim)
        self.query_batches: list[list[str]] = []

    def encode_queries(self, texts, **kwargs):
        self.query_batches.append(list(texts))
        return super().encode_queries(texts, **kwargs)


def test_repeated_query_is_encoded_once_and_ranks_the_same(clock, tmp_path):
    enc = CountingHashEncoder(64)
    r = Retriever.from_catalog(catalog(), db=tmp_path / "r.db", encoder=enc, clock=clock)
    first = r.retrieve(QUERY, k=3)
    enc.query_batches.clear()
    assert [h.score for h in r.retrieve(QUERY, k=3)] == [h.score for h in first]
    r.feedback(first[0].id, "tool_error", query=QUERY)  # the context comes from the cache too
    r.retrieve_many([QUERY, "translate this text"], k=2)
    assert enc.query_batches == [["translate this text"]]
    r.close()
    off = Retriever.open(tmp_path / "r.db", encoder=enc, clock=clock, query_cache=0)
    enc.query_batches.clear()
    off.retrieve(QUERY), off.retrieve(QUERY)
    assert enc.query_batches == [[QUERY], [QUERY]]
    off.close()


def test_bad_query_cache_size_is_a_config_error():
    with pytest.raises(ConfigError, match="query_cache"):
        Retriever.from_catalog(catalog(), encoder=HashEncoder(64), query_cache=-5)


def test_feedback_sees_tools_another_writer_added_or_removed(clock, tmp_path):
    db = tmp_path / "r.db"
    a = Retriever.from_catalog(catalog(), db=db, encoder=HashEncoder(64), clock=clock)
    b = Retriever.open(db, encoder=HashEncoder(64), clock=clock)
    a.add_tools([Tool(id="new.tool", name="fresh_tool", description="A tool added by another writer")])
    b.feedback("new.tool", "success")  # no retrieve in between: b refreshes before checking the id
    a.remove_tools(["weather"])
    with pytest.raises(UnknownToolError):
        b.feedback("weather", "tool_error")
    assert [r.tool_id for r in b.outcomes()] == ["new.tool"]  # the refused one left no trace
    a.close(), b.close()


class ExplodingEncoder(HashEncoder):
    def encode_tools(self, texts, **kwargs):
        raise KeyboardInterrupt  # an interrupted `rated index --force`


def test_an_interrupted_rebuild_keeps_the_old_index(clock, tmp_path):
    db = tmp_path / "r.db"
    Retriever.from_catalog(catalog(), db=db, encoder=HashEncoder(64), clock=clock).close()
    with pytest.raises(KeyboardInterrupt):
        Retriever.from_catalog(catalog()[:2], db=db, encoder=ExplodingEncoder(64), overwrite=True)
    r = Retriever.open(db, encoder=HashEncoder(64), clock=clock)
    assert len(r) == len(catalog()) and r.retrieve(QUERY)[0].id in {"mail.a", "mail.b"}
    r.close()


def test_a_rebuild_by_another_writer_is_adopted_or_refused_by_a_live_retriever(clock, tmp_path):
    db = tmp_path / "r.db"
    live = Retriever.from_catalog(catalog(), db=db, encoder=HashEncoder(64), clock=clock)
    live.retrieve(QUERY)
    Retriever.from_catalog(catalog()[2:], db=db, encoder=HashEncoder(64), overwrite=True).close()
    assert "mail.a" not in {h.id for h in live.retrieve(QUERY, k=10)}  # same encoder: adopted
    Retriever.from_catalog(catalog(), db=db, encoder=HashEncoder(32), overwrite=True).close()
    with pytest.raises(StoreError, match="re-indexed with encoder"):
        live.retrieve(QUERY)
    live.close()


def test_hits_built_on_the_fast_path_equal_hits_built_normally(retriever):
    import dataclasses

    hit = retriever.retrieve(QUERY, k=1)[0]
    fields = {f.name: getattr(hit, f.name) for f in dataclasses.fields(Hit)}
    assert hit == Hit(**fields) and set(vars(hit)) == set(fields)
    with pytest.raises(dataclasses.FrozenInstanceError):
        hit.score = 0.0  # type: ignore[misc]


class _OwnRank(RatedPolicy):
    """RATED behind an overridden ``rank``: the retriever takes its generic path (arrays, checked)."""

    name = "rated"

    def rank(self, candidates):
        return super().rank(candidates)


@pytest.mark.parametrize("params", [{}, {"utility": 0.1}])
def test_hits_from_the_plain_ranking_equal_hits_from_the_ranking_arrays(clock, params):
    plain = Retriever.from_catalog(catalog(), encoder=HashEncoder(64), clock=clock, policy_params=params)
    generic = Retriever.from_catalog(
        catalog(), encoder=HashEncoder(64), clock=clock, policy=_OwnRank(**params)
    )
    for r in (plain, generic):
        r.feedback("mail.a", "tool_error", query=QUERY)
        r.feedback("weather", "rate_limited", retry_after=60.0)
        r.feedback("search", "success", query="find pages")
    clock.t += 5
    for query in (QUERY, "weather in a city", "find pages about a topic"):
        assert plain.retrieve(query, k=6) == generic.retrieve(query, k=6)
    assert not {h.id: h.healthy for h in plain.retrieve("weather forecast", k=6)}["weather"]
    plain.close(), generic.close()


def test_expected_utility_mode_still_reports_a_failing_tool_unhealthy(clock):
    r = Retriever.from_catalog(
        catalog(), encoder=HashEncoder(64), clock=clock, policy_params={"utility": 0.1}
    )
    r.feedback("weather", "tool_error")
    clock.t += 1
    assert not r.health("weather").healthy and r.health("search").healthy
    assert "weather" in {t.tool.id for t in r.tools() if not t.healthy}
    r.close()


def test_the_index_is_built_on_first_search_only(clock, tmp_path, monkeypatch):
    import rated.retriever as module

    db = tmp_path / "r.db"
    Retriever.from_catalog(catalog(), db=db, encoder=HashEncoder(64), clock=clock).close()
    builds = []
    real_build = module.SemanticIndex.build
    monkeypatch.setattr(
        module.SemanticIndex, "build", lambda *a, **k: builds.append(1) or real_build(*a, **k)
    )
    r = Retriever.open(db, encoder=HashEncoder(64), clock=clock)
    r.feedback("weather", "tool_error")
    assert not r.health("weather").healthy and len(r.tools()) == len(catalog())
    assert builds == []  # recording outcomes and reading health need no index (`rated feedback` stays fast)
    first = r.retrieve(QUERY)
    assert r.retrieve(QUERY) == first and builds == [1]
    r.close()


def test_reopening_damaged_settings_is_an_index_format_error(tmp_path):
    import sqlite3

    from rated.errors import IndexFormatError

    db = tmp_path / "d.db"
    Retriever.from_catalog(catalog(), db=db, encoder=HashEncoder(16)).close()
    conn = sqlite3.connect(db)
    conn.execute("UPDATE meta SET value = '{oops' WHERE key = 'config'")
    conn.commit()
    conn.close()
    with pytest.raises(IndexFormatError, match=r"d\.db: damaged index settings"):
        Retriever.open(db, encoder=HashEncoder(16))
