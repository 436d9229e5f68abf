"""Test-wide fixtures: a user's encoder preferences in the environment must not change what tests run."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _no_encoder_preferences(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("RATED_ENCODER_BACKEND", "RATED_ENCODER_INT8"):
        monkeypatch.delenv(name, raising=False)
