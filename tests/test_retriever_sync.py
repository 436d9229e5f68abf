"""Another writer's catalog change: a replica re-parses only changed records and follows removals and
appends with its built index in place, and always answers as a process that opens the store now."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rated import Tool, stored_tool
from rated.encode.testing import HashEncoder
from rated.index.semantic import SemanticIndex
from rated.retriever import Retriever

QUERIES = ["send an email message", "weather forecast for Oslo", "create a calendar event", "translate text"]


def catalog(n: int = 12) -> list[Tool]:
    topics = [
        "send email message",
        "weather forecast city",
        "calendar event create",
        "translate text language",
    ]
    return [
        Tool(id=f"t{i}", name=f"tool_{i}", description=f"{topics[i % 4]} variant {i}", provider=f"p{i % 3}")
        for i in range(n)
    ]


def answers(r: Retriever) -> list[list[tuple[str, float]]]:
    return [[(h.id, round(h.score, 12)) for h in r.retrieve(q, k=5)] for q in QUERIES]


@pytest.fixture
def pair(tmp_path):
    db = tmp_path / "sync.db"
    Retriever.from_catalog(catalog(), db=db, encoder=HashEncoder(64)).close()
    writer, replica = Retriever.open(db), Retriever.open(db)
    replica.retrieve(QUERIES[0])  # the replica's index is built
    yield db, writer, replica
    writer.close(), replica.close()


def fresh_answers(db) -> list[list[tuple[str, float]]]:
    with Retriever.open(db) as r:
        return answers(r)


def clock() -> float:
    return 1000.0


def view(r: Retriever) -> tuple:
    """Everything a caller sees, to the last bit: hits (the tool and every number) per query, and the
    tools listing (prior, health, components)."""
    hits = [[(h.tool, h.to_dict()) for h in r.retrieve(q, k=6)] for q in QUERIES]
    return hits, r.tools(stats=False)


def fresh_view(db) -> tuple:
    with Retriever.open(db, clock=clock) as r:
        return view(r)


def test_an_added_tool_is_followed_in_place_and_only_its_record_is_parsed(pair, monkeypatch):
    db, writer, replica = pair
    index = replica.index
    before = {t.tool.id: t.tool for t in replica.tools(stats=False)}  # every record parsed by now
    writer.add_tools([Tool(id="new", name="email_sender", description="send an email message fast")])
    parsed = []  # by the replica, from now on
    real = stored_tool.parse_record
    monkeypatch.setattr(
        stored_tool,
        "parse_record",
        lambda rec, tid, where="store": parsed.append(tid) or real(rec, tid, where),
    )
    got = answers(replica)
    assert replica.index is index and parsed == ["new"]
    assert all(replica.tool(i) is tool for i, tool in before.items())  # the same objects, kept
    assert "new" in {h.id for h in replica.retrieve("send an email message fast", k=3)}
    assert got == fresh_answers(db)


def test_removals_and_appends_together_are_followed_in_place(pair):
    db, writer, replica = pair
    index = replica.index
    writer.remove_tools(["t1", "t4"])
    writer.add_tools([Tool(id="late", name="forecast", description="weather forecast tomorrow")])
    writer.remove_tools(["t7"])
    assert answers(replica) == fresh_answers(db) and replica.index is index
    assert [t.tool.id for t in replica.tools(stats=False)] == [t.tool.id for t in writer.tools(stats=False)]


def test_a_rebuild_that_changes_tools_in_place_is_rebuilt_not_followed(pair):
    db, _, replica = pair
    index = replica.index
    changed = [
        t.model_copy(update={"description": "nothing at all"}) if t.id == "t2" else t for t in catalog()
    ]
    Retriever.from_catalog(changed, db=db, encoder=HashEncoder(64), overwrite=True).close()
    assert answers(replica) == fresh_answers(db) and replica.index is not index
    assert replica.tool("t2").description == "nothing at all"


def test_a_rebuild_with_other_semantic_settings_is_rebuilt(pair):
    db, _, replica = pair
    index = replica.index
    Retriever.from_catalog(
        catalog(), db=db, encoder=HashEncoder(64), overwrite=True, semantic={"dense_weight": 1.0}
    ).close()
    assert answers(replica) == fresh_answers(db) and replica.index is not index
    assert replica.index.config.dense_weight == 1.0


def test_the_writer_itself_keeps_its_index_after_another_writers_change(pair):
    db, writer, replica = pair
    writer.retrieve(QUERIES[1])
    index = writer.index
    writer.add_tools([Tool(id="mine", name="translator", description="translate text to French")])
    replica.add_tools([Tool(id="theirs", name="mailer", description="send email message now")])
    assert answers(writer) == fresh_answers(db) and writer.index is index


def test_an_hnsw_replica_takes_the_graph_the_writer_saved_for_appends_and_removals(tmp_path):
    """An HNSW index is not followed in place (appends would grow another graph than the writer's, removals
    rebuild it): the replica's next search attaches the graph the writer saved for the new pool, as a
    fresh open does (tests/test_retriever_hnsw_snapshot.py counts that nothing is built)."""
    db = tmp_path / "hnsw.db"
    Retriever.from_catalog(catalog(), db=db, encoder=HashEncoder(64), semantic={"dense_kind": "hnsw"}).close()
    writer, replica = Retriever.open(db), Retriever.open(db)
    index = replica.index
    writer.add_tools([Tool(id="new", name="email_sender", description="send an email message fast")])
    assert answers(replica) == fresh_answers(db) and replica.index is not index
    index = replica.index
    writer.remove_tools(["t3"])
    assert answers(replica) == fresh_answers(db) and replica.index is not index
    writer.close(), replica.close()


def test_a_replica_crossing_the_hnsw_threshold_takes_the_kind_a_fresh_open_takes(tmp_path):
    db = tmp_path / "auto.db"
    semantic = {"hnsw_threshold": 12, "candidates": 1}  # auto: flat up to 12 tools, a graph above
    Retriever.from_catalog(catalog(12), db=db, encoder=HashEncoder(64), semantic=semantic).close()
    writer, replica = Retriever.open(db), Retriever.open(db)
    assert replica.index._dense.kind == "flat"
    writer.add_tools([Tool(id="new", name="email_sender", description="send an email message fast")])
    assert answers(replica) == fresh_answers(db) and replica.index._dense.kind == "hnsw"
    writer.remove_tools(["t3"])
    assert answers(replica) == fresh_answers(db) and replica.index._dense.kind == "flat"
    writer.close(), replica.close()


def test_a_writer_serves_the_tools_it_added_as_stored_not_as_given(pair):
    """A caller's Tool may hold what its stored record does not (a tuple in its parameters, NaN, which
    JSON makes a list and null): the writer serves the stored form, as a fresh open does, also after it
    followed another writer's change (it keeps its parsed tools then)."""
    db, writer, replica = pair
    writer.retrieve(QUERIES[0])
    given = Tool(
        id="odd",
        name="mailer",
        description="send an email",
        parameters={"required": ("to",), "n": float("nan")},
    )
    writer.add_tools([given])
    with Retriever.open(db) as fresh:
        assert writer.tool("odd") == fresh.tool("odd") != given
    replica.add_tools([Tool(id="other", name="forecast", description="weather forecast tomorrow")])
    with Retriever.open(db) as fresh:
        assert writer.tool("odd") == fresh.tool("odd")
    assert answers(writer) == fresh_answers(db)


