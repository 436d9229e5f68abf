"""The registry of re-rankers by name: ``make_policy("breaker", cooldown=400)``.

Names are what the CLI, the simulator and the docs use; a name maps to a class and the arguments that
make it that method (``rated_no_feedback`` is ``StaticPolicy(w_sem=0.75, w_prior=0.10)``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from rated.errors import ConfigError
from rated.policy.base import BasePolicy
from rated.policy.batch_policy import BatchPolicy
from rated.policy.blacklist import BlacklistPolicy
from rated.policy.breaker import CircuitBreakerPolicy
from rated.policy.global_mab import GlobalMABPolicy
from rated.policy.linucb import PaperLinUCBPolicy
from rated.policy.rated import RatedPolicy
from rated.policy.retry import RetryPolicy
from rated.policy.static import StaticPolicy
from rated.policy.window_breaker import WindowBreakerPolicy

__all__ = ["POLICIES", "PolicySpec", "make_policy"]


@dataclass(frozen=True)
class PolicySpec:
    """A named method: its class, the arguments that define it, and a one-line description."""

    cls: type[BasePolicy]
    defaults: Mapping[str, Any] = field(default_factory=dict)
    description: str = ""

    def make(self, **params: Any) -> BasePolicy:
        return self.cls(**{**self.defaults, **params})


POLICIES: Mapping[str, PolicySpec] = MappingProxyType(
    {
        "static": PolicySpec(StaticPolicy, {}, "the retriever's own order, no feedback"),
        "rated_no_feedback": PolicySpec(
            StaticPolicy, {"w_sem": 0.75, "w_prior": 0.10}, "RATED's fusion without the bandit (w2 = 0)"
        ),
        "blacklist": PolicySpec(BlacklistPolicy, {}, "a tool is excluded for good after one failure"),
        "retry3": PolicySpec(RetryPolicy, {"attempts": 3}, "up to three ranked tools per step, no memory"),
        "breaker": PolicySpec(
            CircuitBreakerPolicy, {}, "consecutive-failure circuit breaker, half-open probe"
        ),
        "window_breaker": PolicySpec(WindowBreakerPolicy, {}, "failure-rate breaker over a sliding window"),
        "global_mab": PolicySpec(GlobalMABPolicy, {}, "one context-free success estimate per tool"),
        "batch_policy": PolicySpec(BatchPolicy, {}, "a re-ranker refreshed only every B steps"),
        "linucb_paper": PolicySpec(
            PaperLinUCBPolicy, {}, "the paper's diagonal LinUCB as written (ablation)"
        ),
        "rated": PolicySpec(RatedPolicy, {}, "RATED: semantic + bounded bandit + prior, with health beliefs"),
    }
)


def make_policy(name: str, **params: Any) -> BasePolicy:
    """A fresh policy by registry name; ``params`` override the method's defaults."""
    spec = POLICIES.get(name)
    if spec is None:
        raise ConfigError(f"unknown policy {name!r}; expected one of: {', '.join(POLICIES)}")
    try:
        return spec.make(**params)
    except TypeError as exc:
        raise ConfigError(f"bad parameters for policy {name!r}: {exc}") from None
