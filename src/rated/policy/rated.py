"""RATED: the reliability-aware re-ranker (paper section 3.3-3.4, with the fixes of paper-notes section 2).

``S_final = w1 * S_sem + w2 * S_bandit + w3 * r_static`` over the semantic top-K, where

    S_bandit = min(1, p_rel * p_avail / (1 - down_prior)**2 + bonus)     (bounded, on the scale of S_sem)

combines two estimates with two time scales (an unobserved tool scores 1, so that the bandit re-orders
only on evidence and never rewards a tool merely for having been picked):

- **reliability** ``p_rel``, a discounted diagonal LinUCB per tool with a context-free bias component.
  The bias is a Beta mean ``(s + c*s_P + n0*m0) / (s + f + c*(s_P + f_P) + n0)`` over discounted counts
  of the tool and, with weight ``c = provider_weight``, of its provider. The ``n0 = prior_strength``
  pseudo-counts never decay (the floor); their mean ``m0 = 1 - prior_weight * (1 - r_static)`` puts the
  static prior in the bandit when ``prior_weight > 0``. The contextual part fits the residual ``y -
  mean`` on the query embedding with a diagonal ridge (``A = ridge + sum x*x``, ``b = sum (y - mean) x``,
  both multiplied by ``gamma`` at each update): "this tool fails for queries like this one"; ``p_rel =
  clip(mean + (b/A).x, 0, 1)``, ``bonus = alpha * sqrt(sum x*x / A)``. Evidence fades lazily with
  ``half_life`` (applied when read; the contextual correction fades by the same factor).
- **availability** ``p_avail``, the belief that the tool and its provider are up *now*. An unobserved
  tool is down with probability ``down_prior``. A tool-side failure of kind ``k`` updates the belief by
  Bayes' rule with ``P(fail | up) = noise_k`` (raised by the tool's own chronic failure rate, so that a
  flaky tool is not taken for a dead one); a success means "up". Between observations the belief relaxes
  back to ``down_prior`` with a half-life ``recover_k`` that depends on the error kind (timeouts short,
  authentication failures long) and grows ``backoff``-fold with each further failure in a row: the
  longer an outage has lasted, the longer it is expected to last. A rate limit with a retry-after makes
  the tool unavailable for exactly that long and is not held against it. Failures also raise the
  provider's belief, with the weaker ``P(fail | provider up) = provider_noise``; a success of any of the
  provider's tools says the provider is up. Failures explained by an outage barely count as
  reliability evidence, so a tool is trusted again once it is back.

A candidate is *healthy* while ``p_avail >= gate``; unhealthy ones are ranked after every healthy one
(fail open, flagged, when none is healthy).

With ``utility > 0`` the ranking is by expected utility instead (issue 5; chosen per scenario on
validation seeds like every other setting): ``S_final = w1 * S_sem + w3 * r_static + utility *
log(S_bandit)``, i.e. ``log P(relevant) + log P(call succeeds)`` when relevance odds grow like ``exp(w1 *
S_sem / utility)``. There is no gate and no linear soft term: a tool that fails every other call loses
``utility * log 2`` (worth a semantic gap of ``utility * 0.69 / w1``), so it stays first when the
alternatives are far behind and are unlikely to be relevant, and drops below a close near-duplicate; a tool
believed down loses several times that. Health is then reported, not ranked apart: ``Ranking.healthy``
(``p_avail >= gate``) says which tools look down, and the order is by ``S_final`` alone.

Probes go to suspected tools with the most expected missed demand. Scoring is O(d) per candidate; state
exists only for tools and providers that got feedback.
Durations are in the clock's units (steps in the simulator, seconds in production); ``time_scale``
multiplies all of them. With seconds, the defaults remember a server error for about 3 minutes (doubling
while it keeps failing), a timeout for under a minute, an authentication failure for about half an hour,
and fade reliability evidence over about half an hour; the defaults were chosen on the dynamic benchmark
(docs/dynamic-benchmark.md), where one step is one request.
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Sequence
from operator import add
from typing import Any, ClassVar

import numpy as np

from rated.catalog.schema import PROVIDER_PREFIX  # state key prefix of a provider's shared component
from rated.errors import ConfigError
from rated.outcome import OutcomeKind
from rated.policy._rows import KeyedRows
from rated.policy.base import BasePolicy, Candidates, Feedback, State

__all__ = ["FIELDS", "PROVIDER_PREFIX", "RatedPolicy"]

#: scalar fields of a state row (tools and providers share the layout); ``beta`` is stored minus
#: ``down_prior`` and ``rate`` is 1 / the belief's current half-life.
FIELDS = (
    "t_fade",
    "t_obs",
    "s",
    "f",
    "beta",
    "rate",
    "streak",
    "blocked_until",
    "t_seen",
    "calls",
    "last_tool",
)
T_FADE, T_OBS, S, F, BETA, RATE, STREAK, BLOCKED, T_SEEN, CALLS, LAST_TOOL = range(len(FIELDS))
_FLOOR = 1e-4  # smallest success estimate in the expected-utility term (a log, so it must be > 0)
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
    >>> p.rank(c(2.0)).order.tolist(), p.rank(c(9000.0)).order.tolist()  # demoted, then recovered
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
        prior_weight: float = 0.0,
        noise_evidence: float = 10.0,
        context_noise: bool = True,
        respect_retry_after: bool = True,
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
        utility: float = 0.0,
    ):
        self.w1, self.w2, self.w3 = float(w1), float(w2), float(w3)
        self.alpha, self.gamma, self.ridge = float(alpha), float(gamma), float(ridge)
        self.prior_strength, self.prior_weight = float(prior_strength), float(prior_weight)
        self.noise_evidence = float(noise_evidence)
        self.context_noise = bool(context_noise)
        self.respect_retry_after = bool(respect_retry_after)
        self.half_life, self.contextual = float(half_life), bool(contextual)
        self.down_prior, self.gate = float(down_prior), float(gate)
        self.noise_tool_error, self.noise_timeout = float(noise_tool_error), float(noise_timeout)
        self.noise_auth, self.noise_rate_limit = float(noise_auth), float(noise_rate_limit)
        self.recover_tool_error, self.recover_timeout = float(recover_tool_error), float(recover_timeout)
        self.recover_auth, self.recover_rate_limit = float(recover_auth), float(recover_rate_limit)
        self.backoff, self.max_recover = float(backoff), float(max_recover)
        self.provider_weight, self.provider_noise = float(provider_weight), float(provider_noise)
        self.time_scale = float(time_scale)
        self.utility = float(utility)
        self._check()
        ts = self.time_scale
        noise = (self.noise_tool_error, self.noise_timeout, self.noise_auth, self.noise_rate_limit)
        recover = (self.recover_tool_error, self.recover_timeout, self.recover_auth, self.recover_rate_limit)
        self._noise = dict(zip(_KINDS, noise, strict=True))
        self._provider_noise = dict.fromkeys(_KINDS, self.provider_noise)
        self._recover = {k: r * ts for k, r in zip(_KINDS, recover, strict=True)}
        self._inv_hl = 1.0 / (self.half_life * ts)
        self._max_rec = self.max_recover * ts
        self._up0 = 1.0 - self.down_prior
        self._avail_norm = 1.0 / self._up0**2  # an unobserved tool has normalised availability 1
        # w1 and w3 as the float32 that ``w * float32 array`` makes of them (a Python float is cast to the
        # array's type): the same products, without converting the float at every ranking (~1 us)
        self._w1_f32, self._w3_f32 = np.array(self.w1, np.float32), np.array(self.w3, np.float32)
        self._rows = KeyedRows([0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, -math.inf, -math.inf, 0.0, -1.0])
        self._dim: int | None = None
        self._suspects: dict[str, None] = {}  # tools last seen failing: what probes look at
        self._provider_rows: dict[str, int] = {}  # provider -> its state row (key PROVIDER_PREFIX + provider)

    @property
    def health_orders(self) -> bool:  # type: ignore[override]
        """The paper's fusion ranks unhealthy tools last; expected utility prices health into the score."""
        return not self.utility

    def _check(self) -> None:
        weights = (self.w1, self.w2, self.w3)
        bad = [] if min(weights) >= 0 and sum(weights) > 0 else [f"w1, w2, w3 = {weights}"]
        positive = (
            "noise_evidence",
            "ridge",
            "prior_strength",
            "half_life",
            "max_recover",
            "time_scale",
            "recover_tool_error",
            "recover_timeout",
            "recover_auth",
            "recover_rate_limit",
        )
        bad += [f"{k}={getattr(self, k)} (must be > 0)" for k in positive if not getattr(self, k) > 0]
        probs = (
            "down_prior",
            "noise_tool_error",
            "noise_timeout",
            "noise_auth",
            "noise_rate_limit",
            "provider_noise",
        )
        bad += [f"{k}={getattr(self, k)} (must lie in (0, 1))" for k in probs if not 0 < getattr(self, k) < 1]
        unit = ("gate", "prior_weight")
        bad += [
            f"{k}={getattr(self, k)} (must lie in [0, 1])" for k in unit if not 0 <= getattr(self, k) <= 1
        ]
        if not 0 < self.gamma <= 1:
            bad.append(f"gamma={self.gamma} (must lie in (0, 1])")
        if self.utility < 0:
            bad.append(f"utility={self.utility} (must be >= 0)")
        if self.alpha < 0 or self.provider_weight < 0 or self.backoff < 1:
            bad.append(
                f"alpha={self.alpha}, provider_weight={self.provider_weight} (>= 0), "
                f"backoff={self.backoff} (>= 1)"
            )
        if bad:
            raise ConfigError("invalid RatedPolicy setting(s): " + "; ".join(bad))

    # ---- ranking -----------------------------------------------------------------------------------
    def _score(self, candidates: Candidates) -> tuple[list[float], dict[str, Any], list[bool]]:
        """Scalar estimates in plain Python floats, returned as lists (``BasePolicy`` makes the ``Ranking``'s
        arrays of them, the retriever its hits, with no NumPy round trip): with K = 10 and state for a few
        candidates, a loop over Python floats is several times faster than a dozen NumPy calls on (K,
        fields) arrays. Candidates without tool nor provider state keep the fresh estimate; only the
        others are computed."""
        now, ids, providers = candidates.now, candidates.tool_ids, candidates.providers
        k = len(ids)
        prior = candidates.prior
        n0, up0, pw, inv_hl = self.prior_strength, self._up0, self.provider_weight, self._inv_hl
        # rel_out starts as m0: the loop reads m0[i] before it writes rel_out[i], once per candidate
        m0 = rel_out = (1.0 - self.prior_weight * (1.0 - prior)).tolist() if self.prior_weight else [1.0] * k
        x = candidates.context
        contextual = self._dim is not None and self.contextual and x is not None and x.shape[0] == self._dim
        alpha = self.alpha
        if contextual:
            # x.dot: np.dot's product, without its dispatch (``contextual`` says x is not None: no check here)
            fresh = float(x.dot(x)) / self.ridge  # type: ignore[union-attr, arg-type]
            fresh_bonus = alpha * math.sqrt(fresh)
        else:
            fresh_bonus = alpha / math.sqrt(n0)
        gate = self.gate
        avail_out = [up0 * up0] * k
        healthy = [up0 * up0 >= gate] * k
        bandit_out = (
            [min(m + fresh_bonus, 1.0) for m in m0]
            if self.prior_weight
            else [min(1.0 + fresh_bonus, 1.0)] * k
        )
        util = self.utility
        if util:  # expected utility: log P(success) on the semantic scale (fresh tools: their bandit's log)
            util_out = (
                [util * math.log(max(b, _FLOOR)) for b in bandit_out]
                if self.prior_weight
                else [util * math.log(max(bandit_out[0], _FLOOR))] * k
            )
        index = self._rows.index
        if index:  # state rows of the candidates and of their providers (None: none, the pristine row 0)
            rows = list(map(index.get, ids))
            prows = list(map(self._provider_rows.get, providers))
            live = list(filter(None, rows))  # tool rows, in candidate order: the loop meets them so
        if index and (live or any(prows)):
            if contextual and live:
                # theta, then 1 / A; the table exists once ``_dim`` is set, and x with ``contextual``
                vec = self._rows.vectors.take(live, axis=0)  # type: ignore[union-attr]
                dim = self._dim
                next_corr = iter((vec[:, :dim] @ x).tolist()).__next__
                next_quad = iter((vec[:, dim:] @ (x * x)).tolist()).__next__  # type: ignore[operator]
            table, norm = self._rows.scalars, self._avail_norm
            fade0 = None  # what the pristine row gives at ``now``, once a candidate needs it
            # Hot loop: conditional expressions instead of min()/max() calls (about 2x faster per candidate,
            # same values: 2 ** (min(d, 0) * r) is 1.0 for d >= 0); d = age of a timestamp, <= 0 normally.
            for i, r, pr in zip(range(k), rows, prows):  # noqa: B905 (k each)
                if not r:
                    if not pr or providers[i] == ids[i]:  # no state; a tool without a provider is its own
                        continue
                elif pr and providers[i] == ids[i]:
                    pr = None
                if r:
                    tf, to, s, f, beta, rate, _, blocked, _, _, _ = table[r]
                    d = tf - now
                    fade = 2.0 ** (d * inv_hl) if d < 0.0 else 1.0
                    d = to - now
                    up = up0 - beta * (2.0 ** (d * rate) if d < 0.0 else 1.0)
                    s, f = s * fade, f * fade
                else:
                    if fade0 is None:
                        # a candidate with provider state only reads the pristine row 0 as its tool's: the
                        # same expressions, worked out once
                        tf, to, s, f, beta, rate, _, blocked0, _, _, _ = table[0]
                        d = tf - now
                        fade0 = 2.0 ** (d * inv_hl) if d < 0.0 else 1.0
                        d = to - now
                        up_0 = up0 - beta * (2.0 ** (d * rate) if d < 0.0 else 1.0)
                        s_0, f_0 = s * fade0, f * fade0
                        if contextual:  # no correction (0), the fresh quadratic term
                            corr_0 = 0.0 * fade0
                            q = (fresh - fresh) * fade0 + fresh
                            bonus_0 = alpha * math.sqrt(q if q > 0.0 else 0.0)
                    fade, up, blocked, s, f = fade0, up_0, blocked0, s_0, f_0
                if pr:
                    ptf, pto, ps, pf, pbeta, prate, _, _, _, _, _ = table[pr]
                    d = ptf - now
                    pfade = 2.0 ** (d * inv_hl) if d < 0.0 else 1.0
                    s, f = s + pw * ps * pfade, f + pw * pf * pfade
                    d = pto - now
                    avail = up * (up0 - pbeta * (2.0 ** (d * prate) if d < 0.0 else 1.0))
                else:
                    avail = up * up0
                total = s + f
                rel = (s + n0 * m0[i]) / (total + n0)
                if blocked > now:
                    avail = 0.0
                if contextual:
                    if r:
                        rel += next_corr() * fade
                        q = (next_quad() - fresh) * fade + fresh
                        bonus = alpha * math.sqrt(q if q > 0.0 else 0.0)
                    else:
                        rel += corr_0
                        bonus = bonus_0
                    rel = 0.0 if rel < 0.0 else (1.0 if rel > 1.0 else rel)
                else:
                    bonus = alpha / math.sqrt(n0 + total)
                rel_out[i], avail_out[i], healthy[i] = rel, avail, avail >= gate
                b = rel * avail * norm + bonus
                bandit_out[i] = b = 1.0 if b > 1.0 else b
                if util:
                    util_out[i] = util * math.log(b if b > _FLOOR else _FLOOR)
        # the fusion in Python floats, the float32 products first as NumPy makes them (w * float32 array is
        # float32), so that the scores are those of the array expression, bit for bit
        if util:  # expected utility replaces the soft term and the gate
            base = (self._w1_f32 * candidates.semantic + self._w3_f32 * prior).tolist()
            scores = list(map(add, base, util_out))
        else:
            sem_part = (self._w1_f32 * candidates.semantic).tolist()
            prior_part = (self._w3_f32 * prior).tolist()
            # a + w2 * b + c, element by element, in C: no Python frame per candidate
            scores = list(map(add, map(add, sem_part, map(self.w2.__mul__, bandit_out)), prior_part))
        components = {
            "semantic": candidates.semantic,
            "bandit": bandit_out,
            "prior": prior,
            "reliability": rel_out,
            "availability": avail_out,
        }
        return scores, components, healthy

    def _provider_row(self, provider: str) -> int:
        """The state row of ``provider`` (allocated on first use), remembered by name for ``_score``."""
        r = self._provider_rows.get(provider)
        if r is None:
            r = self._provider_rows[provider] = self._rows.row(PROVIDER_PREFIX + provider)
        return r

    # ---- learning ----------------------------------------------------------------------------------
    def state_keys(self, feedback: Feedback) -> list[str]:
        keys = [feedback.tool_id]
        if feedback.provider and feedback.provider != feedback.tool_id:
            keys.append(PROVIDER_PREFIX + feedback.provider)
        return keys

    def _learn(self, feedback: Feedback) -> None:
        """One outcome: the row's scalars as plain floats (item access on a NumPy row costs several times
        more), the contextual update in a few in-place vector operations, then one write-back."""
        now, outcome, tool = feedback.now, feedback.outcome, feedback.tool_id
        kind = outcome.kind
        x = self._context(feedback)
        rows = self._rows
        r = rows.row(tool)
        sc = rows.scalars[r][:]  # a copy, written back whole
        sc[T_SEEN] = max(sc[T_SEEN], now)
        if kind is OutcomeKind.RATE_LIMITED and outcome.retry_after is not None and self.respect_retry_after:
            sc[BLOCKED] = max(sc[BLOCKED], now + outcome.retry_after)  # respected, not held against it
            rows.write(r, sc)
            self._suspects[tool] = None
            return
        fade = self._fade_row(sc, now)
        if not feedback.probe:
            sc[CALLS] += 1.0
        # the tool's own unexplained failure rate, for queries like this one when the contextual part
        # has learned something: a failure it predicts is not taken as an outage
        chronic = sc[F] / (sc[S] + sc[F] + self.noise_evidence)
        vec = None if x is None else rows.vectors[r]  # type: ignore[index]  # allocated by _context(x)
        if vec is not None and self.context_noise:
            corr = float(vec[: self._dim] @ x) * fade
            base = (sc[S] + self.prior_strength) / (sc[S] + sc[F] + self.prior_strength)
            chronic = max(chronic, 1.0 - min(1.0, max(0.0, base + corr)))
        weight = self._update_belief(sc, now, kind, chronic, self._noise)
        y = 1.0 if outcome.is_success else 0.0
        mean = (sc[S] + 0.5) / (sc[S] + sc[F] + 1.0)
        g = self.gamma
        sc[S] = g * sc[S] + weight * y
        sc[F] = g * sc[F] + weight * (1.0 - y)
        if outcome.retry_after is not None and not outcome.is_success and self.respect_retry_after:
            sc[BLOCKED] = max(sc[BLOCKED], now + outcome.retry_after)  # the server's "not before", as well
        rows.write(r, sc)
        if vec is not None:  # and so is x (mypy cannot follow that: an ignore, not a check on this path)
            self._update_context(vec, x, fade * g, weight, weight * (y - mean))  # type: ignore[arg-type]
        if outcome.is_success:
            self._suspects.pop(tool, None)
        else:
            self._suspects[tool] = None
        if feedback.provider and feedback.provider != tool:
            pr = self._provider_row(feedback.provider)
            psc = rows.scalars[pr][:]
            psc[T_SEEN] = max(psc[T_SEEN], now)
            self._fade_row(psc, now)
            tool_code = float(zlib.crc32(tool.encode()))
            if outcome.is_success or psc[LAST_TOOL] != tool_code:  # the same tool failing again: nothing new
                self._update_belief(psc, now, kind, 0.0, self._provider_noise)
            psc[LAST_TOOL] = -1.0 if outcome.is_success else tool_code
            psc[S] = g * psc[S] + weight * y
            psc[F] = g * psc[F] + weight * (1.0 - y)
            rows.write(pr, psc)

    def _update_context(self, vec: np.ndarray, x: np.ndarray, decay: float, wx2: float, wres: float) -> None:
        """Diagonal ridge update in place: ``A' = decay*A + wx2*x*x``, ``b' = decay*b + wres*x`` with ``A``
        the evidence part of the diagonal; ``vec`` holds ``theta = b/(A+ridge)``, then ``1/(A+ridge)``."""
        d, ridge = self._dim, self.ridge
        theta, inv = vec[:d], vec[d:]
        a = np.reciprocal(inv.astype(np.float64))  # A + ridge
        b = theta * a
        a -= ridge
        a *= decay
        a += wx2 * (x * x) + ridge  # A' + ridge
        b *= decay
        b += wres * x
        np.reciprocal(a, out=a)
        inv[:] = a
        b *= a
        theta[:] = b

    def _context(self, feedback: Feedback) -> np.ndarray | None:
        if not self.contextual or feedback.context is None:
            return None
        x = np.asarray(feedback.context, dtype=np.float64).ravel()
        self._ensure_dim(x.shape[0], "context")
        return x

    def _ensure_dim(self, dim: int, what: str) -> None:
        if self._dim is None:
            self._dim = int(dim)
            self._rows.set_vector_width(np.concatenate([np.zeros(dim), np.full(dim, 1.0 / self.ridge)]))
        elif dim != self._dim:
            raise ConfigError(f"{what} has dimension {dim}; this policy learned with {self._dim}")

    def _fade_row(self, sc: list[float], now: float) -> float:
        """Bring a row's counts to ``now``; returns the fade factor (also owed by the contextual part)."""
        fade = 2.0 ** (-max(now - sc[T_FADE], 0.0) * self._inv_hl)
        sc[S] *= fade
        sc[F] *= fade
        sc[CALLS] *= fade
        sc[T_FADE] = max(sc[T_FADE], now)
        return fade

    def _update_belief(
        self, sc: list[float], now: float, kind: OutcomeKind, chronic: float, noise: dict[OutcomeKind, float]
    ) -> float:
        """Bayes update of P(down) for one outcome; returns the outcome's weight as reliability evidence."""
        if kind is OutcomeKind.SUCCESS:
            sc[BETA], sc[T_OBS], sc[RATE], sc[STREAK] = -self.down_prior, now, 1.0, 0.0
            sc[BLOCKED] = min(sc[BLOCKED], now)
            return 1.0
        prior = self._belief_row(sc, now)
        eps = noise[kind] + (1.0 - noise[kind]) * chronic
        down = prior / (prior + eps * (1.0 - prior))
        sc[STREAK] += 1.0
        sc[BETA], sc[T_OBS] = down - self.down_prior, now
        sc[RATE] = 1.0 / min(self._max_rec, self._recover[kind] * self.backoff ** (sc[STREAK] - 1.0))
        return 0.0 if kind is OutcomeKind.RATE_LIMITED else 1.0 - down

    def _belief_row(self, sc: list[float], now: float) -> float:
        return self.down_prior + sc[BETA] * 2.0 ** (-max(now - sc[T_OBS], 0.0) * sc[RATE])

    # ---- probes ------------------------------------------------------------------------------------
    def probe_targets(self, now: float, budget: int) -> list[str]:
        """Suspected tools by expected missed demand: (calls + 1) x time since last observed.

        A tool stays a suspect until a success, or until its belief has relaxed close to ``down_prior``.
        """
        if budget <= 0 or not self._suspects:
            return []
        keys = list(self._suspects)
        sc = np.array([self._rows.scalars[self._rows.index[k]] for k in keys], dtype=np.float64)
        belief = self.down_prior + sc[:, BETA] * np.exp2(-np.maximum(now - sc[:, T_OBS], 0.0) * sc[:, RATE])
        blocked = sc[:, BLOCKED] > now
        suspect = (belief > 2.0 * self.down_prior) | blocked
        for key, keep in zip(keys, suspect.tolist(), strict=True):
            if not keep:
                del self._suspects[key]
        suspect &= ~blocked  # a rate limit said when it ends: no need to ask
        calls = sc[:, CALLS] * np.exp2(-np.maximum(now - sc[:, T_FADE], 0.0) * self._inv_hl)
        priority = np.where(suspect, (calls + 1.0) * np.maximum(now - sc[:, T_SEEN], 0.0), -1.0)
        order = np.argsort(-priority, kind="stable")[: int(budget)]
        return [keys[i] for i in order if suspect[i]]

    # ---- persistence -------------------------------------------------------------------------------
    def get_state(self, key: str) -> State | None:
        r = self._rows.index.get(key)
        if r is None:
            return None
        state = {"scalars": np.array(self._rows.scalars[r], dtype=np.float64)}
        vectors = self._rows.vectors  # allocated with ``_dim``
        if self._dim is not None and vectors is not None and not key.startswith(PROVIDER_PREFIX):
            vec = vectors[r]
            state["theta"] = vec[: self._dim].copy()
            state["inv_a"] = vec[self._dim :].copy()
        return state

    def set_state(self, key: str, state: State | None) -> None:
        if state is None:
            self._rows.drop(key)
            self._suspects.pop(key, None)
            if key.startswith(PROVIDER_PREFIX):
                self._provider_rows.pop(key[len(PROVIDER_PREFIX) :], None)
            return
        scalars = np.asarray(state["scalars"], dtype=np.float64).ravel()
        if scalars.shape != (len(FIELDS),):
            raise ConfigError(f"state of {key!r}: expected {len(FIELDS)} scalars, got shape {scalars.shape}")
        theta = state.get("theta")
        if theta is not None:
            theta = np.asarray(theta, dtype=np.float32).ravel()
            inv_a = np.asarray(state["inv_a"], dtype=np.float32).ravel()
            self._ensure_dim(theta.shape[0], f"state of {key!r}")
            if inv_a.shape != theta.shape:
                raise ConfigError(f"state of {key!r}: inv_a has shape {inv_a.shape}, theta {theta.shape}")
        if key.startswith(PROVIDER_PREFIX):
            r = self._provider_row(key[len(PROVIDER_PREFIX) :])
        else:
            r = self._rows.row(key)
        self._rows.write(r, scalars.tolist())
        vectors = self._rows.vectors  # read after ``row``, which may grow it; allocated with theta's ``_dim``
        if theta is not None and vectors is not None:
            vectors[r, : self._dim] = theta
            vectors[r, self._dim :] = inv_a
        if not key.startswith(PROVIDER_PREFIX):
            if scalars[STREAK] > 0 or scalars[BLOCKED] > -math.inf:
                self._suspects[key] = None
            else:
                self._suspects.pop(key, None)

    def all_state_keys(self) -> Sequence[str]:
        return list(self._rows.index)
