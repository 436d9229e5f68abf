"""The Retriever facade under the inputs an agent developer gets wrong: plug-in encoders that break the
protocol, out-of-range settings, shared policy objects, batch errors, numpy numbers; plus concurrent catalog
changes and reopening after add/remove/feedback in a fresh process."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from rated import Tool
from rated import retriever_setup as setup
from rated.encode.testing import HashEncoder
from rated.errors import ConfigError, ModelError, QueryError, UnknownToolError
from rated.outcome import Outcome
from rated.policy.rated import RatedPolicy
from rated.retriever import Retriever
from rated.store.memory import MemoryStore

QUERY = "send an email message"


def catalog() -> list[Tool]:
    return [
        Tool(id="mail.a", name="send_email", description="Send an email message", provider="mailcorp"),
        Tool(id="mail.b", name="email_send", description="Send an email message"),
        Tool(id="weather", name="weather_forecast", description="Weather forecast for a city"),
        Tool(id="search", name="web_search", description="Search the web for pages about a topic"),
        Tool(id="translate", name="translate_text", description="Translate text into another language"),
    ]


def ids(hits) -> list[str]:
    return [h.id for h in hits]


class ScaledEncoder:
    """A user-defined encoder (not a HashEncoder subclass) whose rows are not unit-norm."""

    def __init__(self, scale: float = 1.0, query_scale: float | None = None, dim: int = 24):
        self.name, self.dim = "my-encoder", dim
        self._inner = HashEncoder(dim, seed=7)
        self.scale = scale
        self.query_scale = scale if query_scale is None else query_scale

    def encode_tools(self, texts, *, batch_size=64, progress=False):
        return self._inner.encode_tools(texts) * self.scale

    def encode_queries(self, texts, *, batch_size=64, progress=False):
        return self._inner.encode_queries(texts) * self.query_scale


# ---- batches ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("bad", ["", "   ", 7, None])
def test_retrieve_many_names_the_bad_query(bad):
    r = Retriever.from_catalog(catalog(), encoder=HashEncoder(32))
    with pytest.raises(QueryError, match=r"^queries\[2\]: "):
        r.retrieve_many([QUERY, "weather", bad, "search"], k=2)
    with pytest.raises(QueryError, match="list of queries, got NoneType"):
        r.retrieve_many(None)  # type: ignore[arg-type]
    assert r.retrieve_many([], k=3) == []


# ---- plug-in encoders ------------------------------------------------------------------------------------
@pytest.mark.parametrize("scale", [10.0, 0.05])
def test_an_encoder_without_unit_rows_ranks_like_its_normalised_self(scale):
    plain = Retriever.from_catalog(catalog(), encoder=ScaledEncoder(1.0), clock=lambda: 0.0)
    scaled = Retriever.from_catalog(catalog(), encoder=ScaledEncoder(scale), clock=lambda: 0.0)
    for query in (QUERY, "weather in Paris", "translate this"):
        a, b = plain.retrieve(query, k=5), scaled.retrieve(query, k=5)
        assert ids(a) == ids(b)
        # unnormalised rows used to saturate (scale 10: every dense cosine clipped to 1) or shrink scores
        assert [h.semantic for h in a] == pytest.approx([h.semantic for h in b], abs=1e-5)
    assert np.allclose(np.linalg.norm(scaled.index._dense.vectors, axis=1), 1.0, atol=1e-5)


def test_an_all_zero_embedding_is_a_model_error():
    with pytest.raises(ModelError, match="all-zero tool embedding"):
        Retriever.from_catalog(catalog(), encoder=ScaledEncoder(0.0))
    r = Retriever.from_catalog(catalog(), encoder=ScaledEncoder(1.0, query_scale=0.0))
    with pytest.raises(ModelError, match="all-zero query embedding"):
        r.retrieve(QUERY)
    with pytest.raises(ModelError, match=r"shape \(5, 12\), expected \(5, 24\)"):
        Retriever.from_catalog(catalog(), encoder=_WrongDim())


class _WrongDim(ScaledEncoder):
    def encode_tools(self, texts, *, batch_size=64, progress=False):
        return np.ones((len(texts), 12), np.float32)


class _NoName:
    dim = 8

    def encode_queries(self, texts, **kw):
        return HashEncoder(8).encode_queries(texts)

    def encode_tools(self, texts, **kw):
        return HashEncoder(8).encode_tools(texts)


class _StrDim(ScaledEncoder):
    def __init__(self):
        super().__init__()
        self.dim = "24"


@pytest.mark.parametrize(
    ("encoder", "match"),
    [(32, "must implement rated.encode.Encoder"), (_NoName(), "got _NoName"), (_StrDim(), "dim '24'")],
)
def test_an_object_that_is_not_an_encoder_is_a_config_error(encoder, match):
    with pytest.raises(ConfigError, match=match):
        Retriever.from_catalog(catalog(), encoder=encoder)


def test_reopening_a_custom_encoder_index_without_it_names_the_encoder_and_loads_nothing(
    tmp_path, monkeypatch
):
    db = tmp_path / "custom.db"
    Retriever.from_catalog(catalog(), db=db, encoder=ScaledEncoder()).close()

    def no_default(*args, **kwargs):
        raise AssertionError("the default model must not be prepared for an index it cannot serve")

    monkeypatch.setattr(setup, "default_encoder", no_default)
    with pytest.raises(ConfigError, match=r"my-encoder \(dim 24\).*encoder="):
        Retriever.open(db)
    with pytest.raises(ConfigError, match="indexed with encoder my-encoder"):
        Retriever.open(db, encoder=ScaledEncoder(dim=32))
    with Retriever.open(db, encoder=ScaledEncoder()) as r:
        assert set(ids(r.retrieve(QUERY, k=2))) == {"mail.a", "mail.b"}


# ---- settings --------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("rrf_k", -1),  # used to divide by zero on every search, after being saved with the index
        ("candidates", 0),
        ("bm25_k1", -1.0),
        ("bm25_b", 1.5),
        ("hnsw_threshold", -5),
        ("dense_weight", "0.5"),
        ("dense_weight", float("nan")),
        ("stem", "no"),
        ("lexical_norm", "loud"),
    ],
)
def test_out_of_range_semantic_options_are_config_errors_naming_the_key(tmp_path, key, value):
    db = tmp_path / "s.db"
    with pytest.raises(ConfigError, match=key):
        Retriever.from_catalog(
            catalog(), db=db, encoder=HashEncoder(32), semantic={"fusion": "rrf", key: value}
        )
    Retriever.from_catalog(catalog(), db=db, encoder=HashEncoder(32)).close()  # nothing was saved


@pytest.mark.parametrize(
    ("semantic", "match"),
    [(3, "semantic must be a SemanticConfig or a dict"), ({"lexical_text": {"bogus": 1}}, "bogus")],
)
def test_semantic_settings_of_the_wrong_shape_are_config_errors(semantic, match):
    with pytest.raises(ConfigError, match=match):
        Retriever.from_catalog(catalog(), encoder=HashEncoder(32), semantic=semantic)


def test_clock_must_be_callable():
    with pytest.raises(ConfigError, match="clock"):
        Retriever.from_catalog(catalog(), encoder=HashEncoder(32), clock=1000.0)


def test_the_hnsw_option_serves_every_k_and_survives_catalog_changes():
    r = Retriever.from_catalog(catalog(), encoder=HashEncoder(32), semantic={"dense_kind": "hnsw"})
    assert r.index._dense.kind == "hnsw"
    assert set(ids(r.retrieve(QUERY, k=2))) == {"mail.a", "mail.b"}
    assert len(r.retrieve(QUERY, k=10**12)) == 5
    r.remove_tools(["mail.a"])
    r.add_tools([catalog()[0]])
    assert set(ids(r.retrieve(QUERY, k=2))) == {"mail.a", "mail.b"}


# ---- feedback --------------------------------------------------------------------------------------------
def test_one_policy_instance_given_to_two_retrievers_keeps_their_learning_apart():
    policy = RatedPolicy()
    first = Retriever.from_catalog(catalog(), encoder=HashEncoder(64), policy=policy, clock=lambda: 0.0)
    fresh = ids(first.retrieve(QUERY, k=2))
    top = fresh[0]
    first.feedback(top, "tool_error", query=QUERY)
    demoted = ids(first.retrieve(QUERY, k=2))
    assert demoted[0] != top
    second = Retriever.from_catalog(catalog(), encoder=HashEncoder(64), policy=policy, clock=lambda: 0.0)
    # building the second used to wipe the first's learned state (one shared object, reset on load)
    assert ids(first.retrieve(QUERY, k=2)) == demoted
    assert ids(second.retrieve(QUERY, k=2)) == fresh
    second.feedback(fresh[1], "tool_error", query=QUERY)
    assert first.policy.get_state(fresh[1]) is None
    assert second.policy.get_state(top) is None
    assert policy.get_state(top) is None  # the caller's object stays an untrained template


def test_retry_after_may_be_a_numpy_number_and_is_stored_as_a_float(tmp_path):
    r = Retriever.from_catalog(catalog(), db=tmp_path / "r.db", encoder=HashEncoder(32))
    r.feedback("weather", "rate_limited", retry_after=np.float32(30.0))
    r.feedback("weather", Outcome("rate_limited", np.int64(5)))
    assert [(o.outcome, o.retry_after) for o in r.outcomes("weather")] == [
        ("rate_limited", 30.0),
        ("rate_limited", 5.0),
    ]
    for bad in ("5", np.float32("nan"), -1, True):
        with pytest.raises(ConfigError, match="retry_after"):
            r.feedback("weather", "rate_limited", retry_after=bad)
        with pytest.raises(ConfigError, match="retry_after"):
            Outcome("rate_limited", bad)
    r.close()


def test_remove_tools_needs_ids():
    r = Retriever.from_catalog(catalog(), encoder=HashEncoder(32))
    with pytest.raises(ConfigError, match="remove_tools takes a tool id"):
        r.remove_tools(None)  # type: ignore[arg-type]


def test_removing_no_tools_is_no_catalog_change(tmp_path):
    r = Retriever.from_catalog(catalog(), db=tmp_path / "r.db", encoder=HashEncoder(32))
    before = r._store.catalog_version()
    r.remove_tools([])
    assert r._store.catalog_version() == before and len(r) == 5


def test_the_store_refuses_the_last_tool_even_when_the_retriever_view_is_stale(tmp_path):
    """Two writers removing different tools at once must not empty the index between them."""
    db = tmp_path / "race.db"
    r = Retriever.from_catalog(catalog()[:2], db=db, encoder=HashEncoder(32))
    other = Retriever.open(db)
    first, second = (t.id for t in catalog()[:2])
    r._refresh = lambda: None  # type: ignore[method-assign]  # r checks against its old view of 2 tools
    other.remove_tools([first])
    with pytest.raises(ConfigError, match="every tool"):
        r.remove_tools([second])
    assert [h.tool.id for h in Retriever.open(db).tools()] == [second]


# ---- several retrievers, threads and processes ------------------------------------------------------------
def test_len_and_tool_see_what_another_retriever_removed(tmp_path):
    db = tmp_path / "two.db"
    writer = Retriever.from_catalog(catalog(), db=db, encoder=HashEncoder(32))
    reader = Retriever.open(db)
    assert len(reader) == 5
    writer.remove_tools(["weather"])
    assert len(reader) == 4
    with pytest.raises(UnknownToolError):
        reader.tool("weather")
    writer.add_tools([Tool(id="maps", name="maps", description="Directions between two places")])
    assert reader.tool("maps").name == "maps" and len(reader) == 5
    writer.close()
    reader.close()


EXTRA = [Tool(id=f"x{i}", name=f"extra_{i}", description=f"send email variant {i}") for i in range(2)]


@pytest.mark.parametrize("backend", ["memory", "sqlite"])
def test_threads_retrieve_and_report_while_the_catalog_changes(tmp_path, backend):
    db = MemoryStore() if backend == "memory" else tmp_path / "churn.db"
    params = {"gamma": 1.0}
    r = Retriever.from_catalog(
        catalog(), db=db, encoder=HashEncoder(32), policy="global_mab", policy_params=params
    )
    other = Retriever.open(db)  # a second retriever on the same store changes the catalog too
    rounds = 25

    def reader(worker: int) -> None:
        for i in range(rounds):
            hits = r.retrieve(f"{QUERY} {worker} {i}", k=4)
            assert len(hits) == 4 and len(set(ids(hits))) == 4
            assert all(len(h) == 2 for h in r.retrieve_many([QUERY, "weather"], k=2))
            r.feedback("weather", "success", query=f"weather {worker} {i}")

    def churner(worker: int) -> None:
        owner = r if worker else other
        for _ in range(rounds // 2):
            owner.add_tools([EXTRA[worker]])
            owner.feedback(EXTRA[worker].id, "tool_error")
            owner.remove_tools([EXTRA[worker].id])

    with ThreadPoolExecutor(5) as pool:  # result() re-raises a worker's failure here
        jobs = [pool.submit(reader, w) for w in range(3)] + [pool.submit(churner, w) for w in range(2)]
        for job in jobs:
            job.result()
    assert len(r) == len(other) == 5
    assert len(r.outcomes("weather", limit=None)) == 3 * rounds
    for each in (r, other):
        each.retrieve(QUERY)  # picks up the other's writes
        assert each.policy.get_state("weather")["counts"][1] == 3 * rounds
        assert each.policy.get_state("x0") is None
    assert ids(r.retrieve(QUERY, k=5)) == ids(other.retrieve(QUERY, k=5))


def test_a_fresh_process_ranks_like_the_live_retriever_after_add_remove_and_feedback(tmp_path):
    db = tmp_path / "persist.db"
    twins = [Tool(id=f"mail.{c}", name="send_email", description="Send an email message") for c in "cdef"]
    r = Retriever.from_catalog(catalog() + twins, db=db, encoder=HashEncoder(64), clock=lambda: 5000.0)
    r.feedback("mail.a", "tool_error", query=QUERY)
    r.feedback("mail.c", "rate_limited", retry_after=100)
    r.feedback("mail.d", "success", query="email")
    r.remove_tools(["mail.c", "weather"])
    r.add_tools([Tool(id="mail.g", name="send_email", description="Send an email message")])
    r.add_tools([twins[0]])  # a removed id comes back without its old state
    r.feedback("mail.e", "timeout")
    queries = [QUERY, "weather forecast", "translate text", "email"]
    live = [[[h.id, h.score] for h in r.retrieve(q, k=10)] for q in queries]
    assert r.policy.get_state("mail.c") is None
    r.close()
    script = textwrap.dedent(
        f"""
        import json
        from rated.retriever import Retriever
        r = Retriever.open({str(db)!r}, clock=lambda: 5000.0)
        print(json.dumps([[[h.id, h.score] for h in r.retrieve(q, k=10)] for q in {queries!r}]))
        """
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == live


@pytest.mark.parametrize("db", [3, object()])
def test_a_db_that_is_neither_path_url_nor_store_is_a_config_error(db):
    with pytest.raises(ConfigError, match="db must be None"):
        Retriever.from_catalog(catalog(), db=db, encoder=HashEncoder(32))


def test_open_without_a_database_says_so():
    with pytest.raises(ConfigError, match="Retriever.open needs the database"):
        Retriever.open(None)  # type: ignore[arg-type]


def test_feedback_finds_a_tool_whatever_unicode_form_its_id_is_typed_in():
    composed, decomposed = "caf\u00e9.order", "cafe\u0301.order"
    tools = [*catalog(), Tool(id=composed, name="order_coffee", description="Order a coffee")]
    r = Retriever.from_catalog(tools, encoder=HashEncoder(32))
    r.feedback(decomposed, "tool_error")  # as a terminal may type it
    assert [(o.tool_id, o.outcome) for o in r.outcomes()] == [(composed, "tool_error")]
    assert not r.health(composed).healthy


def test_the_awaitable_calls_do_what_the_plain_ones_do_off_the_event_loop():
    import asyncio
    import threading

    r = Retriever.from_catalog(catalog(), encoder=HashEncoder(32), clock=lambda: 1000.0)
    loop_thread: list[int] = []
    seen: list[int] = []
    real = r.retrieve
    r.retrieve = lambda q, k=5, **kw: seen.append(threading.get_ident()) or real(q, k, **kw)  # type: ignore[method-assign]

    async def agent() -> None:
        loop_thread.append(threading.get_ident())
        first = ids(await r.aretrieve(QUERY, k=2))
        assert first == ids(real(QUERY, k=2))
        await r.afeedback(first[0], "tool_error", query=QUERY)
        (again,) = await r.aretrieve_many([QUERY], k=2)
        assert ids(again)[0] != first[0]  # demoted by the awaited feedback
        with pytest.raises(QueryError):
            await r.aretrieve("  ")

    asyncio.run(agent())
    assert seen and loop_thread[0] not in seen  # the encoder ran in a worker thread, not on the loop
    assert [o.outcome for o in r.outcomes()] == ["tool_error"]
