"""Behaviour every ``Store`` backend must share: memory, SQLite and (with a redis-server) Redis."""

from __future__ import annotations

import time
import unicodedata
import uuid

import numpy as np
import pytest

from rated.errors import ConfigError
from rated.store.base import IndexExistsError, LastToolError, OutcomeRecord, Store
from rated.store.memory import MemoryStore
from rated.store.sqlite import SQLiteStore


@pytest.fixture(params=["memory", "sqlite", pytest.param("redis", marks=pytest.mark.redis)])
def store(request, tmp_path):
    if request.param == "memory":
        s = MemoryStore()
    elif request.param == "sqlite":
        s = SQLiteStore(tmp_path / "rated.db")
    else:
        from rated.store.redis import RedisStore

        s = RedisStore(request.getfixturevalue("redis_url"), namespace=f"t{uuid.uuid4().hex[:8]}")
    yield s
    s.close()


def _put(store, ids, dim=3):
    emb = np.arange(len(ids) * dim, dtype=np.float32).reshape(len(ids), dim)
    store.put_tools(
        ids,
        [f'{{"id": "{i}"}}' for i in ids],
        emb,
        np.linspace(0.1, 0.9, len(ids)),
        [{"reliable": i == ids[0]} for i in ids],
    )
    return emb


def test_implements_the_protocol(store):
    assert isinstance(store, Store)


def test_meta_round_trip(store):
    assert store.get_meta() == {}
    store.set_meta({"encoder": {"name": "hash-8-s0", "dim": 8}, "k": 10})
    assert store.get_meta() == {"encoder": {"name": "hash-8-s0", "dim": 8}, "k": 10}


def test_catalog_keeps_order_replaces_in_place_and_deletes(store):
    emb = _put(store, ["a", "b", "c"])
    v0 = store.catalog_version()
    cat = store.load_catalog()
    assert cat.ids == ("a", "b", "c")
    np.testing.assert_array_equal(cat.embeddings, emb)
    assert cat.embeddings.dtype == np.float32
    np.testing.assert_allclose(cat.prior, [0.1, 0.5, 0.9], rtol=1e-6)
    assert cat.prior_detail[0] == {"reliable": True}
    assert cat.prior_detail == ({"reliable": True}, {"reliable": False}, {"reliable": False})
    assert len(cat.prior_detail) == 3 and list(cat.prior_detail[1:]) == [{"reliable": False}] * 2
    assert cat.records == ('{"id": "a"}', '{"id": "b"}', '{"id": "c"}')
    assert cat.embeddings.flags.writeable and cat.embeddings.flags.c_contiguous
    records = ['{"id": "b2"}', '{"id": "d"}']
    store.put_tools(["b", "d"], records, np.ones((2, 3), np.float32), np.array([0.2, 0.3]))
    cat = store.load_catalog()
    assert cat.ids == ("a", "b", "c", "d")  # b replaced where it was, d appended
    assert cat.records[1] == '{"id": "b2"}'
    store.update_states(["b"], lambda cur: {"b": b"state-b"})
    store.delete_tools(["b"])
    assert store.load_catalog().ids == ("a", "c", "d")
    assert "b" not in store.load_states()
    assert store.catalog_version() > v0


def test_update_states_is_read_modify_write_and_logs(store):
    seen = []

    def bump(cur):
        seen.append(dict(cur))
        return {"x": str(int(cur.get("x", b"0")) + 1).encode()}

    rec = OutcomeRecord(time=1.5, tool_id="x", outcome="tool_error", query_hash="abc", retry_after=3.0)
    for _ in range(3):
        store.update_states(["x"], bump, rec)
    assert store.load_states(["x", "missing"]) == {"x": b"3"}
    assert seen[0] == {} and seen[-1] == {"x": b"2"}
    log = store.outcomes()
    assert len(log) == 3 and log[0] == rec


def test_logging_without_state_change(store):
    store.update_states([], lambda cur: {}, OutcomeRecord(time=2.0, tool_id="t", outcome="caller_error"))
    assert store.load_states() == {}
    assert [r.outcome for r in store.outcomes("t")] == ["caller_error"]


def test_a_failing_update_writes_nothing(store):
    store.update_states(["x"], lambda cur: {"x": b"1"})

    def boom(cur):
        raise RuntimeError("policy bug")

    with pytest.raises(RuntimeError):
        store.update_states(["x"], boom, OutcomeRecord(time=1.0, tool_id="x", outcome="success"))
    assert store.load_states() == {"x": b"1"}
    assert store.outcomes() == []


