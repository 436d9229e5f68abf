"""Lexical index snapshots: a restored index (then followed by removals and appends) scores exactly as a
fresh build of the same pool, and any snapshot that cannot give that is refused, never half-used."""

import io

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rated import Tool
from rated.index import snapshot
from rated.index.lexical import BM25Index
from rated.index.refit import pack_terms, unpack_terms
from rated.index.semantic import DEFAULT_SEMANTIC, SemanticIndex
from rated.index.tfidf import TfidfIndex

WORDS = "send email weather forecast city flight search book hotel price stock quote news map route".split()
QUERIES = ["send an email about the weather", "cheap flights and hotels", "stock price news", "zebra", "x"]
BM25 = DEFAULT_SEMANTIC.with_(lexical="bm25", lexical_norm="max", dense_weight=0.7)
CONFIGS = {"tfidf": DEFAULT_SEMANTIC, "bm25": BM25}


def pool(n: int, seed: int = 0) -> list[Tool]:
    rng = np.random.default_rng(seed)
    return [
        Tool(
            id=f"t{i}",
            name=f"get{rng.choice(WORDS).title()}Tool{i % 7}",
            description=" ".join(rng.choice(WORDS, size=int(rng.integers(2, 10))).tolist()) + f" zq{i}x",
            provider=f"p{i % 4}",
        )
        for i in range(n)
    ]


