"""Per-step diagnostics behind section 4.1 of docs/dynamic-benchmark.md (issue 5), on validation seeds.

    D=DATA/stabletoolbench
    R='{"recover_tool_error": 200, "backoff": 2, "w3": 0.05, "provider_noise": 0.3}'
    B='{"failure_threshold": 1, "cooldown": 200, "backoff": 2, "respect_retry_after": false}'
    python docs/dynamic-benchmark/issue5_diagnostics.py relevance --dataset $D
    python docs/dynamic-benchmark/issue5_diagnostics.py disagree --dataset $D --rated "$R" --breaker "$B"
    python docs/dynamic-benchmark/issue5_diagnostics.py decompose --dataset $D --rated "$R"
    python docs/dynamic-benchmark/issue5_diagnostics.py decompose --dataset $D --method breaker --breaker "$B"
    python docs/dynamic-benchmark/issue5_diagnostics.py floor --dataset $D
    python docs/dynamic-benchmark/issue5_diagnostics.py kinds --dataset $D --rated "$R"  (+ "utility": 0.1)

(``--scenario degraded`` with the `degraded` settings of results.json for the degraded columns.)
``relevance`` reads the labels (for the diagnosis only; no method sees them). The others replay a method
step by step on the simulator's validation seeds 1000.. (the same streams as ``rated bench dynamic
--validation``) and record what it picked. Not part of the package: a tool for reading the benchmark.
"""

from __future__ import annotations

import argparse
import json

import numpy as np

from rated.bench.dataset import load_dataset
from rated.bench.dynamic.runner import BenchConfig, Env, prepare, seeds_for
from rated.bench.dynamic.scenarios import ScenarioConfig
from rated.policy.base import Feedback
from rated.policy.registry import make_policy


def env_for(path: str) -> Env:
    from rated.bench.embcache import CachedEncoder
    from rated.encode import default_encoder

    enc = CachedEncoder(default_encoder(progress=True))
    env = Env.from_dataset(load_dataset(path), "test", encoder=enc)
    env.context_encoder = enc
    return env


def replay(prep, policy: str, params: dict, run, record: bool = False):
    """One method through one seed, calling its first tool; per step: pick, success, fault, components."""
    pol = make_policy(policy, **params)
    pool, sched, steps = prep.env.pool, run.scenario.schedule, run.steps["semantic"][0]
    T = len(run.stream)
    chosen, succ, fault, info = np.zeros(T, int), np.zeros(T, bool), np.zeros(T, bool), [None] * T
    for t in range(T):
        q = int(run.stream[t])
        st = steps[q]
        r = pol.rank(st.at(float(t)))
        c = int(r.order[0])
        j = int(st.positions[c])
        if record:
            healthy = True if r.healthy is None else bool(r.healthy[0])
            comp = r.components
            info[t] = (healthy, float(comp["availability"][0]), float(comp["reliability"][0]))
        out, f = sched.call(j, t, run.draws.fail[t, 0], run.draws.caller[t, 0], q)
        pol.learn(Feedback(st.tool_ids[c], out, float(t), st.context, st.providers[c]))
        chosen[t], fault[t], succ[t] = c, f, out.is_success and j in pool.relevant[q]
    return chosen, succ, fault, info, pol


def cmd_relevance(env: Env, k: int) -> None:
    tab = env.table("semantic", k)
    R = np.array(
        [[int(p) in env.pool.relevant[q] for p in tab.positions[q][:k]] for q in range(len(env.queries))]
    )
    gap = tab.scores[:, :1] - tab.scores[:, :k]
    print("P(relevant) by rank:", R.mean(0).round(3).tolist())
    for lo, hi in [(0, 0.02), (0.02, 0.05), (0.05, 0.1), (0.1, 0.15), (0.15, 0.25), (0.25, 9)]:
        m = (gap >= lo) & (gap < hi)
        m[:, 0] = False
        print(f"gap to the first candidate [{lo}, {hi}): n={m.sum()} P(relevant)={R[m].mean():.2f}")