def test_an_index_that_fails_half_way_through_following_is_never_served(pair, monkeypatch):
    db, writer, replica = pair
    writer.remove_tools(["t1"])
    writer.add_tools([Tool(id="late", name="forecast", description="weather forecast tomorrow")])

    def fail(*args, **kwargs):
        raise MemoryError("out of memory while appending")

    monkeypatch.setattr(SemanticIndex, "add", fail)  # the removal is done, then the append fails
    with pytest.raises(MemoryError):
        replica.retrieve(QUERIES[0])
    with pytest.raises(MemoryError):
        replica.index  # noqa: B018 - not the half-updated index, nor an internal error
    monkeypatch.undo()
    assert [t.id for t in replica.index.tools] == [t.tool.id for t in writer.tools(stats=False)]
    assert answers(replica) == fresh_answers(db)


@pytest.mark.parametrize("change", ["add", "remove"])
def test_a_writer_whose_own_change_fails_half_way_in_its_index_answers_as_a_fresh_open_next(
    pair, monkeypatch, change
):
    """The store took the change, then updating the index failed half-way (dense part done, lexical
    part not): the next call must not trip over that index (it is rebuilt from the store)."""
    from rated.index.tfidf import TfidfIndex

    db, writer, _ = pair
    writer.retrieve(QUERIES[0])

    def fail(*args, **kwargs):
        raise MemoryError("out of memory in the lexical index")

    monkeypatch.setattr(TfidfIndex, "_added" if change == "add" else "_removed", fail)
    with pytest.raises(MemoryError):
        if change == "add":
            writer.add_tools([Tool(id="new", name="email_sender", description="send an email message fast")])
        else:
            writer.remove_tools(["t2"])
    monkeypatch.undo()
    assert answers(writer) == fresh_answers(db)
    assert [t.id for t in writer.index.tools] == [t.tool.id for t in writer.tools(stats=False)]