def test_version_and_states_since_report_changes(store):
    v0 = store.version()
    _, seq0 = store.states_since(0)
    store.update_states(["a", "b"], lambda cur: {"a": b"1", "b": b"1"})
    v1 = store.version()
    assert v1 != v0
    changed, seq1 = store.states_since(seq0)
    assert changed == {"a": b"1", "b": b"1"} and seq1 > seq0
    store.update_states(["b"], lambda cur: {"b": b"2"})
    changed, seq2 = store.states_since(seq1)
    assert changed == {"b": b"2"} and seq2 > seq1
    assert store.states_since(seq2) == ({}, seq2)
    assert store.version() != v1


def test_outcome_log_order_limit_and_stats(store):
    t = time.time()
    for i, (tool, outcome) in enumerate(
        [("a", "success"), ("a", "tool_error"), ("b", "caller_error"), ("a", "timeout"), ("b", "success")]
    ):
        store.update_states([], lambda cur: {}, OutcomeRecord(time=t + i, tool_id=tool, outcome=outcome))
    assert [r.outcome for r in store.outcomes(limit=2)] == ["timeout", "success"]
    assert [r.outcome for r in store.outcomes("a")] == ["success", "tool_error", "timeout"]
    assert len(store.outcomes(limit=None)) == 5
    stats = store.outcome_stats()
    assert (stats["a"].successes, stats["a"].failures, stats["a"].caller_errors) == (1, 2, 0)
    assert (stats["b"].successes, stats["b"].failures, stats["b"].caller_errors) == (1, 0, 1)
    assert stats["a"].last_outcome == "timeout" and stats["b"].last_outcome == "success"
    only_a = store.outcome_stats(["a", "never-logged"])
    assert list(only_a) == ["a"] and only_a["a"] == stats["a"]
    assert store.outcome_stats([]) == {}


def test_empty_catalog_loads(store):
    cat = store.load_catalog()
    assert cat.ids == () and cat.embeddings.shape[0] == 0


def test_put_and_delete_return_the_new_catalog_version(store):
    v1 = store.put_tools(["a"], ['{"id": "a"}'], np.ones((1, 3), np.float32), np.array([0.5]))
    assert v1 == store.catalog_version()
    v2 = store.delete_tools(["a"])
    assert v2 == store.catalog_version() and v2 > v1


def test_clear_drops_catalog_config_and_state_but_keeps_the_log(store):
    _put(store, ["a", "b"])
    store.set_meta({"k": 1})
    store.update_states(
        ["a", "provider:x"],
        lambda cur: {"a": b"1", "provider:x": b"2"},
        OutcomeRecord(time=1.0, tool_id="a", outcome="success"),
    )
    v = store.catalog_version()
    store.clear()
    assert store.load_catalog().ids == ()
    assert store.get_meta() == {} and store.load_states() == {}
    assert len(store.outcomes()) == 1
    assert store.catalog_version() > v


def test_replace_catalog_swaps_tools_meta_and_state_in_one_change(store):
    _put(store, ["a", "b"])
    store.set_meta({"k": 1})
    store.update_states(
        ["a"], lambda cur: {"a": b"1"}, OutcomeRecord(time=1.0, tool_id="a", outcome="success")
    )
    v = store.catalog_version()
    emb = np.ones((2, 3), dtype=np.float32)
    version = store.replace_catalog(
        ["c", "a"], ['{"id": "c"}', '{"id": "a"}'], emb, np.array([0.2, 0.4]), None, {"k": 2}
    )
    cat = store.load_catalog()
    assert cat.ids == ("c", "a") and version == store.catalog_version() > v
    assert store.get_meta() == {"k": 2} and store.load_states() == {}
    np.testing.assert_array_equal(cat.embeddings, emb)
    assert len(store.outcomes()) == 1  # the log is history: kept


def test_a_rejected_replacement_keeps_the_old_index(store):
    _put(store, ["a", "b"])
    store.set_meta({"k": 1})
    with pytest.raises(ConfigError, match="same length"):
        store.replace_catalog(["c", "d"], ['{"id": "c"}'], np.ones((2, 3), np.float32), np.ones(2), None, {})
    assert store.load_catalog().ids == ("a", "b") and store.get_meta() == {"k": 1}