def vectors(n: int) -> np.ndarray:
    v = np.random.default_rng(1).normal(size=(n, 8)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def digest(tool: Tool) -> bytes:
    return tool.model_dump_json().encode()[:8].ljust(8, b".") + bytes([len(tool.description) % 256]) * 8


def lexical_scores(lexical, queries=QUERIES) -> list[np.ndarray]:
    return [lexical.scores(q) for q in queries]


def assert_same(restored, built) -> None:
    assert restored.ids == built.ids
    for a, b in zip(lexical_scores(restored), lexical_scores(built), strict=True):
        np.testing.assert_array_equal(a, b)  # to the last bit
    if isinstance(built, BM25Index):
        assert [restored.score_bound(q) for q in QUERIES] == [built.score_bound(q) for q in QUERIES]


@pytest.mark.parametrize("cls", [TfidfIndex, BM25Index])
def test_export_then_restore_is_the_same_index(cls):
    tools = pool(40)
    texts = [f"{t.name} {t.description}" for t in tools]
    built = cls()
    built.add([t.id for t in tools], texts)
    built.remove(["t3", "t17"])  # a history of changes, not only a fit
    built.add(["late"], ["a late weather tool for flights"])
    restored = cls()
    restored.restore(built.ids, built.export())
    assert_same(restored, built)
    restored.add(["later"], ["hotel price search"]), built.add(["later"], ["hotel price search"])
    restored.remove(["t0"]), built.remove(["t0"])
    assert_same(restored, built)


@pytest.mark.parametrize("cls", [TfidfIndex, BM25Index])
def test_a_malformed_export_is_refused_and_leaves_the_index_empty(cls):
    built = cls()
    built.add(["a", "b"], ["send email", "weather forecast"])
    arrays = built.export()
    for name in arrays:
        broken = dict(arrays)
        if name == "terms":  # one term short (a byte short is still a valid list of terms)
            broken[name] = pack_terms(unpack_terms(arrays[name])[:-1])
        else:
            broken[name] = arrays[name][:-1]
        idx = cls()
        with pytest.raises(ValueError):
            idx.restore(["a", "b"], broken)
        assert len(idx) == 0 and idx.ids == []
    idx = cls()
    with pytest.raises(ValueError):
        idx.restore(["a", "b", "c"], arrays)  # another pool size
    idx.restore(["a", "b"], arrays)
    with pytest.raises(ValueError, match="empty"):
        idx.restore(["a", "b"], arrays)


def test_terms_round_trip_and_a_newline_is_refused():
    terms = ["send", "e-mail", "são", "weather forecast"]
    assert unpack_terms(pack_terms(terms)) == terms
    assert unpack_terms(pack_terms([])) == []
    with pytest.raises(ValueError):
        pack_terms(["two\nlines"])
    with pytest.raises(ValueError):
        unpack_terms(pack_terms(terms), expected=5)


@pytest.mark.parametrize("kind", CONFIGS)
def test_a_snapshot_of_the_same_pool_restores_it_exactly(kind):
    config = CONFIGS[kind]
    tools = pool(30)
    digests = [digest(t) for t in tools]
    built = SemanticIndex.build(tools, vectors(30), config)
    restored = snapshot.restore(snapshot.dump(built, digests), config, tools, digests)
    assert restored is not None
    lexical, changed = restored
    assert changed == 0
    assert_same(lexical, built.lexical)
    index = SemanticIndex.build(tools, vectors(30), config, lexical=lexical)
    for q in QUERIES:
        for a, b in zip(index.search(q, vectors(1)[0], 10), built.search(q, vectors(1)[0], 10), strict=True):
            np.testing.assert_array_equal(a, b)


@settings(max_examples=40, deadline=None, derandomize=True)
@given(
    kind=st.sampled_from(list(CONFIGS)),
    removed=st.sets(st.integers(0, 19), max_size=19),
    added=st.integers(0, 6),
)
def test_removals_and_appends_since_the_snapshot_are_followed_to_a_fresh_build(kind, removed, added):
    config, tools = CONFIGS[kind], pool(26)
    saved = tools[:20]
    blob = snapshot.dump(SemanticIndex.build(saved, vectors(20), config), [digest(t) for t in saved])
    now = [t for i, t in enumerate(saved) if i not in removed] + tools[20 : 20 + added]
    restored = snapshot.restore(blob, config, now, [digest(t) for t in now])
    if len(removed) == 20:
        assert restored is None  # nothing kept: nothing to gain
        return
    assert restored is not None
    lexical, changed = restored
    assert changed == len(removed) + added
    assert_same(lexical, SemanticIndex.build(now, vectors(len(now)), config).lexical)


def test_only_the_appended_tools_are_read(monkeypatch):
    tools = pool(30)
    blob = snapshot.dump(SemanticIndex.build(tools[:25], vectors(25)), [digest(t) for t in tools[:25]])
    read = []
    real = snapshot.lexical_text
    monkeypatch.setattr(snapshot, "lexical_text", lambda t, cfg: read.append(t.id) or real(t, cfg))
    assert snapshot.restore(blob, DEFAULT_SEMANTIC, tools, [digest(t) for t in tools]) is not None
    assert read == [t.id for t in tools[25:]]


def test_a_snapshot_that_cannot_give_the_pool_is_refused():
    tools = pool(12)
    digests = [digest(t) for t in tools]
    blob = snapshot.dump(SemanticIndex.build(tools, vectors(12)), digests)
    changed = list(digests)
    changed[4] = b"x" * 16  # a tool changed in place, in the middle: its position is not an append
    assert snapshot.restore(blob, DEFAULT_SEMANTIC, tools, changed) is None
    swapped = [tools[1], tools[0], *tools[2:]]
    assert snapshot.restore(blob, DEFAULT_SEMANTIC, swapped, [digest(t) for t in swapped]) is None
    other = DEFAULT_SEMANTIC.with_(stem=False)  # other tokens: another fingerprint
    assert snapshot.restore(blob, other, tools, digests) is None
    assert snapshot.restore(blob, BM25, tools, digests) is None  # another kind of lexical index
    buf = io.BytesIO()
    np.savez(buf, header=np.frombuffer(b'{"format": 1}', dtype=np.uint8))
    for junk in (b"", b"not a snapshot", blob[: len(blob) // 2], buf.getvalue()):
        assert snapshot.restore(junk, DEFAULT_SEMANTIC, tools, digests) is None


def test_a_pool_without_a_lexical_part_has_no_snapshot():
    dense_only = DEFAULT_SEMANTIC.with_(lexical="none", dense_weight=1.0)
    tools = pool(3)
    assert snapshot.dump(SemanticIndex.build(tools, vectors(3), dense_only), [b"d"] * 3) is None
    with pytest.raises(ValueError):  # digests of different widths
        snapshot.dump(SemanticIndex.build(tools, vectors(3)), [b"d", b"dd", b"d"])


def test_the_fingerprint_follows_the_lexical_settings_not_the_others():
    fp = snapshot.fingerprint
    assert fp(DEFAULT_SEMANTIC) == fp(DEFAULT_SEMANTIC.with_(dense_weight=0.9, hnsw_threshold=5))
    assert fp(DEFAULT_SEMANTIC) != fp(DEFAULT_SEMANTIC.with_(stem=False))
    text = DEFAULT_SEMANTIC.lexical_text
    assert fp(DEFAULT_SEMANTIC) != fp(DEFAULT_SEMANTIC.with_(lexical_text=type(text)(provider=False)))


def test_build_refuses_a_lexical_index_of_other_tools():
    tools = pool(4)
    other = TfidfIndex()
    other.add(["t0", "t1"], ["a", "b"])
    with pytest.raises(Exception, match="not one of these tools"):
        SemanticIndex.build(tools, vectors(4), lexical=other)
    with pytest.raises(Exception, match="not one of these tools"):
        SemanticIndex.build(tools, vectors(4), lexical=BM25Index())


@pytest.mark.parametrize("cls", [TfidfIndex, BM25Index])
def test_the_export_after_changes_is_a_fresh_builds_export(cls):
    """Terms only removed tools had are not carried on: a snapshot saved by a process that followed a
    snapshot saved by another (and so on) would otherwise keep every term the catalog ever had."""
    tools = pool(30)
    texts = {t.id: f"{t.name} {t.description}" for t in tools}
    followed = cls()
    followed.add(list(texts), list(texts.values()))
    followed.remove(["t3", "t17", "t22"])  # each took its own "zq..x" digits with it
    followed.add(["late"], ["a late weather tool"])
    texts = {i: texts[i] for i in followed.ids[:-1]} | {"late": "a late weather tool"}
    fresh = cls()
    fresh.add(list(texts), list(texts.values()))
    got, expected = followed.export(), fresh.export()
    assert got.keys() == expected.keys()
    for name in expected:
        np.testing.assert_array_equal(got[name], expected[name], err_msg=name)


def test_the_fingerprint_follows_the_unicode_tables_the_tokenizer_uses(monkeypatch):
    import unicodedata

    before = snapshot.fingerprint(DEFAULT_SEMANTIC)
    monkeypatch.setattr(unicodedata, "unidata_version", "99.0.0")  # another Python: other word characters
    snapshot.fingerprint.cache_clear()
    try:
        assert snapshot.fingerprint(DEFAULT_SEMANTIC) != before
    finally:
        snapshot.fingerprint.cache_clear()


def test_a_compressed_snapshot_is_refused_without_inflating_it():
    """np.savez writes members stored as they are; a compressed one (a zip bomb) is never read."""
    tools = pool(6)
    digests = [digest(t) for t in tools]
    built = SemanticIndex.build(tools, vectors(6))
    members = np.load(io.BytesIO(snapshot.dump(built, digests)), allow_pickle=False)
    buf = io.BytesIO()
    np.savez_compressed(buf, **{name: members[name] for name in members.files})
    assert snapshot.restore(buf.getvalue(), DEFAULT_SEMANTIC, tools, digests) is None
    assert snapshot.restore(snapshot.dump(built, digests), DEFAULT_SEMANTIC, tools, digests) is not None


def test_bm25_forgets_the_terms_of_removed_tools():
    """A long-lived process whose catalog churns keeps only the terms of the tools it indexes now."""
    idx = BM25Index()
    idx.add([f"t{i}" for i in range(5)], [f"weather forecast zq{i}x" for i in range(5)])
    idx.remove(["t1", "t2"])
    assert set(idx._terms) == {t for i in (0, 3, 4) for t in idx.tokens(f"weather forecast zq{i}x")}
    idx.add(["t9"], ["send email"])
    assert "email" in idx._terms and "zq1x" not in idx._terms
