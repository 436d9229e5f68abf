"""Summarise ``rated bench dynamic --tune --fault-cost C`` runs (section 5.3 of docs/dynamic-benchmark.md):
every method tuned on the validation seeds for ``Post-Fail SR - C x FSR`` instead of success alone.

    python docs/dynamic-benchmark/fault_cost_summary.py RUNS_DIR [--plot PNG] [--apply]

RUNS_DIR holds one JSON per configuration, named as the doc's configurations (``stb-recovery-0.2.json``...),
each written by the command of section 5 with ``--fault-cost C`` added. Prints a markdown table: RATED's
Post-Fail SR, FSR and its ratio to static's, the objective, the baseline with the best objective and RATED's
paired lead over it, and over the tuned breaker, in points with the seeds RATED is ahead on; and, per
configuration, RATED's Post-Fail SR lead over the best baseline by success, and its lead on the objective
at the settings tuned for success alone (``results.json``). ``--plot PNG`` draws the lead
on the objective; ``--apply`` stores compact entries ``fc<C>-NAME`` in ``results.json`` (rates rounded to 4
decimals).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from rated.bench.dynamic.report import MULTI_CALL, is_baseline

HERE = Path(__file__).parent
RESULTS = HERE / "results.json"


def _pts(d: dict) -> str:
    return f"{100 * d['mean']:+.2f} ± {100 * d['std']:.2f} ({d['a_better']}/{d['seeds']})"


def _lead(paired: dict, label: str | None, key: str) -> str:
    """RATED's paired lead over ``label`` on ``key``, or '-' when the run has no such method."""
    found = paired.get(f"rated - {label}") if label else None
    return f"{label} {_pts(found[key])}" if found else "-"


def single_call_baselines(methods: dict) -> list[str]:
    """The run's baselines that call one tool per step (the report's rule: not RATED's, not the oracle)."""
    return [b for b, m in methods.items() if is_baseline(b, m["policy"]) and m["policy"] not in MULTI_CALL]


def best_by_objective(raw: dict) -> str | None:
    """The single-call baseline with the highest mean objective in the run, or None without one."""
    ms = raw["methods"]
    return max(single_call_baselines(ms), key=lambda b: ms[b]["net"]["mean"], default=None)


def success_only_lead(name: str, raw: dict, results: dict) -> str:
    """RATED's lead on the same objective at the settings tuned for success alone (``results.json``'s entry
    of the configuration, same test seeds; means only, so no seed count), over the best of the run's
    single-call baselines by it there; '-' when results.json has no such entry."""
    stored = results.get(name, {}).get("methods")
    if not stored or "rated" not in stored:
        return "-"
    cost = raw["tuning"]["fault_cost"]

    def objective(label: str) -> float:
        return stored[label]["post_fail_sr"][0] - cost * stored[label]["fsr"][0]

    best = max((b for b in single_call_baselines(raw["methods"]) if b in stored), key=objective, default=None)
    return f"{best} {100 * (objective('rated') - objective(best)):+.2f}" if best else "-"


def row(name: str, raw: dict, results: dict) -> str:
    ms, paired = raw["methods"], raw["paired"]
    rated, static = ms["rated"], ms.get("static")
    best_net = best_by_objective(raw)
    ratio = "-"
    if static and static["fsr"]["mean"] > 0:
        ratio = f"{rated['fsr']['mean'] / static['fsr']['mean']:.2f}x"
    cells = [
        name,
        f"{raw['tuning']['fault_cost']:g}",
        f"{100 * rated['post_fail_sr']['mean']:.1f} / {100 * rated['fsr']['mean']:.1f}",
        ratio,
        f"{100 * rated['net']['mean']:.1f}",
        f"{best_net} {100 * ms[best_net]['net']['mean']:.1f}" if best_net else "-",
        _lead(paired, best_net, "net"),
        _lead(paired, "breaker", "net"),
        _lead(paired, raw.get("best_baseline"), "post_fail_sr"),
        success_only_lead(name, raw, results),
    ]
    return "| " + " | ".join(cells) + " |"


