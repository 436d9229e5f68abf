"""The TF-IDF index after any adds and removes is, to the last bit, the index a fresh fit on the texts that
remain makes: the same vocabulary numbering, so the same row sums, weights and scores. A replica that follows
another writer's changes in place (``SemanticIndex.follow``) then scores exactly as a process opening the
store now, not within a float64 ulp of it."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from rated.index.tfidf import TfidfIndex

WORDS = [f"w{a}{b}" for a in "abcdefgh" for b in "abcdefgh"]


def _texts(n: int, seed: int) -> list[str]:
    rng = np.random.default_rng(seed)
    return [" ".join(rng.choice(WORDS, size=int(rng.integers(3, 15))).tolist()) for _ in range(n)]


def _same(a: TfidfIndex, b: TfidfIndex) -> None:
    assert a.ids == b.ids and a._vocabulary == b._vocabulary
    for name in ("data", "indices", "indptr"):
        np.testing.assert_array_equal(getattr(a._matrix, name), getattr(b._matrix, name), err_msg=name)
    np.testing.assert_array_equal(a._idf[a._df > 0], b._idf)


def test_a_removal_leaves_the_index_a_fresh_fit_makes():
    texts = _texts(60, 0)
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
    pool = _texts(30, 1)
    idx, live = TfidfIndex(), {}
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
    if not live:
        return
    fresh = TfidfIndex()
    fresh.add(list(live), list(live.values()))
    _same(idx, fresh)
