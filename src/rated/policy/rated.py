"""RATED: the reliability-aware re-ranker (paper section 3.3-3.4, with the fixes of paper-notes section 2).

``S_final = w1 * S_sem + w2 * S_bandit + w3 * r_static`` over the semantic top-K, where

    S_bandit = min(1, p_rel * p_avail + bonus)        (bounded, on the scale of S_sem)

has two parts with two time scales:

- **reliability** ``p_rel``: a discounted diagonal LinUCB per tool with a context-free bias component.
  The bias is a Beta mean ``(s + c*s_P + n0*r_static) / (s + f + c*(s_P + f_P) + n0)`` over discounted
  success/failure counts of the tool and (weight ``c = provider_weight``) of its provider; the prior
  pseudo-counts ``n0 = prior_strength`` never decay (the floor). The contextual part fits the residual
  ``y - mean`` on the query embedding ``x`` with a diagonal ridge ``A = ridge + sum(x*x)``, ``b = sum((y -
  mean)*x)`` (``A, b <- gamma*A + ..., gamma*b + ...`` per update): "this tool fails for queries like
  this one". ``p_rel = clip(mean + (b/A).x, 0, 1)``, ``bonus = alpha * sqrt(sum(x*x / A))``. Counts fade
  lazily with ``half_life`` (clock units) when read, so chronic flakiness is forgotten slowly.
- **availability** ``p_avail``: the probability that the tool (and its provider) is up *now*, a
  two-state belief. An unobserved tool is down with probability ``down_prior``. A tool-side failure of
  kind ``k`` updates it by Bayes' rule with ``P(fail | up) = noise_k`` (raised by the tool's own chronic
  failure rate, so a flaky tool is not taken for a dead one); a success sets it to "up". Between
  observations the belief relaxes back to ``down_prior`` with a half-life that depends on the error kind
  (``recover_k``: timeouts are short, authentication failures long) and doubles (``backoff``) with every
  further failure in a row: the longer an outage has lasted, the longer it is expected to last. A rate
  limit with a retry-after hint makes the tool unavailable for exactly that long and is not held
  against its reliability. Failures also raise a provider-level belief (with the weaker
  ``P(fail | provider up) = provider_noise``), which demotes the provider's other tools; any success of a
  provider's tool says the provider is up. Failures the belief attributes to an outage barely touch
  the reliability counts, so a tool is trusted again once it recovers.

A candidate is *healthy* while ``p_avail >= gate``; unhealthy ones are ranked after every healthy one
(fail open, flagged, when none is healthy). With probes, tools believed down are offered for health
checks, least recently observed first. Scoring is O(d) per candidate; state exists only for tools and
providers that received feedback. Times are in the clock's units (steps in the simulator, seconds in
production): ``time_scale`` multiplies every duration parameter.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import ClassVar

import numpy as np

from rated.errors import ConfigError
from rated.outcome import OutcomeKind
from rated.policy._rows import KeyedRows
from rated.policy.base import BasePolicy, Candidates, Feedback, State

__all__ = ["PROVIDER_PREFIX", "RatedPolicy"]

PROVIDER_PREFIX = "provider:"  # state key of a provider's shared component

# scalar fields of a state row (tools and providers share the layout)
T_FADE, S, F, BETA, T_OBS, TAU, STREAK, BLOCKED, T_SEEN = range(9)
FIELDS = ("t_fade", "s", "f", "beta", "t_obs", "tau", "streak", "blocked_until", "t_seen")
_KINDS = (OutcomeKind.TOOL_ERROR, OutcomeKind.TIMEOUT, OutcomeKind.AUTH_ERROR, OutcomeKind.RATE_LIMITED)


class RatedPolicy(BasePolicy):
    """The RATED re-ranker; every hyper-parameter is an argument (see the module docstring).

    >>> import numpy as np
    >>> from rated.outcome import Outcome
    >>> p = RatedPolicy()
    >>> c = lambda now: Candidates(("a", "b"), np.array([0.62, 0.60]), np.full(2, 0.8), ("a", "b"), now=now)
    >>> p.rank(c(0.0)).order.tolist()
    [0, 1]
    >>> p.learn(Feedback("a", Outcome.of("tool_error"), now=1.0))
    >>> p.rank(c(2.0)).order.tolist(), p.rank(c(5000.0)).order.tolist()  # demoted, then recovered
    ([1, 0], [0, 1])
    """

    name: ClassVar[str] = "rated"
    uses_probes: ClassVar[bool] = True

    def __init__(
        self,
        w1: float = 0.75,
        w2: float = 0.15,
        w3: float = 0.10,
        alpha: float = 0.1,
        gamma: float = 0.95,
        ridge: float = 1.0,
        prior_strength: float = 2.0,
        half_life: float = 2000.0,
        contextual: bool = True,
        down_prior: float = 0.05,
        gate: float = 0.5,
        noise_tool_error: float = 0.02,
        noise_timeout: float = 0.2,
        noise_auth: float = 0.001,
        noise_rate_limit: float = 0.1,
        recover_tool_error: float = 200.0,
        recover_timeout: float = 50.0,
        recover_auth: float = 2000.0,
        recover_rate_limit: float = 30.0,
        backoff: float = 2.0,
        max_recover: float = 50000.0,
        provider_weight: float = 0.5,
        provider_noise: float = 0.3,
        time_scale: float = 1.0,
    ):
        self.w1, self.w2, self.w3 = float(w1), float(w2), float(w3)
        self.alpha, self.gamma, self.ridge = float(alpha), float(gamma), float(ridge)
        self.prior_strength, self.half_life = float(prior_strength), float(half_life)
        self.contextual = bool(contextual)
        self.down_prior, self.gate = float(down_prior), float(gate)
        self.noise_tool_error, self.noise_timeout = float(noise_tool_error), float(noise_timeout)
        self.noise_auth, self.noise_rate_limit = float(noise_auth), float(noise_rate_limit)
        self.recover_tool_error, self.recover_timeout = float(recover_tool_error), float(recover_timeout)
        self.recover_auth, self.recover_rate_limit = float(recover_auth), float(recover_rate_limit)
        self.backoff, self.max_recover = float(backoff), float(max_recover)
        self.provider_weight, self.provider_noise = float(provider_weight), float(provider_noise)
        self.time_scale = float(time_scale)
        self._check()
        ts = self.time_scale
        self._noise = dict(zip(_KINDS, (self.noise_tool_error, self.noise_timeout, self.noise_auth,
                                        self.noise_rate_limit), strict=True))
        self._recover = dict(zip(_KINDS, (self.recover_tool_error * ts, self.recover_timeout * ts,
                                          self.recover_auth * ts, self.recover_rate_limit * ts), strict=True))
        self._hl = self.half_life * ts
        self._max_rec = self.max_recover * ts
        pristine = np.array([0.0, 0.0, 0.0, self.down_prior, 0.0, 1.0, 0.0, -math.inf, -math.inf])
        self._tools = KeyedRows(pristine, n_vectors=2)  # vectors: A (evidence part), b
        self._providers = KeyedRows(pristine)
        self._suspects: dict[str, None] = {}  # tools last seen failing: candidates for probes

    def _check(self) -> None:
        weights = (self.w1, self.w2, self.w3)
        if min(weights) < 0 or sum(weights) <= 0:
            raise ConfigError(f"fusion weights must be >= 0 and not all 0, got {weights}")
        positive = {"ridge": self.ridge, "prior_strength": self.prior_strength, "half_life": self.half_life,
                    "backoff": self.backoff, "max_recover": self.max_recover, "time_scale": self.time_scale,
                    "recover_tool_error": self.recover_tool_error, "recover_timeout": self.recover_timeout,
                    "recover_auth": self.recover_auth, "recover_rate_limit": self.recover_rate_limit}
        bad = [f"{k}={v}" for k, v in positive.items() if not v > 0]
        probs = {"down_prior": self.down_prior, "noise_tool_error": self.noise_tool_error,
                 "noise_timeout": self.noise_timeout, "noise_auth": self.noise_auth,
                 "noise_rate_limit": self.noise_rate_limit, "provider_noise": self.provider_noise}
        bad += [f"{k}={v}" for k, v in probs.items() if not 0 < v < 1]
        if not 0 < self.gamma <= 1:
            bad.append(f"gamma={self.gamma}")
        if not 0 <= self.gate <= 1:
            bad.append(f"gate={self.gate}")
        if self.alpha < 0 or self.provider_weight < 0 or self.backoff < 1:
            bad.append(f"alpha={self.alpha}, provider_weight={self.provider_weight}, backoff={self.backoff}")
        if bad:
            raise ConfigError("invalid RatedPolicy setting(s): " + ", ".join(bad))

    # ---- shared math -------------------------------------------------------------------------------
    def _belief(self, sc: np.ndarray, now: float) -> np.ndarray:
        """P(down at ``now``) from rows of scalars: relaxes from the last belief back to ``down_prior``."""
        pi0 = self.down_prior
        dt = np.maximum(now - sc[..., T_OBS], 0.0)
        return pi0 + (sc[..., BETA] - pi0) * np.exp2(-dt / sc[..., TAU])

    def _fade(self, sc: np.ndarray, now: float) -> np.ndarray:
        return np.exp2(-np.maximum(now - sc[..., T_FADE], 0.0) / self._hl)

    # ---- ranking -----------------------------------------------------------------------------------
    def _score(self, candidates: Candidates) -> tuple[np.ndarray, dict[str, np.ndarray], np.ndarray | None]:
        now, ids = candidates.now, candidates.tool_ids
        tindex, pindex = self._tools.index, self._providers.index
        rows = [tindex.get(t, 0) for t in ids]
        prows = [pindex.get(p, 0) if p != t else 0 for t, p in zip(ids, candidates.providers, strict=True)]
        prior = candidates.prior
        x = candidates.context if self.contextual else None
        sc = self._tools.scalars[rows]
        psc = self._providers.scalars[prows]
        fade = self._fade(sc, now)
        s, f = sc[:, S] * fade, sc[:, F] * fade
        pfade = self._fade(psc, now) * self.provider_weight
        ps, pf = psc[:, S] * pfade, psc[:, F] * pfade
        n0 = self.prior_strength
        mean = (s + ps + n0 * prior) / (s + f + ps + pf + n0)
        dim = self._tools.dim
        if x is not None and dim is not None and x.shape[0] == dim:
            A = self._tools.vectors[0][rows] * fade[:, None] + self.ridge
            B = self._tools.vectors[1][rows] * fade[:, None]
            rel = np.clip(mean + (B / A) @ x, 0.0, 1.0)
            bonus = self.alpha * np.sqrt((1.0 / A) @ (x * x))
        else:
            rel = mean
            bonus = self.alpha / np.sqrt(n0 + s + f)
        avail = (1.0 - self._belief(sc, now)) * (1.0 - self._belief(psc, now)) * (sc[:, BLOCKED] <= now)
        bandit = np.minimum(1.0, rel * avail + bonus)
        scores = self.w1 * candidates.semantic + self.w2 * bandit + self.w3 * prior
        components = {"semantic": candidates.semantic, "bandit": bandit, "prior": prior,
                      "reliability": rel, "availability": avail}
        return scores, components, avail >= self.gate

    # ---- learning ----------------------------------------------------------------------------------
    def state_keys(self, feedback: Feedback) -> list[str]:
        keys = [feedback.tool_id]
        if feedback.provider and feedback.provider != feedback.tool_id:
            keys.append(PROVIDER_PREFIX + feedback.provider)
        return keys

    def _learn(self, feedback: Feedback) -> None:
        now, outcome, tool = feedback.now, feedback.outcome, feedback.tool_id
        kind = outcome.kind
        r = self._tools.row(tool)
        sc = self._tools.scalars[r]
        sc[T_SEEN] = max(sc[T_SEEN], now)
        if kind is OutcomeKind.RATE_LIMITED and outcome.retry_after is not None:
            sc[BLOCKED] = max(sc[BLOCKED], now + outcome.retry_after)  # respected, not held against it
            self._suspects[tool] = None
            return
        x = feedback.context if self.contextual else None
        if x is not None:
            x = np.asarray(x, dtype=np.float64).ravel()
            if self._tools.dim is None:
                self._tools.set_dim(x.shape[0])
            elif x.shape[0] != self._tools.dim:
                raise ConfigError(f"context has dimension {x.shape[0]}, this policy learned with {self._tools.dim}")
        fade = float(self._fade(sc, now))
        sc[S] *= fade
        sc[F] *= fade
        sc[T_FADE] = max(sc[T_FADE], now)
        chronic = sc[F] / (sc[S] + sc[F] + self.prior_strength)  # the tool's own unexplained failure rate
        weight = self._update_belief(sc, now, kind, chronic, self._noise)
        y = 1.0 if outcome.is_success else 0.0
        mean_ev = (sc[S] + 0.5) / (sc[S] + sc[F] + 1.0)
        g = self.gamma
        sc[S] = g * sc[S] + weight * y
        sc[F] = g * sc[F] + weight * (1.0 - y)
        if x is not None:
            A, B = self._tools.vectors[0][r], self._tools.vectors[1][r]
            A *= fade * g
            A += weight * x * x
            B *= fade * g
            B += (weight * (y - mean_ev)) * x
        if outcome.is_success:
            self._suspects.pop(tool, None)
        else:
            self._suspects[tool] = None
        provider = feedback.provider
        if provider and provider != tool:
            pr = self._providers.row(provider)  # may grow the table: index after
            psc = self._providers.scalars[pr]
            pfade = float(self._fade(psc, now))
            psc[S] *= pfade
            psc[F] *= pfade
            psc[T_FADE] = max(psc[T_FADE], now)
            psc[T_SEEN] = max(psc[T_SEEN], now)
            self._update_belief(psc, now, kind, 0.0, dict.fromkeys(_KINDS, self.provider_noise))
            psc[S] = g * psc[S] + weight * y
            psc[F] = g * psc[F] + weight * (1.0 - y)

    def _update_belief(
        self, sc: np.ndarray, now: float, kind: OutcomeKind, chronic: float, noise: dict[OutcomeKind, float]
    ) -> float:
        """Bayes update of P(down) for one outcome; returns the weight of the outcome as reliability evidence."""
        if kind is OutcomeKind.SUCCESS:
            sc[BETA], sc[T_OBS], sc[TAU], sc[STREAK] = 0.0, now, 1.0, 0.0
            sc[BLOCKED] = min(sc[BLOCKED], now)
            return 1.0
        prior = float(self._belief(sc, now))
        eps = noise[kind] + (1.0 - noise[kind]) * chronic
        down = prior / (prior + eps * (1.0 - prior))
        sc[STREAK] += 1.0
        sc[BETA], sc[T_OBS] = down, now
        sc[TAU] = min(self._max_rec, self._recover[kind] * self.backoff ** (sc[STREAK] - 1.0))
        return 0.0 if kind is OutcomeKind.RATE_LIMITED else 1.0 - down

    # ---- probes ------------------------------------------------------------------------------------
    def probe_targets(self, now: float, budget: int) -> list[str]:
        """Tools believed down (or rate-limited) now, least recently observed first."""
        if budget <= 0 or not self._suspects:
            return []
        keys = list(self._suspects)
        rows = [self._tools.index[k] for k in keys]
        sc = self._tools.scalars[rows]
        avail = (1.0 - self._belief(sc, now)) * (sc[:, BLOCKED] <= now)
        down = avail < self.gate
        for k, d in zip(keys, down, strict=True):
            if not d:
                del self._suspects[k]  # relaxed back: an ordinary call will re-try it
        order = np.argsort(sc[:, T_SEEN], kind="stable")
        return [keys[i] for i in order if down[i]][: int(budget)]

    # ---- persistence -------------------------------------------------------------------------------
    def _table(self, key: str) -> tuple[KeyedRows, str]:
        if key.startswith(PROVIDER_PREFIX):
            return self._providers, key[len(PROVIDER_PREFIX) :]
        return self._tools, key

    def get_state(self, key: str) -> State | None:
        table, k = self._table(key)
        r = table.index.get(k)
        if r is None:
            return None
        state = {"scalars": table.scalars[r].copy()}
        if table is self._tools and table.vectors:
            state["A"] = table.vectors[0][r].copy()
            state["b"] = table.vectors[1][r].copy()
        return state

    def set_state(self, key: str, state: State | None) -> None:
        table, k = self._table(key)
        if state is None:
            table.drop(k)
            self._suspects.pop(k, None)
            return
        scalars = np.asarray(state["scalars"], dtype=np.float64).ravel()
        if scalars.shape != (len(FIELDS),):
            raise ConfigError(f"state of {key!r}: expected {len(FIELDS)} scalars, got {scalars.shape}")
        r = table.row(k)
        table.scalars[r] = scalars
        if table is self._tools and "A" in state:
            A = np.asarray(state["A"], dtype=np.float64).ravel()
            if table.dim is None:
                table.set_dim(A.shape[0])
            if A.shape[0] != table.dim:
                raise ConfigError(f"state of {key!r}: context dimension {A.shape[0]}, expected {table.dim}")
            table.vectors[0][r] = A
            table.vectors[1][r] = np.asarray(state["b"], dtype=np.float64).ravel()
        if table is self._tools:
            if scalars[STREAK] > 0 or scalars[BLOCKED] > -math.inf:
                self._suspects[k] = None
            else:
                self._suspects.pop(k, None)

    def all_state_keys(self) -> Sequence[str]:
        return [*self._tools.index, *(PROVIDER_PREFIX + p for p in self._providers.index)]