def test_a_rebuild_landing_between_reading_the_settings_and_the_catalog_is_caught(pair, monkeypatch):
    """The settings and the catalog are two reads: a rebuild between them must not leave a replica
    serving the new tools under the old settings (it reloads them both again)."""
    db, _, replica = pair
    Retriever.from_catalog(catalog(), db=db, encoder=HashEncoder(64), overwrite=True).close()  # reload due
    read = replica.store.get_meta

    def then_rebuild():
        meta = read()
        monkeypatch.setattr(replica.store, "get_meta", read)
        Retriever.from_catalog(  # another writer's `rated index --force`, right after the read
            catalog(9), db=db, encoder=HashEncoder(64), overwrite=True, semantic={"dense_weight": 1.0}
        ).close()
        return meta

    monkeypatch.setattr(replica.store, "get_meta", then_rebuild)
    assert answers(replica) == fresh_answers(db)  # the first answer too: the refresh reloads again
    assert replica.index.config.dense_weight == 1.0 and len(replica) == 9
    monkeypatch.setattr(replica.store, "load_catalog", lambda: 1 / 0)  # caught up: no reload after that
    assert answers(replica) == fresh_answers(db)


# ---- learned state: a reload leaves nothing the store no longer holds ------------------------------------
def test_removing_the_tool_that_taught_the_context_leaves_no_trace(tmp_path):
    """RATED learns the context's dimension from a query's feedback; once the only state that carries
    it is gone (its tool removed), a process opening the store scores without it, and so must the writer
    that removed the tool and a replica that had loaded the state."""
    db = tmp_path / "ctx.db"
    Retriever.from_catalog(catalog(10), db=db, encoder=HashEncoder(64)).close()
    writer, replica = Retriever.open(db, clock=clock), Retriever.open(db, clock=clock)
    writer.feedback("t0", "tool_error", query=QUERIES[0])  # state for t0 (with context) and provider p0
    assert view(replica) == fresh_view(db)  # the replica has loaded it
    writer.remove_tools(["t0"])  # provider p0's state stays, without a context
    assert view(writer) == fresh_view(db)
    assert view(replica) == fresh_view(db)
    writer.close(), replica.close()


def test_a_rebuild_leaves_no_learned_memory_in_a_replica(tmp_path):
    db = tmp_path / "rebuilt.db"
    params = {"prior_weight": 0.8}  # a fresh tool's score then depends on the context mode
    Retriever.from_catalog(catalog(10), db=db, encoder=HashEncoder(64), policy_params=params).close()
    writer, replica = Retriever.open(db, clock=clock), Retriever.open(db, clock=clock)
    writer.feedback("t0", "success", query=QUERIES[0])
    replica.retrieve(QUERIES[0])
    Retriever.from_catalog(
        catalog(10), db=db, encoder=HashEncoder(64), overwrite=True, policy_params=params
    ).close()  # `rated index --force`: every learned state is dropped
    assert view(replica) == fresh_view(db) and view(writer) == fresh_view(db)
    writer.close(), replica.close()


