import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rated.errors import StoreError
from rated.store.codec import decode_state, encode_state


def test_round_trip_keeps_names_dtypes_shapes_and_values():
    state = {
        "A": np.linspace(0, 1, 7, dtype=np.float32),
        "b": np.arange(6, dtype=np.float64).reshape(2, 3),
        "n": np.array(5, dtype=np.int64),
        "mask": np.array([True, False]),
    }
    out = decode_state(encode_state(state))
    assert list(out) == list(state)
    for name, arr in state.items():
        assert out[name].dtype == arr.dtype and out[name].shape == arr.shape
        np.testing.assert_array_equal(out[name], arr)
    out["A"][0] = 9.0  # decoded arrays are writable copies
    assert out["A"][0] == 9.0


@settings(max_examples=50, deadline=None)
@given(st.lists(st.floats(allow_nan=False, width=32), min_size=0, max_size=40))
def test_round_trip_any_float_vector(values):
    arr = np.array(values, dtype=np.float32)
    np.testing.assert_array_equal(decode_state(encode_state({"x": arr}))["x"], arr)


def test_object_arrays_are_refused():
    with pytest.raises(StoreError, match="dtype"):
        encode_state({"x": np.array([object()], dtype=object)})


@pytest.mark.parametrize(
    "blob",
    [
        b"",
        b"PK\x03\x04 a zip",
        b"RST1\xff\xff\x00\x00{",
        b"RST1" + (30).to_bytes(4, "little") + b'[["x","|O",[1]]]',
    ],
)
def test_damaged_or_foreign_blobs_raise_store_error(blob):
    with pytest.raises(StoreError):
        decode_state(blob)


def test_truncated_and_trailing_bytes_are_detected():
    blob = encode_state({"x": np.ones(4, np.float32)})
    with pytest.raises(StoreError):
        decode_state(blob[:-1])
    with pytest.raises(StoreError):
        decode_state(blob + b"\x00")
