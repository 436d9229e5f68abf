"""Retry: the agent tries up to ``attempts`` ranked tools in one step and keeps no memory across steps."""

from __future__ import annotations

from typing import ClassVar

from rated.errors import ConfigError
from rated.policy.static import StaticPolicy

__all__ = ["RetryPolicy"]


class RetryPolicy(StaticPolicy):
    """The semantic order; the caller moves to the next tool after a tool-side failure, up to ``attempts``.

    Every attempt on a failing tool is a fault (the simulator counts each one). Nothing is learned.
    """

    name: ClassVar[str] = "retry"

    def __init__(self, attempts: int = 3, w_sem: float = 1.0, w_prior: float = 0.0):
        if int(attempts) < 1:
            raise ConfigError(f"attempts must be >= 1, got {attempts}")
        super().__init__(w_sem=w_sem, w_prior=w_prior)
        self.attempts = int(attempts)  # type: ignore[misc]  # per instance, shadows the class default
