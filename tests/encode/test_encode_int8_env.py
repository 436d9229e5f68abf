"""``RATED_ENCODER_INT8``: the documented ``1`` and its usual spellings pick the int8 graph, and a value
that means neither is an error instead of silently keeping the float graph. No model is loaded."""

from __future__ import annotations

import pytest

import rated.encode as encode
from rated.errors import ModelError


@pytest.fixture
def loads(monkeypatch):
    """Record which graph ``default_encoder`` would load, without loading one."""
    calls: list[bool] = []
    monkeypatch.setattr(encode, "_defaults", {})
    monkeypatch.setattr(
        encode, "_load_default", lambda progress, quantized: calls.append(quantized) or quantized
    )
    return calls


@pytest.mark.parametrize(
    ("value", "int8"),
    [("1", True), ("true", True), ("YES", True), (" on ", True), ("0", False), ("", False), ("off", False)],
)
def test_the_variable_picks_the_graph(monkeypatch, loads, value, int8):
    monkeypatch.setenv(encode.INT8_ENV, value)
    encode.default_encoder(progress=False)
    assert loads == [int8]


def test_unset_is_the_float_graph(loads):
    encode.default_encoder(progress=False)
    assert loads == [False]


@pytest.mark.parametrize("value", ["2", "int8", "ture"])
def test_a_value_that_means_neither_is_named(monkeypatch, loads, value):
    monkeypatch.setenv(encode.INT8_ENV, value)
    with pytest.raises(ModelError, match=f"RATED_ENCODER_INT8 must be 1 or 0, got '{value}'"):
        encode.default_encoder(progress=False)
    assert loads == []


def test_an_explicit_argument_wins_over_the_variable(monkeypatch, loads):
    monkeypatch.setenv(encode.INT8_ENV, "ture")
    encode.default_encoder(progress=False, quantized=True)
    assert loads == [True]
