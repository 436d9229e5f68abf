"""RATED variants against the tuned baselines in `outages`, seed by seed (issue 5, helper-75's exploration).

    python docs/dynamic-benchmark/issue5_outage_variants.py compare --data DATA \
        --configs stb-0.2,bfcl-0.2 --seeds val10 \
        --variants '{"tuned": {}, "w3_0": {"w3": 0.0}, "nt05": {"noise_timeout": 0.05}}'
    python docs/dynamic-benchmark/issue5_outage_variants.py pair --data DATA --config stb-0.2 \
        --seeds 1007,1008 --vs breaker

``compare`` runs the stored tuned ``global_mab`` and ``breaker`` of each configuration
(``results.json``, ``methods.<label>.params``) and each variant (RATED at its stored tuned settings,
overridden by the variant's parameters) on the same seeds (``valN``: validation seeds 1000.., ``testN``:
test seeds 0..), and prints mean Post-Fail SR / FSR / regret, the paired difference to the better of the
two baselines on those seeds (mean, seeds ahead, worst seed) and to the first variant. ``pair`` replays the
tuned RATED and one tuned baseline step by step on the given seeds and classifies the steps where exactly
one of them succeeded (a fault of the loser, first or repeated; the loser ranked the winner's pick lower
after a failure of it, by its kind, failures in a row, time since and RATED's availability; or with no
failure of it: the static prior or the reliability estimate re-ordered). Options of the variants patch
(``recovery_variants.patch``: ``age_recovery``, ``recovery_shape``, ``explain_away``) need it applied.
``DATA`` holds ``stabletoolbench/`` and ``bfcl/`` from ``rated data prepare``. Not part of the package.
"""

from __future__ import annotations

import argparse
import json
import time
from collections import Counter
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

from rated.bench.dataset import load_dataset
from rated.bench.dynamic.runner import BenchConfig, Env, MethodSpec, method_rows, prepare, seeds_for
from rated.bench.dynamic.scenarios import ScenarioConfig
from rated.policy.base import Feedback
from rated.policy.registry import make_policy

RESULTS = json.loads((Path(__file__).parent / "results.json").read_text())
FOLDERS = {"stb": "stabletoolbench", "bfcl": "bfcl"}
BASELINES = ("global_mab", "breaker")
_PREP = None  # shared with forked workers


def env_for(data: Path, ds: str) -> Env:
    from rated.bench.embcache import CachedEncoder
    from rated.encode import default_encoder

    enc = CachedEncoder(default_encoder(progress=False))
    env = Env.from_dataset(load_dataset(data / FOLDERS[ds]), "test", encoder=enc)
    env.context_encoder = enc
    return env


def stored(config: str) -> dict:
    ds, rate = config.split("-")
    return RESULTS[f"{ds}-outages-{rate}"]["methods"]


def seed_list(text: str) -> tuple[int, ...]:
    if text.startswith("val"):
        return seeds_for(int(text[3:]), validation=True)
    if text.startswith("test"):
        return seeds_for(int(text[4:]))
    return tuple(int(s) for s in text.split(","))


def _eval(job: tuple[str, MethodSpec]) -> tuple[str, list[dict]]:
    label, spec = job
    return label, method_rows(_PREP, spec)


def cmd_compare(args: argparse.Namespace) -> None:
    global _PREP
    variants = json.loads(args.variants)
    envs: dict[str, Env] = {}
    for config in args.configs.split(","):
        ds, rate = config.split("-")
        envs.setdefault(ds, env_for(args.data, ds))
        methods = stored(config)
        cfg = BenchConfig(
            ScenarioConfig(name="outages", failure_rate=float(rate)), seeds=seed_list(args.seeds)
        )
        t0 = time.time()
        _PREP = prepare(envs[ds], cfg, ["semantic"])
        specs = {b: MethodSpec(b, b, "semantic", methods[b]["params"]) for b in BASELINES}
        for label, params in variants.items():
            specs[label] = MethodSpec(label, "rated", "semantic", {**methods["rated"]["params"], **params})
        with ProcessPoolExecutor(max_workers=args.jobs) as ex:
            rows = dict(ex.map(_eval, list(specs.items())))
        sr = {k: np.array([r["post_fail_sr"] for r in v]) * 100 for k, v in rows.items()}
        best = max(BASELINES, key=lambda b: sr[b].mean())
        ref = next(iter(variants))
        print(f"== {config} {args.seeds} ({time.time() - t0:.0f} s); best baseline on these seeds: {best}")
        for label, v in rows.items():
            d, dref = sr[label] - sr[best], sr[label] - sr[ref]
            fsr = 100 * np.mean([r["fsr"] for r in v])
            reg = 100 * np.mean([r["regret"] for r in v])
            print(
                f"  {label:14s} SR {sr[label].mean():6.2f} FSR {fsr:5.2f} regret {reg:5.2f} | - {best} "
                f"{d.mean():+5.2f} ({int((d > 0).sum())}/{len(d)}, worst {d.min():+5.2f}) | - {ref} "
                f"{dref.mean():+5.2f} ({int((dref > 0).sum())}/{len(d)})"
            )


