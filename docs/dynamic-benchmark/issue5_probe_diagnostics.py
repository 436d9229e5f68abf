"""How much RATED's choice of probe targets can matter (section 4.1 of docs/dynamic-benchmark.md), on
validation seeds 1000.. only, with RATED at the settings stored in results.json for the configuration.

    D=DATA/stabletoolbench; C=stb-outages-0.2-probes
    python docs/dynamic-benchmark/issue5_probe_diagnostics.py ceiling --dataset $D --config $C
    python docs/dynamic-benchmark/issue5_probe_diagnostics.py ceiling --dataset $D --config $C --budget 1000
    python docs/dynamic-benchmark/issue5_probe_diagnostics.py decompose --dataset $D --config $C

(``--failure-rate 0.3 --config stb-outages-0.3-probes`` for the other configuration.) ``ceiling`` runs RATED
without probes, with its own probe choice, and with an oracle probe choice that knows which suspects are
up now (they go first, in RATED's order): the gap between the last two bounds what any priority rule over
the suspects can gain. ``decompose`` classifies each post-onset step where the oracle succeeded and RATED
did not (or the reverse). Reads the scenario's schedule, which no method sees: a tool for reading the
benchmark, not part of the package.
"""

from __future__ import annotations

import argparse
import json
from collections import Counter

import numpy as np
from issue5_diagnostics import env_for

from rated.bench.dynamic.runner import BenchConfig, prepare, seeds_for
from rated.bench.dynamic.scenarios import ScenarioConfig
from rated.bench.dynamic.simulator import run_policy
from rated.policy.base import Feedback
from rated.policy.rated import PROVIDER_PREFIX, RatedPolicy


class Watched(RatedPolicy):
    """RATED that counts the suspects competing at each probe time; with ``cheat`` the suspects that are
    up now are probed first."""

    def __init__(self, sched=None, index=None, cheat=False, **kw):  # noqa: ANN001
        super().__init__(**kw)
        self.sched, self.index, self.cheat, self.n_suspects = sched, index, cheat, []

    def probe_targets(self, now: float, budget: int) -> list[str]:
        every = super().probe_targets(now, 10**6)
        self.n_suspects.append(len(every))
        if self.cheat:
            up = [k for k in every if self.sched.episode_at(self.index[k], int(now)) < 0]
            every = up + [k for k in every if k not in up]
        return every[:budget]


def cmd_ceiling(prep, params: dict, budget: int, interval: int) -> None:
    pool, onset = prep.env.pool, prep.scenario.onset
    index = {t: i for i, t in enumerate(pool.tool_ids)}
    for name, cheat, probes in (
        ("no probes", False, None),
        ("RATED's choice", False, interval),
        ("oracle choice", True, interval),
    ):
        srs, susp, passing = [], [], []
        for run in prep.runs:
            pol = Watched(run.scenario.schedule, index, cheat, **params)
            tr = run_policy(
                pol,
                pool,
                run.stream,
                run.scenario,
                run.draws,
                *run.steps["semantic"],
                probe_interval=probes,
                probe_budget=budget,
            )
            srs.append(round(100 * float(tr.success[onset:].mean()), 2))
            susp += pol.n_suspects
            passing.append(tr.probes - tr.probe_faults)
        print(
            f"{name:15s} Post-Fail SR {np.mean(srs):.2f} (seeds {srs}); suspects per "
            f"probe time {np.mean(susp) if susp else 0:.1f}; passing probes {passing}"
        )


def belief(pol: RatedPolicy, key: str, now: float) -> float:
    r = pol._rows.index.get(key)
    return pol.down_prior if r is None else pol._belief_row(pol._rows.scalars[r].tolist(), now)


