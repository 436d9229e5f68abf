"""Re-rankers that use execution feedback: RATED and the baselines it is compared with."""

from rated.policy.base import BasePolicy, Candidates, Feedback, Policy, Ranking, State

__all__ = ["BasePolicy", "Candidates", "Feedback", "Policy", "Ranking", "State"]