@pytest.mark.parametrize("existing", ["tools", "meta"])
def test_replace_catalog_expecting_an_empty_store_refuses_an_existing_index(store, existing):
    def replace(ids):
        emb = np.ones((len(ids), 3), np.float32)
        recs = [f'{{"id": "{i}"}}' for i in ids]
        return store.replace_catalog(
            ids, recs, emb, np.ones(len(ids)), None, {"k": ids[0]}, expect_empty=True
        )

    if existing == "tools":
        _put(store, ["a", "b"])
    else:
        store.set_meta({"k": "a"})
    before = (store.load_catalog().ids, store.get_meta(), store.catalog_version())
    with pytest.raises(IndexExistsError, match="already holds an index"):
        replace(["x"])
    assert (store.load_catalog().ids, store.get_meta(), store.catalog_version()) == before
    store.clear()
    replace(["x"])  # empty again: accepted
    assert store.load_catalog().ids == ("x",) and store.get_meta() == {"k": "x"}
    with pytest.raises(IndexExistsError):
        replace(["y"])


def test_redis_store_names_the_extra_when_the_client_is_missing(monkeypatch):
    import sys

    from rated.errors import StoreError
    from rated.store.redis import RedisStore

    monkeypatch.setitem(sys.modules, "redis", None)  # "import redis" now fails
    with pytest.raises(StoreError, match=r"rated\[redis\]"):
        RedisStore("redis://127.0.0.1:6379/0")


def test_open_store_picks_the_backend(tmp_path):
    from rated.store.open import open_store

    assert isinstance(open_store(None), MemoryStore)
    s = open_store(tmp_path / "x.db", durability="full")
    assert isinstance(s, SQLiteStore) and s.durability == "full"
    assert open_store(s) is s
    s.close()


def test_delete_with_keep_one_refuses_to_empty_the_index_and_changes_nothing(store):
    _put(store, ["a", "b"])
    store.update_states(["a"], lambda cur: {"a": b"1"})
    before = store.catalog_version()
    with pytest.raises(LastToolError, match="every tool"):
        store.delete_tools(["a", "b"], keep_one=True)
    assert store.load_catalog().ids == ("a", "b") and store.catalog_version() == before
    assert store.load_states(["a"]) == {"a": b"1"}
    store.delete_tools(["b", "no-such-tool"], keep_one=True)  # ids not there do not count as remaining
    assert store.load_catalog().ids == ("a",)
    with pytest.raises(LastToolError):
        store.delete_tools(["a", "b"], keep_one=True)  # the last one, named with one already gone
    assert store.load_catalog().ids == ("a",)


def test_deleting_no_ids_changes_nothing(store):
    _put(store, ["a"])
    before = store.catalog_version()
    assert store.delete_tools([]) == before == store.catalog_version()


def test_states_since_a_number_from_another_history_returns_everything(store):
    store.update_states(["a", "b"], lambda cur: {"a": b"1", "b": b"1"})
    _, latest = store.states_since(0)
    # a retriever that saw a later number than the store now has (restored from an older copy)
    assert store.states_since(latest + 100) == ({"a": b"1", "b": b"1"}, latest)
    store.update_states(["b"], lambda cur: {"b": b"2"})
    assert store.states_since(latest) == ({"b": b"2"}, store.states_since(0)[1])


def test_delete_with_keep_one_counts_a_repeated_id_once(store):
    _put(store, ["a", "b"])
    store.delete_tools(["a", "a"], keep_one=True)
    assert store.load_catalog().ids == ("b",)


def test_outcome_stats_count_every_record(store):
    from rated.store.stats import summarise_outcomes

    kinds = ["success", "tool_error", "caller_error", "timeout", "rate_limited", "auth_error", "success"]
    records = [OutcomeRecord(time=100.0 + i, tool_id=f"t{i % 3}", outcome=kinds[i % 7]) for i in range(40)]
    for r in records:
        store.update_states([], lambda cur: {}, r)
    assert store.outcome_stats() == summarise_outcomes(records)
    assert store.outcome_stats(["t2", "t2"]) == {"t2": summarise_outcomes(records)["t2"]}