def cmd_decompose(prep, params: dict, budget: int, interval: int) -> None:
    pool, onset = prep.env.pool, prep.scenario.onset
    index = {t: i for i, t in enumerate(pool.tool_ids)}
    cnt: Counter[str] = Counter()
    lags: list[int] = []
    n = 0
    for run in prep.runs:
        pol = RatedPolicy(**params)
        sched, steps, orc = run.scenario.schedule, run.steps["semantic"][0], run.oracles["semantic"]
        last_fail_ep: dict[int, int] = {}
        for t in range(len(run.stream)):
            q = int(run.stream[t])
            st = steps[q]
            c = int(pol.rank(st.at(float(t))).order[0])
            j = int(st.positions[c])
            e = sched.episode_at(j, t, q)
            out, fault = sched.call(j, t, run.draws.fail[t, 0], run.draws.caller[t, 0], q)
            ok = out.is_success and j in pool.relevant[q]
            if t >= onset:
                n += 1
                if orc.success[t] and not ok:
                    if fault:
                        known = last_fail_ep.get(j) == e
                        why = "fault, " + ("repeated (a known episode)" if known else "first contact")
                    else:  # the oracle's pick: the retriever's first candidate that is up
                        o = next(i for i, p in enumerate(st.positions) if sched.episode_at(int(p), t, q) < 0)
                        tid, prov = st.tool_ids[o], st.providers[o]
                        bt = belief(pol, tid, t)
                        bp = belief(pol, PROVIDER_PREFIX + prov, t) if prov and prov != tid else 0.0
                        if bt > 0.5:
                            why = "stale: up tool believed down"
                            ends = [
                                int(sched.end[x])
                                for x in sched._by_tool.get(int(st.positions[o]), ())
                                if sched.end[x] <= t
                            ]
                            if ends:
                                lags.append(t - max(ends))
                        elif bp > 0.5:
                            why = "stale: its provider believed down"
                        elif (1 - bt) * (1 - bp) < 0.9:
                            why = "soft: availability < 0.9"
                        else:
                            why = "order (reliability, prior, fusion)"
                    cnt["lost: " + why] += 1
                elif ok and not orc.success[t]:
                    cnt["won (oracle lost)"] += 1
            if fault:
                last_fail_ep[j] = e
            pol.learn(Feedback(st.tool_ids[c], out, float(t), st.context, st.providers[c]))
            if interval and t % interval == 0:
                for slot, tid in enumerate(pol.probe_targets(float(t), budget)[:budget]):
                    jj = index[tid]
                    po, _ = sched.call(jj, t, run.draws.probe[t, slot], 1.0)
                    pol.learn(Feedback(tid, po, float(t), None, pool.providers[jj], probe=True))
    for key, v in sorted(cnt.items()):
        print(f"{100 * v / n:6.2f} pts  {key}")
    lost = sum(v for k, v in cnt.items() if k.startswith("lost"))
    print(
        f"net regret {100 * (lost - cnt['won (oracle lost)']) / n:.2f} pts; stale demotions of up tools: "
        f"{np.median(lags) if lags else 0:.0f} steps after the episode ended (median), "
        f"p90 {np.percentile(lags, 90) if lags else 0:.0f}"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("what", choices=["ceiling", "decompose"])
    ap.add_argument("--dataset", required=True)
    ap.add_argument("--config", required=True, help="results.json entry whose RATED settings are used")
    ap.add_argument("--failure-rate", type=float, default=0.2)
    ap.add_argument("--interval", type=int, default=50)
    ap.add_argument("--budget", type=int, default=5)
    ap.add_argument("--val-seeds", type=int, default=3)
    a = ap.parse_args()
    results = json.load(open("docs/dynamic-benchmark/results.json"))  # noqa: SIM115
    params = results[a.config]["methods"]["rated"]["params"]
    cfg = BenchConfig(
        ScenarioConfig(name="outages", failure_rate=a.failure_rate),
        seeds=seeds_for(a.val_seeds, validation=True),
        probe_budget=a.budget,
    )
    prep = prepare(env_for(a.dataset), cfg, ["semantic"])
    (cmd_ceiling if a.what == "ceiling" else cmd_decompose)(prep, params, a.budget, a.interval)


if __name__ == "__main__":
    main()