def cmd_disagree(prep, rated: dict, breaker: dict) -> None:
    cats: dict[tuple, list] = {}
    for run in prep.runs:
        ca, sa, _, ia, _ = replay(prep, "rated", rated, run, record=True)
        cb, sb, _, _, _ = replay(prep, "breaker", breaker, run)
        steps, sched = run.steps["semantic"][0], run.scenario.schedule
        for t in range(prep.scenario.onset, len(run.stream)):
            if sa[t] == sb[t] or ca[t] == cb[t]:
                continue
            st = steps[int(run.stream[t])]
            healthy, avail, rel = ia[t]
            if ca[t] == 0:
                why = "RATED keeps #0"
            elif cb[t] != 0:
                why = "breaker also skips #0"
            elif not healthy:
                why = "RATED gated #0"
            elif rel < 0.999 or avail < 0.9:
                why = "RATED soft-demoted #0"
            else:
                why = "prior / other"
            e = sched.episode_at(int(st.positions[0]), t, int(run.stream[t]))
            state = "#0 up" if e < 0 else f"#0 failing (p={sched.p_fail[e]:.1f})"
            key = ("RATED wins" if sa[t] else "breaker wins", why, state)
            cats.setdefault(key, []).append(float(st.semantic[0] - st.semantic[ca[t]]))
    for key, gaps in sorted(cats.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        print(f"{len(gaps):5d} {key} median gap {np.median(gaps):.3f}")


def cmd_decompose(prep, policy: str, params: dict) -> None:
    tot: dict[str, int] = {}
    for run in prep.runs:
        pol = make_policy(policy, **params)
        pool, sched, steps = prep.env.pool, run.scenario.schedule, run.steps["semantic"][0]
        w3 = getattr(pol, "w3", 0.0)
        last: dict[int, int] = {}
        for t in range(len(run.stream)):
            q = int(run.stream[t])
            st = steps[q]
            c = int(pol.rank(st.at(float(t))).order[0])
            j = int(st.positions[c])
            b0 = int(np.argmax(0.75 * st.semantic + w3 * st.prior))
            jb = int(st.positions[b0])
            e = sched.episode_at(j, t, q)
            out, f = sched.call(j, t, run.draws.fail[t, 0], run.draws.caller[t, 0], q)
            pol.learn(Feedback(st.tool_ids[c], out, float(t), st.context, st.providers[c]))
            ok = out.is_success and j in pool.relevant[q]
            if t >= prep.scenario.onset:
                tot["steps"] = tot.get("steps", 0) + 1
                if f:
                    key = "repeated fault" if last.get(j) == e else "first-contact fault"
                elif c != b0 and sched.episode_at(jb, t, q) < 0:
                    key = (
                        "stale loss"
                        if jb in pool.relevant[q] and not ok
                        else "stale gain"
                        if ok and jb not in pool.relevant[q]
                        else ""
                    )
                else:
                    key = ""
                if key:
                    tot[key] = tot.get(key, 0) + 1
            last[j] = e if f else -2
    n = tot.pop("steps")
    print(policy, json.dumps(params), {k: f"{100 * v / n:.2f}%" for k, v in tot.items()})


def cmd_floor(prep, w3: float) -> None:
    """A policy that knows a failure episode, and its end, from its first failed call into it."""
    res = []
    for run in prep.runs:
        pool, sched, steps = prep.env.pool, run.scenario.schedule, run.steps["semantic"][0]
        known: set[int] = set()
        succ, faults, static_faults = [], 0, 0
        onset = prep.scenario.onset
        for t in range(len(run.stream)):
            q = int(run.stream[t])
            st = steps[q]
            order = np.argsort(-(0.75 * st.semantic + w3 * st.prior), kind="stable")
            pick = next(
                (c for c in order if sched.episode_at(int(st.positions[c]), t, q) not in known), order[0]
            )
            j = int(st.positions[pick])
            out, f = sched.call(j, t, run.draws.fail[t, 0], run.draws.caller[t, 0], q)
            if f:
                known.add(sched.episode_at(j, t, q))
                faults += t >= onset
            succ.append(out.is_success and j in pool.relevant[q])
            # static: the same fusion with no memory (the "half of static's FSR" target divides by this)
            js = int(st.positions[order[0]])
            static_faults += t >= onset and sched.call(js, t, run.draws.fail[t, 0], 1.0, q)[1]
        sr, orc = np.mean(succ[onset:]), run.oracles["semantic"].success[onset:].mean()
        n = len(run.stream) - onset
        res.append((sr, orc, faults / n, static_faults / n))
    r = np.array(res)
    print(
        f"floor policy: SR {100 * r[:, 0].mean():.2f}, oracle {100 * r[:, 1].mean():.2f}, "
        f"regret {100 * (r[:, 1] - r[:, 0]).mean():.2f}, FSR {100 * r[:, 2].mean():.2f} against static's "
        f"{100 * r[:, 3].mean():.2f} ({r[:, 2].mean() / r[:, 3].mean():.2f}x)"
    )


def cmd_kinds(prep, params: dict) -> None:
    """Repeated faults and stale losses of RATED by the kind of the tool's last failure."""
    rep: dict[tuple, int] = {}
    stale: dict[tuple, int] = {}
    n = 0
    for run in prep.runs:
        pol = make_policy("rated", **params)
        pool, sched, steps = prep.env.pool, run.scenario.schedule, run.steps["semantic"][0]
        lastfail: dict[int, tuple] = {}
        for t in range(len(run.stream)):
            q = int(run.stream[t])
            st = steps[q]
            c = int(pol.rank(st.at(float(t))).order[0])
            j = int(st.positions[c])
            b0 = int(np.argmax(0.75 * st.semantic + pol.w3 * st.prior))
            jb = int(st.positions[b0])
            e = sched.episode_at(j, t, q)
            out, f = sched.call(j, t, run.draws.fail[t, 0], run.draws.caller[t, 0], q)
            pol.learn(Feedback(st.tool_ids[c], out, float(t), st.context, st.providers[c]))
            ok = out.is_success and j in pool.relevant[q]
            if t >= prep.scenario.onset:
                n += 1
                if f and j in lastfail and lastfail[j][1] == e:
                    k = (lastfail[j][0], "degraded" if sched.p_fail[e] < 0.99 else "down")
                    rep[k] = rep.get(k, 0) + 1
                elif not f and c != b0 and jb in lastfail and sched.episode_at(jb, t, q) < 0:
                    if jb in pool.relevant[q] and not ok:
                        kind, _, p, t0 = lastfail[jb]
                        k = (kind, "degraded" if p < 0.99 else "down", f"2^{int(np.log2(max(t - t0, 1)))}")
                        stale[k] = stale.get(k, 0) + 1
            if f:
                lastfail[j] = (out.kind.value, e, float(sched.p_fail[e]), t)
            elif out.is_success:
                lastfail.pop(j, None)
    print("repeated faults:", {k: f"{100 * v / n:.2f}%" for k, v in sorted(rep.items(), key=lambda x: -x[1])})
    by_kind: dict[tuple, int] = {}
    by_age: dict[str, int] = {}
    for (kind, dg, age), v in stale.items():
        by_kind[(kind, dg)] = by_kind.get((kind, dg), 0) + v
        by_age[age] = by_age.get(age, 0) + v
    print(
        "stale losses by kind:",
        {k: f"{100 * v / n:.2f}%" for k, v in sorted(by_kind.items(), key=lambda x: -x[1])},
    )
    print(
        "stale losses by time since the failure:",
        {k: f"{100 * v / n:.2f}%" for k, v in sorted(by_age.items())},
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("what", choices=["relevance", "disagree", "decompose", "floor", "kinds"])
    ap.add_argument("--dataset", required=True)
    ap.add_argument("--scenario", default="outages")
    ap.add_argument("--failure-rate", type=float, default=0.2)
    ap.add_argument("--val-seeds", type=int, default=3)
    ap.add_argument("--rated", default="{}", help="RATED's settings (JSON)")
    ap.add_argument("--breaker", default="{}", help="the breaker's settings (JSON)")
    ap.add_argument("--method", default="rated", help="decompose: the registry name of the method")
    a = ap.parse_args()
    env = env_for(a.dataset)
    if a.what == "relevance":
        return cmd_relevance(env, 10)
    cfg = BenchConfig(
        ScenarioConfig(name=a.scenario, failure_rate=a.failure_rate),
        seeds=seeds_for(a.val_seeds, validation=True),
    )
    prep = prepare(env, cfg, ["semantic"])
    rated = json.loads(a.rated)
    if a.what == "disagree":
        cmd_disagree(prep, rated, json.loads(a.breaker))
    elif a.what == "decompose":
        cmd_decompose(prep, a.method, rated if a.method == "rated" else json.loads(a.breaker))
    elif a.what == "floor":
        cmd_floor(prep, float(rated.get("w3", 0.05)))
    else:
        cmd_kinds(prep, rated)


if __name__ == "__main__":
    main()
