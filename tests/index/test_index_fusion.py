import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rated.errors import ConfigError
from rated.index.fusion import convex, normalise, ranks, rrf, top_k


def test_normalise_methods_by_hand():
    s = np.array([2.0, 4.0, 0.0], dtype=np.float32)
    assert normalise(s, "max").tolist() == [0.5, 1.0, 0.0]
    assert normalise(s, "minmax").tolist() == [0.5, 1.0, 0.0]
    assert normalise(s + 1, "minmax").tolist() == [0.5, 1.0, 0.0]
    assert normalise(s, "bound", 8.0).tolist() == [0.25, 0.5, 0.0]
    assert normalise(s, "none") is not None and normalise(s, "none").tolist() == [2.0, 4.0, 0.0]
    assert not normalise(np.zeros(3), "max").any() and not normalise(np.ones(3), "minmax").any()
    assert not normalise(s, "bound", 0.0).any()
    with pytest.raises(ConfigError):
        normalise(s, "zscore")
    with pytest.raises(ConfigError):
        normalise(s, "bound")


def test_convex_rrf_ranks_top_k_by_hand():
    assert convex(np.array([1.0, 0.0]), np.array([0.0, 1.0]), 0.75).tolist() == [0.75, 0.25]
    with pytest.raises(ConfigError):
        convex(np.ones(2), np.ones(2), 1.5)
    # rankings [0,1,2] and [1,0]: tool 0 gets 1/61 + 1/62, tool 1 the same, tool 2 only 1/63
    fused = rrf([np.array([0, 1, 2]), np.array([1, 0])], n=3, k=60)
    np.testing.assert_allclose(fused * 2 / 61, [1 / 61 + 1 / 62, 1 / 62 + 1 / 61, 1 / 63], rtol=1e-6)
    assert rrf([np.array([2]), np.array([2])], n=3).tolist() == [0.0, 0.0, 1.0]
    assert ranks(np.array([0.1, 0.9, 0.5])).tolist() == [2, 0, 1]
    pos, sc = top_k(np.array([0.2, 0.9, 0.9, 0.1], dtype=np.float32), 3)
    assert pos.tolist() == [1, 2, 0] and sc.dtype == np.float32
    assert top_k(np.zeros(0), 3)[0].shape == (0,)


def _stable_top(s: np.ndarray, k: int) -> np.ndarray:
    return np.argsort(-s.astype(np.float32), kind="stable")[:k]


def test_top_k_equals_the_stable_sort_when_ties_straddle_the_cut():
    # argpartition kept an arbitrary subset of the scores tied at the k-th place
    rng = np.random.default_rng(7)
    for trial in range(400):
        n = int(rng.integers(1, 3000 if trial % 4 == 0 else 60))
        levels = int(rng.integers(1, 8))  # few distinct values: many ties, often at the cut
        s = rng.integers(0, levels, n).astype(np.float32) / levels
        for k in {1, int(rng.integers(1, n + 1)), n, n + 3}:
            pos, sc = top_k(s, k)
            assert pos.tolist() == _stable_top(s, k).tolist(), (n, levels, k)
            assert pos.dtype == np.int64 and sc.tolist() == s[pos].tolist()


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.sampled_from([0.0, -0.0, 0.5, 1.0, -np.inf, np.inf, np.nan]), min_size=1, max_size=30),
    st.integers(1, 35),
)
def test_top_k_property_with_ties_infinities_and_nan(values, k):
    s = np.array(values, dtype=np.float32)
    assert top_k(s, k)[0].tolist() == _stable_top(s, k).tolist()
