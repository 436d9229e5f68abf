"""Re-rankers that use execution feedback: RATED and the baselines it is compared with."""

from rated.policy.base import BasePolicy, Candidates, Feedback, Policy, Ranking, State
from rated.policy.batch_policy import BatchPolicy
from rated.policy.blacklist import BlacklistPolicy
from rated.policy.breaker import CircuitBreakerPolicy
from rated.policy.global_mab import GlobalMABPolicy
from rated.policy.linucb import PaperLinUCBPolicy
from rated.policy.rated import RatedPolicy
from rated.policy.registry import POLICIES, PolicySpec, make_policy
from rated.policy.retry import RetryPolicy
from rated.policy.static import StaticPolicy
from rated.policy.window_breaker import WindowBreakerPolicy

__all__ = [
    "POLICIES",
    "BasePolicy",
    "BatchPolicy",
    "BlacklistPolicy",
    "Candidates",
    "CircuitBreakerPolicy",
    "Feedback",
    "GlobalMABPolicy",
    "PaperLinUCBPolicy",
    "Policy",
    "PolicySpec",
    "Ranking",
    "RatedPolicy",
    "RetryPolicy",
    "State",
    "StaticPolicy",
    "WindowBreakerPolicy",
    "make_policy",
]
