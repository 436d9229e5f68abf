import numpy as np
import pytest

from rated.errors import CatalogError, ConfigError, UnknownToolError
from rated.index.dense import DenseIndex
from rated.index.lexical import BM25Index
from rated.index.tfidf import TfidfIndex
from rated.index.tokenize import s_stem, tokenize


def _unit(rng, n, d):
    v = rng.standard_normal((n, d)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


@pytest.mark.parametrize("kind", ["flat", "hnsw"])
def test_dense_index_matches_brute_force_and_removes_without_reencoding(kind):
    rng = np.random.default_rng(0)
    vecs = _unit(rng, 300, 16)
    ids = [f"t{i}" for i in range(300)]
    idx = DenseIndex(16, kind=kind)
    idx.add(ids[:200], vecs[:200])
    idx.add(ids[200:], vecs[200:])
    q = _unit(rng, 5, 16)
    pos, scores = idx.search_many(q, 10)
    expect = np.argsort(-(q @ vecs.T), axis=1)[:, :10]
    if kind == "flat":
        assert (pos == expect).all()
    else:  # approximate, but on 300 points it should find nearly all
        assert np.mean([len(set(a) & set(b)) for a, b in zip(pos, expect, strict=True)]) >= 9
    np.testing.assert_allclose(scores[:, 0], (q @ vecs.T).max(axis=1), rtol=1e-5)

    idx.remove(["t0", "t5"])
    assert len(idx) == 298 and "t0" not in idx.ids and idx.ids[0] == "t1"
    np.testing.assert_array_equal(idx.vectors[idx.position("t7")], vecs[7])
    pos, _ = idx.search(vecs[5], 1)
    assert idx.ids[int(pos[0])] != "t5"


def test_dense_index_errors():
    idx = DenseIndex(4)
    idx.add(["a"], np.eye(4, dtype=np.float32)[:1])
    with pytest.raises(CatalogError, match="'a'"):
        idx.add(["a"], np.eye(4, dtype=np.float32)[:1])
    with pytest.raises(CatalogError, match="'b'"):
        idx.add(["b", "b"], np.eye(4, dtype=np.float32)[:2])
    with pytest.raises(ConfigError, match="shape"):
        idx.add(["c"], np.ones((1, 3), dtype=np.float32))
    with pytest.raises(UnknownToolError):
        idx.remove(["zzz"])
    with pytest.raises(ConfigError):
        DenseIndex(4, kind="ivf")
    assert idx.search(np.ones(4, dtype=np.float32), 10)[0].tolist() == [0]


def test_tokenizer_splits_identifiers_drops_stop_words_and_stems_plurals():
    assert tokenize("The sendEmailMessages_v2 API") == ["send", "email", "messages", "v", "2", "api"]
    assert [s_stem(w) for w in ["cities", "glasses", "status", "shoes", "flights", "is"]] == [
        "city",
        "glasse",
        "status",
        "shoe",
        "flight",
        "is",
    ]


TEXTS = {
    "weather": "getWeatherForecast: weather forecast for a city",
    "email": "sendEmail: send an email message to a recipient",
    "flight": "searchFlights: search flights between two airports",
}


@pytest.mark.parametrize("cls", [BM25Index, TfidfIndex])
def test_lexical_indexes_rank_by_shared_words_and_rebuild_on_add_remove(cls):
    idx = cls()
    idx.add(list(TEXTS)[:2], list(TEXTS.values())[:2])
    idx.add(["flight"], [TEXTS["flight"]])
    s = idx.scores("cheap flight from Paris to Rome")
    assert idx.ids[int(np.argmax(s))] == "flight" and s.shape == (3,)
    assert not idx.scores("zebra").any()  # no shared word: all zero, no error
    idx.remove(["flight"])
    assert idx.ids == ["weather", "email"]
    assert idx.ids[int(np.argmax(idx.scores("email my friend")))] == "email"
    with pytest.raises(UnknownToolError):
        idx.remove(["flight"])
    with pytest.raises(CatalogError):
        idx.add(["email"], ["dup"])


def test_bm25_score_bound_caps_every_score():
    idx = BM25Index()
    idx.add(list(TEXTS), list(TEXTS.values()))
    for q in ["weather forecast email", "search flights flights", "send message"]:
        assert idx.scores(q).max() <= idx.score_bound(q) + 1e-6
        assert idx.score_bound(q) > 0
    assert idx.score_bound("zebra") == 0.0
    pos, scores = idx.search("email", 2)
    assert idx.ids[int(pos[0])] == "email" and scores[0] >= scores[1]


@pytest.mark.parametrize("sublinear", [True, False])
def test_tfidf_single_query_path_equals_scikit_learn_transform(sublinear):
    idx = TfidfIndex(sublinear_tf=sublinear)
    texts = [
        "sendEmail: send an email message to a contact",
        "getWeatherForecast: weather forecast for a city, today and tomorrow",
        "searchFlights: search flights between two cities on a date",
        "email_digest: summarise the emails of a mailbox, email by email",
    ]
    idx.add([f"t{i}" for i in range(len(texts))], texts)
    queries = [
        "send email email email to Bob",
        "flights to cities",
        "unknownword",
        "",
        "weather weather city",
    ]
    for q in queries:
        np.testing.assert_allclose(idx.scores(q), idx.scores_many([q])[0], rtol=0, atol=1e-7)
    assert idx.scores("send email")[0] > 0 and not idx.scores("unknownword").any()


def test_dense_single_query_scores_match_matrix_product():
    rng = np.random.default_rng(3)
    vecs = rng.standard_normal((40, 16)).astype(np.float32)
    idx = DenseIndex(dim=16)
    idx.add([str(i) for i in range(40)], vecs)
    q = vecs[7:8]
    np.testing.assert_allclose(idx.scores(q), q @ vecs.T, atol=1e-5)
    np.testing.assert_allclose(idx.scores(q, np.array([3, 30])), q @ vecs[[3, 30]].T, atol=1e-5)


def test_dense_scores_at_most_positions_keep_the_shape_of_the_query():
    """Scoring most of the pool scores all of it and picks the positions: for a 1-d query vector as for
    a few positions (a 1-d answer), not an IndexError."""
    rng = np.random.default_rng(4)
    vecs = rng.standard_normal((40, 16)).astype(np.float32)
    idx = DenseIndex(dim=16)
    idx.add([str(i) for i in range(40)], vecs)
    most, q = np.arange(2, 40), vecs[5]
    np.testing.assert_allclose(idx.scores(q, most), vecs[most] @ q, atol=1e-5)
    np.testing.assert_allclose(idx.scores(q, np.array([3])), vecs[[3]] @ q, atol=1e-5)
    np.testing.assert_allclose(idx.scores(vecs[:2], most), vecs[:2] @ vecs[most].T, atol=1e-5)