def test_cached_data_round_trips_or_is_absent(store):
    """Derived data (the lexical snapshot): a store gives back exactly what was saved, or nothing."""
    assert store.load_cached("lexical-index") is None
    blob = bytes(range(256)) * 40
    store.save_cached("lexical-index", blob)
    assert store.load_cached("lexical-index") in (blob, None)
    store.save_cached("lexical-index", b"newer")
    assert store.load_cached("lexical-index") in (b"newer", None)
    assert store.load_cached("other") is None


def test_a_cached_entry_is_deleted_and_other_names_are_kept(store):
    assert store.delete_cached("hnsw-graph") is False  # nothing there: nothing to drop, no error
    kept = store.save_cached("hnsw-graph", b"graph")
    store.save_cached("lexical-index", b"lexical")
    assert store.delete_cached("hnsw-graph") is kept  # a store that keeps no cache has nothing to drop
    assert store.load_cached("hnsw-graph") is None
    assert store.load_cached("lexical-index") == (b"lexical" if kept else None)
    assert store.delete_cached("hnsw-graph") is False


def test_cached_writes_for_a_catalog_version_apply_only_while_it_is_current(store):
    """What a writer derived from the catalog at one version must not replace (or drop) what another
    writer derived from the catalog it changed since."""
    _put(store, ["a", "b"])
    version = store.catalog_version()
    kept = store.save_cached("hnsw-graph", b"of a,b", catalog_version=version)
    assert store.load_cached("hnsw-graph") == (b"of a,b" if kept else None)
    store.delete_tools(["b"])  # another writer's change
    assert store.save_cached("hnsw-graph", b"stale", catalog_version=version) is False
    assert store.delete_cached("hnsw-graph", catalog_version=version) is False
    assert store.load_cached("hnsw-graph") == (b"of a,b" if kept else None)
    now = store.catalog_version()
    assert store.save_cached("hnsw-graph", b"of a", catalog_version=now) is kept
    assert store.load_cached("hnsw-graph") == (b"of a" if kept else None)
    assert store.delete_cached("hnsw-graph", catalog_version=now) is kept
    assert store.load_cached("hnsw-graph") is None


def test_put_tools_new_only_refuses_an_id_already_stored_and_changes_nothing(store):
    from rated.errors import ToolExistsError

    _put(store, ["a", "b"])
    version, before = store.catalog_version(), store.load_catalog()
    with pytest.raises(ToolExistsError) as caught:
        store.put_tools(
            ["c", "b"],
            ['{"id": "c"}', '{"id": "b2"}'],
            np.ones((2, 3), np.float32),
            np.ones(2),
            new_only=True,
        )
    assert caught.value.tool_ids == ["b"]
    after = store.load_catalog()
    assert (after.ids, after.records) == (before.ids, before.records)
    assert store.catalog_version() == version
    store.put_tools(["c"], ['{"id": "c"}'], np.ones((1, 3), np.float32), np.ones(1), new_only=True)
    assert store.load_catalog().ids == ("a", "b", "c")


def test_put_tools_with_delete_is_one_change_and_check_meta_can_refuse_it(store):
    class Rebuilt(Exception):
        pass

    def refuse(meta):
        assert meta == {"encoder": {"name": "e", "dim": 3}}  # the stored settings, read inside the change
        raise Rebuilt

    store.set_meta({"encoder": {"name": "e", "dim": 3}})
    _put(store, ["a", "b", "c"])
    store.update_states(["c"], lambda cur: {"c": b"learned"})
    store.update_states(["a"], lambda cur: {"a": b"kept"})
    version, before = store.catalog_version(), store.load_catalog()
    one = (["b", "d"], ['{"id": "b2"}', '{"id": "d"}'], np.ones((2, 3), np.float32), np.ones(2))
    with pytest.raises(Rebuilt):  # refused by the caller's check: nothing stored
        store.put_tools(*one, check_meta=refuse, delete=["c"])
    with pytest.raises(LastToolError):  # nothing would remain: nothing stored
        store.put_tools([], [], np.ones((0, 3), np.float32), np.ones(0), delete=["a", "b", "c", "x"])
    after = store.load_catalog()
    assert (after.ids, after.records, store.catalog_version()) == (before.ids, before.records, version)
    assert store.load_states() == {"c": b"learned", "a": b"kept"}
    assert store.put_tools(*one, check_meta=lambda meta: None, delete=["c", "x"]) == version + 1
    cat = store.load_catalog()
    assert cat.ids == ("a", "b", "d") and cat.records[1:] == ('{"id": "b2"}', '{"id": "d"}')
    assert store.load_states() == {"a": b"kept"}  # the deleted tool's state went in the same change
    assert store.put_tools([], [], np.ones((0, 3), np.float32), np.ones(0), delete=["d"]) == version + 2
    assert store.load_catalog().ids == ("a", "b")