def plot(runs: dict[str, dict], path: Path) -> Path:
    """RATED's paired lead on the objective over the best baseline by it, per configuration (points, mean
    and standard deviation over the paired seeds): a PNG."""
    from rated.plotting import pyplot, save_png

    names, means, stds = [], [], []
    for name, raw in runs.items():
        best = best_by_objective(raw)
        if best is None:
            continue
        d = raw["paired"][f"rated - {best}"]["net"]
        names.append(f"{name} (vs {best})")
        means.append(100 * d["mean"])
        stds.append(100 * d["std"])
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(7.5, 0.45 * len(names) + 1.4))
    colors = ["tab:green" if m > 0 else "tab:red" for m in means]
    ax.barh(range(len(names)), means, xerr=stds, color=colors, capsize=3)
    ax.set_yticks(range(len(names)), names, fontsize="small")
    ax.invert_yaxis()
    ax.axvline(0, color="black", linewidth=0.8)
    cost = next(iter(runs.values()))["tuning"]["fault_cost"]
    ax.set_xlabel(f"RATED - best baseline, Post-Fail SR - {cost:g} x FSR (points, paired seeds)")
    ax.grid(axis="x", alpha=0.3)
    return save_png(fig, path)


def read_runs(folder: Path) -> dict[str, dict]:
    """The benchmark reports in ``folder`` by name; other JSON (a tuning payload) is skipped, and a report
    whose settings were not chosen with a price per failed call is refused, naming the file."""
    runs = {}
    for path in sorted(folder.glob("*.json")):
        raw = json.loads(path.read_text(encoding="utf-8"))
        if "paired" not in raw:
            continue
        if not (raw.get("tuning") or {}).get("fault_cost") or "rated" not in raw["methods"]:
            raise SystemExit(f"{path}: not a run of rated with --tune --fault-cost C (C > 0)")
        runs[path.stem] = raw
    return runs


def compact(raw: dict) -> dict:
    def pair(m: dict, key: str) -> list[float]:
        return [round(m[key]["mean"], 4), round(m[key]["std"], 4)]

    return {
        "dataset": raw["dataset"],
        "scenario": raw["scenario"],
        "failure_rate": raw["failure_rate"],
        "stream": raw["stream"],
        "steps": raw["steps"],
        "onset": raw["onset"],
        "probes": raw["probes"],
        "seeds": raw["seeds"],
        "validation_seeds": raw["tuning"]["validation_seeds"],
        "fault_cost": raw["tuning"]["fault_cost"],
        "best_baseline": raw["best_baseline"],
        "methods": {
            label: {
                **{k: pair(m, k) for k in ("post_fail_sr", "fsr", "regret", "net")},
                "params": m.get("params") or {},
            }
            for label, m in raw["methods"].items()
        },
        "paired_net": {label: p["net"] for label, p in raw["paired"].items() if "net" in p},
        "notes": "every method tuned on the validation seeds for Post-Fail SR - fault_cost x FSR (doc 5.3)",
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("runs", type=Path)
    ap.add_argument("--apply", action="store_true", help="store compact entries in results.json")
    ap.add_argument("--plot", type=Path, help="PNG of RATED's lead on the objective per configuration")
    args = ap.parse_args()
    runs = read_runs(args.runs)
    print(
        "| configuration | price C | RATED SR / FSR % | FSR / static's | RATED SR - C x FSR | best baseline "
        "by it | RATED's lead on it (seeds ahead) | over the breaker | in SR over the best baseline by SR | "
        "lead on it at the success-only settings |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    results = json.loads(RESULTS.read_text(encoding="utf-8"))
    for name, raw in runs.items():
        print(row(name, raw, results))
    if args.plot:
        print(f"wrote {plot(runs, args.plot)}")
    if args.apply:
        results = json.loads(RESULTS.read_text(encoding="utf-8"))
        for name, raw in runs.items():
            results[f"fc{raw['tuning']['fault_cost']:g}-{name}"] = compact(raw)
        RESULTS.write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")
        print(f"stored {len(runs)} entries in {RESULTS}")


if __name__ == "__main__":
    main()
