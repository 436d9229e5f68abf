"""Metrics of the dynamic benchmark, computed from per-step traces (paper-notes section 3).

- Post-Fail SR: success rate over steps ``onset .. T-1``.
- FSR: calls that hit a failing tool per step over the same window (a retry method counts every attempt).
- Adaptation steps, two definitions, both over a trailing window of ``window`` steps that lies entirely
  after the onset (so the pre-failure period never counts): *absolute*, the number of post-onset steps
  until the trailing SR first reaches ``theta * SR_pre`` (``SR_pre`` over the ``pre_window`` steps
  before the onset; ``theta`` 0.9 at failure rate <= 0.2, else 0.8); *relative*, until it first reaches
  ``0.95 x`` the oracle's trailing SR over the same window. ``None`` when never reached; the smallest
  value is ``window`` (the first full window already met the target).
- Regret: the oracle's Post-Fail SR minus the method's (per step, averaged over the window).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

__all__ = [
    "adaptation_steps",
    "aggregate",
    "paired",
    "summarise_run",
    "theta_for",
    "trailing",
]


def theta_for(failure_rate: float) -> float:
    """The paper's recovery target: 0.9 of SR_pre at a 20% failure rate, 0.8 above."""
    return 0.9 if failure_rate <= 0.2 + 1e-9 else 0.8


def trailing(x: np.ndarray, window: int) -> np.ndarray:
    """Mean of ``x[t-window+1 .. t]`` for every ``t >= window-1`` (length ``len(x) - window + 1``)."""
    c = np.concatenate([[0.0], np.cumsum(np.asarray(x, dtype=np.float64))])
    return (c[window:] - c[:-window]) / window


def adaptation_steps(success: np.ndarray, onset: int, target: np.ndarray | float, window: int) -> int | None:
    """Post-onset steps until the trailing SR (window fully after the onset) first reaches ``target``.

    ``target`` is a number or an array aligned with ``success`` (a moving target, e.g. the oracle's
    trailing SR at the same step).
    """
    post = np.asarray(success[onset:], dtype=np.float64)
    if len(post) < window:
        return None
    tr = trailing(post, window)
    tgt = np.asarray(target, dtype=np.float64)
    if tgt.ndim:
        tgt = tgt[onset + window - 1 :]
    hit = np.flatnonzero(tr >= tgt - 1e-12)
    return int(hit[0] + window) if len(hit) else None


def summarise_run(
    success: np.ndarray,
    faults: np.ndarray,
    oracle_success: np.ndarray,
    onset: int,
    failure_rate: float,
    window: int = 200,
    pre_window: int = 1000,
) -> dict[str, float | int | None]:
    """Every per-seed metric of one method on one seed."""
    post = slice(onset, None)
    sr = float(np.mean(success[post]))
    oracle_sr = float(np.mean(oracle_success[post]))
    pre = success[max(0, onset - pre_window) : onset]
    sr_pre = float(np.mean(pre)) if len(pre) else float("nan")
    oracle_tr = np.full(len(success), np.inf)
    if len(success) - onset >= window:
        oracle_tr[onset + window - 1 :] = 0.95 * trailing(oracle_success[onset:], window)
    return {
        "post_fail_sr": sr,
        "fsr": float(np.mean(faults[post])),
        "regret": oracle_sr - sr,
        "sr_pre": sr_pre,
        "adaptation_steps": adaptation_steps(success, onset, theta_for(failure_rate) * sr_pre, window),
        "adaptation_steps_oracle": adaptation_steps(success, onset, oracle_tr, window),
    }


def aggregate(
    per_seed: Sequence[Mapping[str, float | int | None]],
) -> dict[str, dict[str, float | int | None]]:
    """Mean and sample std over seeds per metric; ``never`` counts seeds where a step count is None."""
    out: dict[str, dict[str, float | int | None]] = {}
    for key in per_seed[0]:
        values = [r[key] for r in per_seed]
        got = np.array([v for v in values if v is not None], dtype=np.float64)
        entry: dict[str, float | int | None] = {
            "mean": float(got.mean()) if len(got) else None,
            "std": float(got.std(ddof=1)) if len(got) > 1 else 0.0 if len(got) else None,
        }
        if any(v is None for v in values) or key.startswith("adaptation"):
            entry["never"] = sum(v is None for v in values)
        out[key] = entry
    return out


HIGHER_IS_BETTER = ("post_fail_sr", "net")  # paired: the others (faults, regret, steps) are better lower


def paired(
    a: Sequence[Mapping[str, float | int | None]],
    b: Sequence[Mapping[str, float | int | None]],
    keys: Sequence[str] = ("post_fail_sr", "fsr", "regret"),
) -> dict[str, dict[str, float | int]]:
    """Per-seed differences ``a - b`` (same streams): mean, std and how many seeds ``a`` is better on."""
    out: dict[str, dict[str, float | int]] = {}
    for key in keys:
        d = np.array([float(x[key]) - float(y[key]) for x, y in zip(a, b, strict=True)])  # type: ignore[arg-type]
        better = d > 1e-12 if key in HIGHER_IS_BETTER else d < -1e-12
        out[key] = {
            "mean": float(d.mean()),
            "std": float(d.std(ddof=1)) if len(d) > 1 else 0.0,
            "a_better": int(better.sum()),
            "ties": int((np.abs(d) <= 1e-12).sum()),
            "seeds": len(d),
        }
    return out
