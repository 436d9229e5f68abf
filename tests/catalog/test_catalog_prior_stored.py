"""A catalog row's ``reliable`` flag obeys the documented rule on the ``r_static`` the row stores.

``rated catalog stats`` counts reliable tools from the stored (rounded) ``r_static``, ``rated catalog
build`` from the flag: on a tool just under the threshold they disagreed (the real catalog: 1,071 vs
1,069 reliable tools, and rows reading ``r_static 0.8, reliable false``).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from rated.catalog.prior import RELIABLE_THRESHOLD, PriorStats, compute_prior
from rated.catalog.schema import Tool


class _CosineEncoder:
    """Embeds the name and the description of one tool at a chosen cosine."""

    def __init__(self, name: str, cosine: float) -> None:
        self.name, self.cosine = name, cosine

    def encode_tools(self, texts: Sequence[str], batch_size: int = 64, progress: bool = False) -> np.ndarray:
        other = [self.cosine, float(np.sqrt(1.0 - self.cosine**2))]
        return np.array([[1.0, 0.0] if t == self.name else other for t in texts], dtype=np.float32)

    def encode_queries(
        self, texts: Sequence[str], batch_size: int = 64, progress: bool = False
    ) -> np.ndarray:
        return self.encode_tools(texts)


def test_flag_follows_the_stored_r_static_just_under_the_threshold() -> None:
    tool = Tool(id="t", name="lookup", description="Look a record up by its id", source="official")
    # w_src 1.0 and r_qual ~1.0 (stats far below the tool): r_static = 0.5 + 0.5 * cosine = 0.79996
    res = compute_prior([tool], _CosineEncoder("lookup", 0.59992), stats=PriorStats(0, 1, 0, 1))
    assert float(res.r_static[0]) < RELIABLE_THRESHOLD
    row = res.record(0)
    assert row["r_static"] == RELIABLE_THRESHOLD
    assert row["reliable"] is True
    assert bool(res.reliable[0])
