"""The discounted counts shared by GlobalMABPolicy and BatchPolicy: fading, folding, and a first outcome."""

from __future__ import annotations

import math

import pytest

from rated.outcome import Outcome
from rated.policy.base import Feedback
from rated.policy.global_mab import apply_outcome, faded, success_value


def test_faded_halves_per_half_life_and_never_grows() -> None:
    assert faded((10.0, 4.0, 2.0), 20.0, 10.0) == pytest.approx((2.0, 1.0))
    assert faded((10.0, 4.0, 2.0), 20.0, math.inf) == (4.0, 2.0)
    assert faded((10.0, 4.0, 2.0), 5.0, 10.0) == (4.0, 2.0)  # an outcome from the past does not un-fade


def test_apply_outcome_discounts_then_adds() -> None:
    assert apply_outcome(None, 3.0, 1.0, 0.5, math.inf) == (3.0, 1.0, 0.0)
    assert apply_outcome(None, 3.0, 0.0, 0.5, 100.0) == apply_outcome((3.0, 0.0, 0.0), 3.0, 0.0, 0.5, 100.0)
    assert apply_outcome((3.0, 2.0, 2.0), 13.0, 0.0, 0.5, 10.0) == pytest.approx((13.0, 0.5, 1.5))


def test_success_value() -> None:
    assert success_value(Feedback("a", Outcome.of("success"), now=0.0)) == 1.0
    assert success_value(Feedback("a", Outcome.of("timeout"), now=0.0)) == 0.0
