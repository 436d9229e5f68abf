import numpy as np
import pytest

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