# ---- random sequences of changes by two writers --------------------------------------------------------
TOPICS = ["send email message", "weather forecast city", "calendar event create", "translate text language"]
POOL = [
    Tool(
        id=f"t{i}",
        name=f"tool_{i % 11}",
        description=f"{TOPICS[i % 4]} {TOPICS[(i * 7) % 4].split()[i % 3]} variant {i % 5}",
        provider=f"p{i % 3}",
    )
    for i in range(18)
] + [  # a twin: the same text under another id, so scores tie and order alone decides
    Tool(
        id="twin", name="tool_1", description=f"{TOPICS[1]} {TOPICS[3].split()[1]} variant 1", provider="p1"
    ),
    # what its stored record does not keep as given (a tuple becomes a list)
    Tool(id="odd", name="mailer", description="send email message", parameters={"required": ("to",)}),
]
POLICY_PARAMS = [{}, {"prior_weight": 0.8}]  # with 0.8 a stateless tool's score depends on the context mode
SEMANTIC = [None, {"dense_weight": 0.7, "lexical": "bm25", "lexical_norm": "max"}]
FUZZ = settings(  # tests/conftest.py: a fixed run in CI; FUZZ_N=500 hunts
    settings.get_profile("fuzz-20"),
    # its examples draw no big data; conftest's function-scoped autouse fixture holds for all alike
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
WHO, PICKS = st.integers(0, 1), st.lists(st.integers(0, len(POOL) - 1), min_size=1, max_size=4)
STEP = st.one_of(
    st.tuples(st.just("add"), WHO, PICKS),
    st.tuples(st.just("remove"), WHO, PICKS),
    st.tuples(st.just("feedback"), WHO, st.integers(0, len(POOL) - 1), st.booleans()),
    # a tools file synced: each pick as in POOL or with a revised text; prune drops what it does not hold
    st.tuples(
        st.just("sync"),
        WHO,
        st.lists(st.tuples(st.integers(0, len(POOL) - 1), st.booleans()), min_size=1, max_size=5),
        st.booleans(),
    ),
    st.tuples(
        st.just("rebuild"), st.permutations(range(len(POOL))), st.integers(1, len(POOL)), st.integers(0, 1)
    ),
)
LOOK = st.sampled_from([(), (0,), (1,), (0, 1)])  # who answers after the step: () lets changes pile up


def _revised(tool: Tool) -> Tool:
    """``tool`` with another description: synced, it is changed in place."""
    return tool.model_copy(update={"description": f"{tool.description} revised {TOPICS[len(tool.id) % 4]}"})


def _apply(step: tuple, rs: list[Retriever], db, params: dict) -> None:
    if step[0] == "rebuild":  # `rated index --force`: other tools, another order, other semantic settings
        _, order, n, semantic = step
        tools = [POOL[i] for i in order[:n]]
        Retriever.from_catalog(
            tools,
            db=db,
            encoder=HashEncoder(64),
            overwrite=True,
            semantic=SEMANTIC[semantic],
            policy_params=params,
        ).close()
        return
    r = rs[step[1]]
    present = {t.tool.id for t in r.tools(stats=False)}  # r catches up first
    if step[0] == "add":
        new = [POOL[i] for i in dict.fromkeys(step[2]) if POOL[i].id not in present]
        if new:
            r.add_tools(new)
    elif step[0] == "sync":
        picks, prune = dict(step[2]), step[3]  # one version of each tool
        tools = [_revised(POOL[i]) if revised else POOL[i] for i, revised in picks.items()]
        if not prune or present & {t.id for t in tools}:  # else refused: it would remove every tool
            r.sync_tools(tools, prune=prune)
    elif step[0] == "remove":
        gone = [POOL[i].id for i in dict.fromkeys(step[2]) if POOL[i].id in present]
        if gone and len(gone) < len(present):
            r.remove_tools(gone)
    elif POOL[step[2]].id in present:
        query = QUERIES[step[2] % len(QUERIES)] if step[3] else None
        r.feedback(POOL[step[2]].id, "tool_error" if step[2] % 2 else "success", query=query)


@FUZZ
@given(st.lists(st.tuples(STEP, LOOK), min_size=1, max_size=6), st.sampled_from(POLICY_PARAMS))
def test_two_writers_always_answer_as_a_process_opening_the_store_now(tmp_path_factory, steps, params):
    """Whatever two retrievers on one database do (adds, removals, syncs, feedback with and without a
    query, rebuilds), and whenever either answers, it answers as ``Retriever.open`` would at that moment:
    the same hits in the same order with the same numbers to the last bit, and the same tools listing."""
    db = tmp_path_factory.mktemp("sync") / "fuzz.db"
    Retriever.from_catalog(POOL[:10], db=db, encoder=HashEncoder(64), policy_params=params).close()
    rs = [Retriever.open(db, clock=clock), Retriever.open(db, clock=clock)]
    try:
        for r in rs:
            r.retrieve(QUERIES[0])  # built: later changes are followed in place, not built afresh
        for step, look in steps:
            _apply(step, rs, db, params)
            for who in look:
                assert view(rs[who]) == fresh_view(db), (step, who)
        assert view(rs[0]) == fresh_view(db) and view(rs[1]) == fresh_view(db)
    finally:
        for r in rs:
            r.close()