def cmd_pair(args: argparse.Namespace) -> None:
    ds, rate = args.config.split("-")
    methods = stored(args.config)
    env = env_for(args.data, ds)
    cfg = BenchConfig(ScenarioConfig(name="outages", failure_rate=float(rate)), seeds=seed_list(args.seeds))
    prep = prepare(env, cfg, ["semantic"])
    for run in prep.runs:
        pols = {
            "R": make_policy("rated", **methods["rated"]["params"]),
            "B": make_policy(args.vs, **methods[args.vs]["params"]),
        }
        pool, sched, steps = prep.env.pool, run.scenario.schedule, run.steps["semantic"][0]
        hist: dict[str, dict[int, tuple]] = {"R": {}, "B": {}}  # tool -> (kind, failures in a row, t last)
        cats: Counter = Counter()
        for t in range(len(run.stream)):
            q = int(run.stream[t])
            st = steps[q]
            res, comps = {}, {}
            for name, pol in pols.items():
                ranking = pol.rank(st.at(float(t)))
                comps[name] = ranking.components
                c = int(ranking.order[0])
                j = int(st.positions[c])
                out, fault = sched.call(j, t, run.draws.fail[t, 0], run.draws.caller[t, 0], q)
                pol.learn(Feedback(st.tool_ids[c], out, float(t), st.context, st.providers[c]))
                h = hist[name]
                res[name] = (c, out.is_success and j in pool.relevant[q], fault, out.kind.value, h.get(j))
                if fault:
                    n = h[j][1] + 1 if j in h else 1
                    h[j] = (out.kind.value, n, t)
                elif out.is_success:
                    h.pop(j, None)
            if t < prep.scenario.onset or res["R"][1] == res["B"][1]:
                continue
            win, lose = ("R", "B") if res["R"][1] else ("B", "R")
            lc, _, lfault, lkind, lhist = res[lose]
            wc = res[win][0]
            if lfault:
                why: tuple = ("fault", lkind, "repeated" if lhist is not None else "first contact")
            elif lc == wc:
                why = ("same pick",)
            else:
                wj = int(st.positions[wc])
                known = hist[lose].get(wj)
                if known:
                    kind, n, tl = known
                    why = (
                        "demoted after failures",
                        kind,
                        f"{min(n, 3)} in a row",
                        f"2^{int(np.log2(max(t - tl, 1)))} ago",
                    )
                    if lose == "R":
                        why += (f"avail {float(comps['R']['availability'][wc]):.1f}",)
                else:
                    why = ("order, no failure of it",)
                    if lose == "R":
                        low_rel = float(comps["R"]["reliability"][wc]) < 0.97
                        why += ("reliability" if low_rel else "static prior / provider",)
            cats[(f"{win} wins", *why)] += 1
        n = len(run.stream) - prep.scenario.onset
        print(
            f"seed {run.seed} ({n} post-onset steps): RATED vs {args.vs}, steps where one of them succeeded"
        )
        for k, v in sorted(cats.items(), key=lambda kv: -kv[1]):
            if 100 * v / n >= args.min_share:
                print(f"  {100 * v / n:5.2f}%  {' | '.join(k)}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="what", required=True)
    c = sub.add_parser("compare")
    c.add_argument("--data", type=Path, required=True)
    c.add_argument("--configs", default="stb-0.2,stb-0.3,bfcl-0.2,bfcl-0.3")
    c.add_argument("--seeds", default="val3")
    c.add_argument("--variants", default='{"tuned": {}}', help="JSON: label -> RATED parameters")
    c.add_argument("--jobs", type=int, default=2)
    p = sub.add_parser("pair")
    p.add_argument("--data", type=Path, required=True)
    p.add_argument("--config", default="stb-0.2")
    p.add_argument("--seeds", default="1007")
    p.add_argument("--vs", default="breaker", choices=BASELINES)
    p.add_argument("--min-share", type=float, default=0.05, help="hide categories below this %% of steps")
    args = ap.parse_args()
    cmd_compare(args) if args.what == "compare" else cmd_pair(args)


if __name__ == "__main__":
    main()
