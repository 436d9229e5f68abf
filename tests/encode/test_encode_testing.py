"""HashEncoder: the fake encoder other tests rely on must be deterministic, unit-norm and similarity-aware."""

from __future__ import annotations

import numpy as np
import pytest

from rated.encode import Encoder
from rated.encode.testing import HashEncoder


def test_implements_protocol_and_shapes():
    enc = HashEncoder(dim=32)
    assert isinstance(enc, Encoder)
    out = enc.encode_tools(["a b c", "", "!!!"])
    assert out.shape == (3, 32) and out.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(out, axis=1), 1.0, rtol=1e-5)
    assert enc.encode_queries([]).shape == (0, 32)


def test_deterministic_and_seeded():
    texts = ["book a flight to Rome", "get the weather"]
    a = HashEncoder(seed=0).encode_queries(texts)
    b = HashEncoder(seed=0).encode_tools(texts)
    c = HashEncoder(seed=1).encode_queries(texts)
    np.testing.assert_array_equal(a, b)
    assert not np.allclose(a, c)


def test_similar_texts_are_closer():
    enc = HashEncoder()
    q, near, far = enc.encode_queries(["send an email to Bob", "send email message", "stock price of Apple"])
    assert q @ near > q @ far + 0.2


def test_rejects_single_string():
    with pytest.raises(TypeError):
        HashEncoder().encode_queries("oops")  # type: ignore[arg-type]
