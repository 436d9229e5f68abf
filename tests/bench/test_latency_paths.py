"""``run_latency`` times each re-ranker on the public API and on the retriever's own path, and times extra
re-rankers (an older RATED, say) with RATED's own history and feedback, in the same run."""

from __future__ import annotations

import sys
from typing import Any

import numpy as np
import pytest

import rated.bench.latency as latency
from rated.bench.dynamic.toy import toy_dataset
from rated.bench.latency import run_latency
from rated.encode.testing import HashEncoder
from rated.errors import ConfigError
from rated.policy import Candidates, Feedback, RatedPolicy, make_policy
from rated.policy.base import BasePolicy, PlainRanking

FAST = {"warmup": 2, "feedback": 150, "k": 5}


def _via_rank() -> bool:
    """True when the caller's caller is ``BasePolicy.rank`` (the public API), not the retriever's path."""
    return sys._getframe(2).f_code is BasePolicy.rank.__code__


class Recorder(RatedPolicy):
    """RATED that keeps every outcome it learned from, and the path of every ranking it gave."""

    def __init__(self, **params: Any):
        super().__init__(**params)
        self.learned: list[tuple] = []
        self.paths: list[str] = []

    def learn(self, feedback: Feedback) -> None:
        ctx = None if feedback.context is None else np.asarray(feedback.context).tolist()
        self.learned.append((feedback.tool_id, feedback.outcome.kind, feedback.now, ctx, feedback.provider))
        super().learn(feedback)

    def _ranked(self, candidates: Candidates) -> PlainRanking:
        self.paths.append("api" if _via_rank() else "live")
        return super()._ranked(candidates)


def test_every_reranker_is_timed_on_both_paths() -> None:
    result = run_latency(
        toy_dataset(), HashEncoder(dim=32), queries=6, extra={"other": RatedPolicy()}, **FAST
    )
    methods = result["methods"]
    for name in ("static_prior", "global_mab", "rated", "other"):
        m = methods[name]
        assert m["added_median_ms"] > 0 and m["cpu_median_ms"] >= 0
        assert m["live_added_p95_ms"] >= m["live_added_median_ms"] > 0 and m["live_cpu_median_ms"] >= 0


def test_a_single_timed_query_times_the_api_path_only() -> None:
    methods = run_latency(toy_dataset(), HashEncoder(dim=32), queries=1, **FAST)["methods"]
    assert methods["rated"]["added_median_ms"] > 0
    assert not any(key.startswith("live_") for m in methods.values() for key in m)


def test_extras_learn_what_rated_learns(monkeypatch: pytest.MonkeyPatch) -> None:
    made: list[Recorder] = []

    def make(name: str, **params: Any):  # type: ignore[no-untyped-def]
        if name != "rated":
            return make_policy(name, **params)
        made.append(Recorder(**params))
        return made[-1]

    monkeypatch.setattr(latency, "make_policy", make)
    extra = Recorder()
    run_latency(toy_dataset(), HashEncoder(dim=32), queries=4, extra={"rated_too": extra}, **FAST)
    (rated,) = made
    assert len(rated.learned) == FAST["feedback"] + FAST["warmup"] + 4
    assert extra.learned == rated.learned
    # one path per timed query in turn, the API's first; each warm-up query ranks on both
    assert rated.paths[2 * FAST["warmup"] :] == ["api", "live", "api", "live"]
    assert sorted(rated.paths[: 2 * FAST["warmup"]]) == ["api", "api", "live", "live"]


class TwoFaced(RatedPolicy):
    """Ranks one way through ``rank``, another through ``_ranked`` alone: what the warm-up check catches."""

    def _ranked(self, candidates: Candidates) -> PlainRanking:
        order, scores, components, healthy, degraded = super()._ranked(candidates)
        return (order if _via_rank() else order[::-1]), scores, components, healthy, degraded


def test_a_policy_ranking_otherwise_on_the_retrievers_path_is_caught() -> None:
    with pytest.raises(RuntimeError, match="two_faced ranks otherwise"):
        run_latency(toy_dataset(), HashEncoder(dim=32), queries=2, extra={"two_faced": TwoFaced()}, **FAST)


@pytest.mark.parametrize("name", ["rated", "encode_only", "feedback_update"])
def test_extras_need_names_of_their_own(name: str) -> None:
    with pytest.raises(ConfigError, match="names of their own"):
        run_latency(toy_dataset(), HashEncoder(dim=32), queries=2, extra={name: RatedPolicy()}, **FAST)