def test_put_tools_refuses_a_new_id_stored_in_another_unicode_normal_form_inside_the_change(store):
    """Lookups by id find "café" composed or decomposed, and a catalog refuses ids that differ only so.
    The retriever checks before the write; two processes adding either form at once each passed that
    check, and the store, comparing ids exactly, took both."""
    from rated.errors import ToolExistsError

    nfc, nfd = unicodedata.normalize("NFC", "café"), unicodedata.normalize("NFD", "café")
    one = np.ones((1, 3), np.float32)
    store.put_tools([nfc], [f'{{"id": "{nfc}"}}'], one, np.ones(1), new_only=True)
    version, before = store.catalog_version(), store.load_catalog()
    for new_only in (True, False):  # add refuses it, and so does sync's write (no new_only)
        with pytest.raises(ToolExistsError) as caught:
            store.put_tools(
                ["tea", nfd], ['{"id": "tea"}', "{}"], np.ones((2, 3)), np.ones(2), new_only=new_only
            )
        assert caught.value.tool_ids == [nfd]
    both_new = ([unicodedata.normalize("NFD", "thé"), unicodedata.normalize("NFC", "thé")], ["{}", "{}"])
    with pytest.raises(ToolExistsError) as caught:  # both forms in one change
        store.put_tools(*both_new, np.ones((2, 3)), np.ones(2), new_only=True)
    assert caught.value.tool_ids == both_new[0]
    after = store.load_catalog()
    assert (after.ids, after.records, store.catalog_version()) == (before.ids, before.records, version)
    # the composed tool replaced in place, or removed in the same change: no second spelling results
    store.put_tools([nfc, "tea"], ['{"id": "v2"}', '{"id": "tea"}'], np.ones((2, 3)), np.ones(2))
    store.put_tools([nfd], ['{"id": "d"}'], one, np.ones(1), new_only=True, delete=[nfc])
    assert store.load_catalog().ids == ("tea", nfd)


def test_put_tools_compares_ids_by_their_nfc_form_as_the_retriever_finds_them(store):
    """The retriever finds a tool by any spelling with the same NFC form (``IdSpellings``): the Kelvin sign
    U+212A is "K", and an id pasted from pieces may be in neither normal form. Two writers adding two such
    spellings at once must not both succeed, whichever spelling the store holds."""
    from rated.errors import ToolExistsError

    kelvin, mixed = "\u212aelvin", "caf\u00e9 de\u0301ja\u0300"  # "é" composed, "é" and "à" decomposed
    other_mix = "cafe\u0301 d\u00e9j\u00e0"  # the same text mixed the other way: in neither form either
    one = np.ones((1, 3), np.float32)
    store.put_tools([kelvin, mixed], ["{}", "{}"], np.ones((2, 3)), np.ones(2), new_only=True)
    version, before = store.catalog_version(), store.load_catalog()
    for new_only in (True, False):
        for new in ("Kelvin", other_mix, unicodedata.normalize("NFC", mixed)):
            with pytest.raises(ToolExistsError) as caught:
                store.put_tools(["tea", new], ["{}", "{}"], np.ones((2, 3)), np.ones(2), new_only=new_only)
            assert caught.value.tool_ids == [new]
    with pytest.raises(ToolExistsError) as caught:  # both spellings in one change
        store.put_tools(["\u212a2", "K2"], ["{}", "{}"], np.ones((2, 3)), np.ones(2), new_only=True)
    assert caught.value.tool_ids == ["\u212a2", "K2"]
    after = store.load_catalog()
    assert (after.ids, after.records, store.catalog_version()) == (before.ids, before.records, version)
    store.put_tools([kelvin], ['{"v": 2}'], one, np.ones(1))  # replaced in place as spelled: no clash
    store.put_tools(["Kelvin"], ["{}"], one, np.ones(1), new_only=True, delete=[kelvin])
    assert store.load_catalog().ids == (mixed, "Kelvin")
