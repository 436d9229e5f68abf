"""The TF-IDF index is updated in place on add/remove; it must score exactly as scikit-learn refit on the
remaining texts would, and never tokenize a text twice."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.feature_extraction.text import TfidfVectorizer

from rated.index.lexical import BM25Index
from rated.index.tfidf import TfidfIndex

WORDS = "send email weather forecast city flight search book hotel price stock quote news map route".split()
QUERIES = ["send an email about the weather", "cheap flight and hotel", "stock price news", "zebra", ""]


def _rare(i: int) -> str:
    """A word only tool ``i`` has (letters only: the tokenizer splits letters from digits)."""
    return "zz" + chr(97 + i % 26) + chr(97 + i // 26)


def _texts(n: int, seed: int) -> list[str]:
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        words = rng.choice(WORDS, size=int(rng.integers(3, 12))).tolist()
        out.append(" ".join(words) + f" {_rare(i)} getTool{i % 7}Data")
    return out


def replay(idx: TfidfIndex, steps, pool: list[str]) -> dict[str, str]:
    """Apply ``(add?, picks)`` steps (tool ``tN`` has text ``pool[N]``; a removal keeps one tool at least);
    the tools that remain, with their texts, in the index's order."""
    live: dict[str, str] = {}
    for add, picks in steps:
        ids = list(dict.fromkeys(f"t{p}" for p in picks))
        if add:
            new = [i for i in ids if i not in live]
            if new:
                idx.add(new, [pool[int(i[1:])] for i in new])
                live.update((i, pool[int(i[1:])]) for i in new)
        else:
            gone = [i for i in ids if i in live]
            if gone and len(gone) < len(live):
                idx.remove(gone)
                for i in gone:
                    del live[i]
    return live


def _sklearn_scores(idx: TfidfIndex, texts: list[str], queries: list[str], sublinear: bool) -> np.ndarray:
    vec = TfidfVectorizer(analyzer=idx.tokens, sublinear_tf=sublinear)
    matrix = vec.fit_transform(texts)
    return np.asarray((vec.transform(queries) @ matrix.T).toarray(), dtype=np.float32)


@pytest.mark.parametrize("sublinear", [True, False])
def test_fresh_index_scores_equal_scikit_learn_bit_for_bit(sublinear):
    texts = _texts(60, 0)
    idx = TfidfIndex(sublinear_tf=sublinear)
    idx.add([f"t{i}" for i in range(60)], texts)
    expected = _sklearn_scores(idx, texts, QUERIES, sublinear)
    np.testing.assert_array_equal(idx.scores_many(QUERIES), expected)
    for q, row in zip(QUERIES, expected, strict=True):
        np.testing.assert_allclose(idx.scores(q), row, rtol=0, atol=1e-7)


def test_adds_and_removes_score_as_a_refit_on_the_remaining_texts():
    texts = _texts(80, 1)
    ids = [f"t{i}" for i in range(80)]
    idx = TfidfIndex()
    idx.add(ids[:30], texts[:30])
    idx.add(ids[30:], texts[30:])  # new terms (unique30..) join the vocabulary
    idx.remove(ids[10:50])  # terms only those tools had must leave the query's norm
    idx.add(["late"], ["brand new words: teleport quantum"])
    kept = texts[:10] + texts[50:] + ["brand new words: teleport quantum"]
    assert idx.ids == ids[:10] + ids[50:] + ["late"]
    queries = [*QUERIES, f"{_rare(20)} email", "teleport me"]  # a removed tool's own word
    expected = _sklearn_scores(idx, kept, queries, True)
    np.testing.assert_allclose(idx.scores_many(queries), expected, rtol=0, atol=1e-6)
    for q, row in zip(queries, expected, strict=True):
        np.testing.assert_allclose(idx.scores(q), row, rtol=0, atol=1e-6)
    assert idx.scores("teleport")[-1] > 0 and not idx.scores(_rare(20)).any()


def test_removing_most_tools_forgets_their_terms():
    texts = _texts(40, 2)
    idx = TfidfIndex()
    idx.add([f"t{i}" for i in range(40)], texts)
    before = len(idx._vocabulary)
    idx.remove([f"t{i}" for i in range(1, 40)])
    assert len(idx._vocabulary) < before / 2  # compacted: only t0's terms remain
    queries = [f"{_rare(0)} email", _rare(5)]
    expected = _sklearn_scores(idx, texts[:1], queries, True)
    np.testing.assert_allclose(idx.scores_many(queries), expected, rtol=0, atol=1e-6)
    idx.add(["t1"], [texts[1]])  # a forgotten term comes back under a new column
    assert idx.scores(_rare(1))[1] > 0


