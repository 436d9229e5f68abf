"""compute_prior stays finite and in [0, 1] for odd catalogs and odd encoders, and never warns."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest

from rated.catalog.prior import PriorResult, compute_prior, score_new
from rated.catalog.schema import Tool
from rated.encode.testing import HashEncoder

ENC = HashEncoder(dim=64)


class _NanEncoder:
    """An encoder that returns NaN for one text, as mean pooling over zero tokens would."""

    dim = 8

    def __init__(self, bad: str) -> None:
        self.bad = bad

    def encode_tools(self, texts: Sequence[str], batch_size: int = 64, progress: bool = False) -> np.ndarray:
        out = np.ones((len(texts), self.dim), dtype=np.float32)
        for i, text in enumerate(texts):
            if text == self.bad:
                out[i] = np.nan
        return out

    def encode_queries(
        self, texts: Sequence[str], batch_size: int = 64, progress: bool = False
    ) -> np.ndarray:
        return self.encode_tools(texts)


def _assert_sane(result: PriorResult, n: int) -> None:
    for arr in (result.r_cons, result.w_src, result.r_qual, result.r_static):
        assert arr.shape == (n,)
        assert np.isfinite(arr).all() and (arr >= 0).all() and (arr <= 1).all()


@pytest.mark.parametrize(
    "tools",
    [
        [Tool(id="a", name="a")],
        [Tool(id=f"t{i}", name="same", description="same text") for i in range(4)],
        [Tool(id="a", name="___", description="   "), Tool(id="b", name="!!!", description="d" * 100_000)],
    ],
    ids=["one-bare-tool", "identical-tools", "punctuation-and-huge"],
)
def test_odd_catalogs_give_finite_priors(tools: list[Tool]) -> None:
    _assert_sane(compute_prior(tools, ENC), len(tools))


def test_an_encoder_returning_nan_gives_no_consistency_not_nan() -> None:
    tools = [Tool(id="a", name="a", description="bad"), Tool(id="b", name="b", description="good")]
    result = compute_prior(tools, _NanEncoder("bad"))
    _assert_sane(result, 2)
    assert result.r_cons[0] == 0.0 and result.r_cons[1] == pytest.approx(1.0)


def test_new_tool_far_from_the_fitted_stats_scores_without_overflow() -> None:
    fitted = compute_prior(
        [Tool(id="a", name="a", description="x" * 5000), Tool(id="b", name="b", description="x" * 5001)], ENC
    )
    with np.errstate(over="raise"):
        result = score_new(
            [Tool(id="c", name="c"), Tool(id="d", name="d", description="y" * 10**6)], ENC, fitted.stats
        )
    _assert_sane(result, 2)
    assert result.r_qual[0] < 1e-6 and result.r_qual[1] > 1 - 1e-6
