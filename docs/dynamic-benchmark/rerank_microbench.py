"""Re-ranking cost alone: ``policy.rank`` on 300 prepared candidate sets (K = 10) of a 2,000-tool state
warmed with 5,000 outcomes (providers of 3 tools, 5% rate limits), median thread CPU of 25 repeats, every
policy in the same process (section 6 of docs/dynamic-benchmark.md). ``--before REV`` adds RATED as it was
at git revision REV (its policy module with the base and row modules of that revision), checked to give
the same rankings. ``--breakdown`` adds where RATED's time goes: its ``_score`` alone, then without the
contextual part, without provider state, without any state (copies of the same warmed policy, so that
their memory is laid out alike), and ``_ranked`` (the retriever's path: ``_score`` plus checks and sort).

    python docs/dynamic-benchmark/rerank_microbench.py
    python docs/dynamic-benchmark/rerank_microbench.py --before 1834d21   # + RATED as it was
    python docs/dynamic-benchmark/rerank_microbench.py --breakdown
"""

from __future__ import annotations

import argparse
import copy
import importlib
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from rated.outcome import Outcome
from rated.policy import Candidates, Feedback, RatedPolicy, make_policy


def policy_at(rev: str) -> type:
    """``RatedPolicy`` of git revision ``rev``: ``rated/policy/{base,_rows,rated}.py`` of that revision as a
    package of their own (a revision without ``_rows.py`` had none), the rest of ``rated`` shared."""
    pkg = Path(tempfile.mkdtemp()) / "rated_policy_before"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    for name in ("base", "_rows", "rated"):
        shown = subprocess.run(
            ["git", "show", f"{rev}:src/rated/policy/{name}.py"], capture_output=True, text=True
        )
        if shown.returncode == 0:
            text = shown.stdout.replace("rated.policy._rows", pkg.name + "._rows")
            (pkg / f"{name}.py").write_text(text.replace("rated.policy.base", pkg.name + ".base"))
    sys.path.insert(0, str(pkg.parent))
    return importlib.import_module(pkg.name + ".rated").RatedPolicy


def breakdown(rated: RatedPolicy) -> dict[str, Callable[[Candidates], object]]:
    """Parts of ``rated``'s ranking, each on a copy of it (the same state, laid out alike in memory)."""
    full, no_ctx, no_provider, no_state = (copy.deepcopy(rated) for _ in range(4))
    no_ctx.contextual = False
    no_provider._provider_rows = {}
    no_state._rows.index, no_state._provider_rows = {}, {}
    return {
        "  rated _ranked (retriever's path)": full._ranked,
        "  rated _score": full._score,
        "  rated _score, no contextual part": no_ctx._score,
        "  rated _score, no provider state": no_provider._score,
        "  rated _score, no state at all": no_state._score,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--before", metavar="REV", help="git revision whose RATED to time beside the current one")
    ap.add_argument("--breakdown", action="store_true", help="also time parts of RATED's scoring")
    a = ap.parse_args()
    rng = np.random.default_rng(0)
    d, n = 384, 2000
    ids = [f"t{i}" for i in range(n)]
    prov = [f"p{i // 3}" for i in range(n)]
    pols = {
        "static fusion (rated_no_feedback)": make_policy("rated_no_feedback"),
        "rated (paper fusion)": RatedPolicy(),
        "rated (utility 0.1)": RatedPolicy(utility=0.1, half_life=500),
    }
    if a.before:
        pols["rated before"] = policy_at(a.before)()
    X = rng.normal(size=(3000, d)).astype(np.float32)
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    kinds = ["success", "success", "success", "tool_error", "timeout", "auth_error"]
    for i in range(5000):
        j = rng.integers(n)
        k = kinds[rng.integers(6)]
        o = Outcome.of("rate_limited", retry_after=30.0) if rng.random() < 0.05 else Outcome.of(k)
        fb = Feedback(ids[j], o, now=float(i), context=X[i % 3000], provider=prov[j])
        for p in pols.values():
            p.learn(fb)
    cands = []
    for i in range(300):
        sel = rng.choice(n, 10, replace=False)
        sem = np.sort(rng.random(10)).astype(np.float32)[::-1].copy()
        cands.append(
            Candidates(
                tuple(ids[j] for j in sel),
                sem,
                rng.random(10).astype(np.float32),
                tuple(prov[j] for j in sel),
                X[i],
                5000.0 + i * 3,
            )
        )
    if a.before:  # the same rankings, or the timing compares different things
        for c in cands:
            now, then = pols["rated (paper fusion)"].rank(c), pols["rated before"].rank(c)
            if now.order.tolist() != then.order.tolist() or now.scores.tolist() != then.scores.tolist():
                raise SystemExit(
                    f"RATED at {a.before} ranks otherwise than now: {then.scores} vs {now.scores}"
                )
    fns = {k: p.rank for k, p in pols.items()}
    if a.breakdown:
        fns.update(breakdown(pols["rated (paper fusion)"]))
    times: dict[str, list[float]] = {k: [] for k in fns}
    for _ in range(25):
        for k, fn in fns.items():
            t0 = time.thread_time_ns()
            for c in cands:
                fn(c)
            times[k].append((time.thread_time_ns() - t0) / len(cands) / 1e3)
    base = float(np.median(times["static fusion (rated_no_feedback)"]))
    for k, v in times.items():
        print(f"{k:34s} median {np.median(v):6.1f} us   {np.median(v) / base:.2f}x the static fusion")


if __name__ == "__main__":
    main()