def test_empty_documents_and_an_emptied_pool_score_zero():
    idx = TfidfIndex()
    idx.add(["a", "b"], ["the of and", "!!!"])  # stop words and punctuation only: no terms at all
    assert not idx.scores("the weather").any() and idx.scores_many(["x"]).shape == (1, 2)
    idx.add(["c"], ["weather forecast"])
    assert idx.scores("weather")[2] > 0
    idx.remove(["c"])
    assert not idx.scores("weather").any()


@pytest.mark.parametrize("cls", [TfidfIndex, BM25Index])
def test_each_text_is_tokenized_once_whatever_changes_later(cls, monkeypatch):
    idx = cls()
    seen: list[str] = []
    tokens = idx.tokens
    monkeypatch.setattr(idx, "tokens", lambda text: seen.append(text) or tokens(text))
    texts = _texts(20, 3)
    idx.add([f"t{i}" for i in range(10)], texts[:10])
    idx.add([f"t{i}" for i in range(10, 20)], texts[10:])
    idx.remove(["t3", "t15"])
    assert sorted(seen) == sorted(texts)  # no text re-read on the second add or on the removal
    assert idx.ids[int(np.argmax(idx.scores(texts[12])))] == "t12"


def test_a_failing_tokenizer_leaves_the_index_unchanged(monkeypatch):
    idx = TfidfIndex()
    idx.add(["a"], ["send email"])
    before = idx.scores("email")
    monkeypatch.setattr(idx, "tokens", lambda text: 1 / 0)
    with pytest.raises(ZeroDivisionError):
        idx.add(["b"], ["weather"])
    monkeypatch.undo()
    assert idx.ids == ["a"] and len(idx) == 1
    np.testing.assert_array_equal(idx.scores("email"), before)
    idx.add(["b"], ["weather"])  # the id was not taken by the failed add


@pytest.mark.parametrize("sublinear", [True, False])
def test_any_sequence_of_adds_and_removes_scores_as_a_fresh_fit(sublinear):
    """Random edit sequences (hypothesis): the in-place index always scores like scikit-learn refit on
    the texts that remain, in their order, for the single-query and the batch path."""
    pool = _texts(40, 4)
    ops = st.lists(st.tuples(st.booleans(), st.lists(st.integers(0, 39), min_size=1, max_size=6)), max_size=8)

    @settings(max_examples=60, deadline=None)
    @given(ops)
    def check(steps):
        idx = TfidfIndex(sublinear_tf=sublinear)
        live = replay(idx, steps, pool)
        assert idx.ids == list(live)
        if not live or not any(idx.tokens(t) for t in live.values()):
            return
        queries = [*QUERIES, f"{_rare(3)} {_rare(17)} send"]
        expected = _sklearn_scores(idx, list(live.values()), queries, sublinear)
        np.testing.assert_allclose(idx.scores_many(queries), expected, rtol=0, atol=1e-6)
        for q, row in zip(queries, expected, strict=True):
            np.testing.assert_allclose(idx.scores(q), row, rtol=0, atol=1e-6)

    check()


# ---- bit for bit a fresh fit (the vocabulary numbering too), whatever changes came before ----
CANON_WORDS = [f"w{a}{b}" for a in "abcdefgh" for b in "abcdefgh"]


def _canon_texts(n: int, seed: int) -> list[str]:
    rng = np.random.default_rng(seed)
    return [" ".join(rng.choice(CANON_WORDS, size=int(rng.integers(3, 15))).tolist()) for _ in range(n)]


def _same(a: TfidfIndex, b: TfidfIndex) -> None:
    assert a.ids == b.ids and a._vocabulary == b._vocabulary
    for name in ("data", "indices", "indptr"):
        np.testing.assert_array_equal(getattr(a._matrix, name), getattr(b._matrix, name), err_msg=name)
    np.testing.assert_array_equal(a._idf[a._df > 0], b._idf)


def test_a_removal_leaves_the_index_a_fresh_fit_makes():
    texts = _canon_texts(60, 0)
    idx = TfidfIndex()
    idx.add([f"t{i}" for i in range(60)], texts)
    idx.remove([f"t{i}" for i in range(0, 60, 3)])
    idx.add(["late"], ["wab wcd brand new words"])
    fresh = TfidfIndex()
    kept = [i for i in range(60) if i % 3]
    fresh.add([f"t{i}" for i in kept] + ["late"], [texts[i] for i in kept] + ["wab wcd brand new words"])
    _same(idx, fresh)


@settings(max_examples=40, deadline=None, derandomize=True, database=None)
@given(st.lists(st.tuples(st.booleans(), st.lists(st.integers(0, 29), min_size=1, max_size=5)), max_size=8))
def test_any_sequence_of_changes_leaves_the_index_a_fresh_fit_makes(steps):
    pool = _canon_texts(30, 1)
    idx = TfidfIndex()
    live = replay(idx, steps, pool)
    if not live:
        return
    fresh = TfidfIndex()
    fresh.add(list(live), list(live.values()))
    _same(idx, fresh)
