"""Re-run every published dynamic configuration after the baseline audit (global_mab / batch_policy fixed).

The audit found that ``global_mab`` and ``batch_policy`` started unobserved tools from the metadata prior,
so one success locked a tool in ahead of better matches (popularity lock-in); they now have a
``prior_weight`` setting, 0 by default, and both values are in their tuning grids. This script re-tunes
those two on the validation seeds of each configuration and runs every method on the test seeds, with
every other method (RATED included) at the settings ``results.json`` stores for that configuration, then
writes the compact entries back into ``results.json`` (``--apply``).

    python docs/dynamic-benchmark/rerun_after_audit.py --data DATA --out runs/audit [--parallel 2] [--apply]
    python docs/dynamic-benchmark/rerun_after_audit.py --table OLD_RESULTS_JSON   (the comparison table)

``DATA`` holds the folders written by ``rated data prepare stabletoolbench|bfcl``. Each configuration is
one ``rated bench dynamic`` command, printed before it runs.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results.json"
RETUNED = ("global_mab", "batch_policy")
DATASETS = {"stabletoolbench-api": "stabletoolbench", "bfcl": "bfcl"}
NOTE = (
    "re-run after the baseline audit: global_mab and batch_policy re-tuned on the validation seeds with "
    "prior weight {0, 1} (their popularity lock-in fixed); every other method at its stored settings"
)


def main_configs(results: dict) -> list[str]:
    return [k for k in results if not k.startswith(("abl", "latency", "sweep"))]


def command(name: str, entry: dict, data: Path, out: Path) -> list[str]:
    labels = [m for m in entry["methods"] if m != "oracle"]
    specs = [f"{m}=rated" if m in ("rated_prev", "rated_fixed") else m for m in labels]
    cmd = [
        "rated", "bench", "dynamic", "--dataset", str(data / DATASETS[entry["dataset"]]),
        "--scenario", entry["scenario"], "--failure-rate", str(entry["failure_rate"]),
        "--stream", entry["stream"], "--seeds", str(len(entry["seeds"])),
        "--val-seeds", str(len(entry["validation_seeds"])), "--tune", "--jobs", "1",
        "--methods", *specs, "--fixed", *[m for m in labels if m not in RETUNED],
    ]  # fmt: skip
    probes = entry["probes"]
    if probes["interval"]:
        cmd += ["--probes", str(probes["interval"]), "--probe-budget", str(probes["budget"])]
    if name.endswith("-nometa"):
        cmd += ["--metadata-link", "off"]
    if name.endswith("-nokind"):
        cmd += ["--kind-link", "off"]
    for label in labels:
        if label in RETUNED:
            continue
        for param, value in (entry["methods"][label].get("params") or {}).items():
            cmd += ["--set", f"{label}.{param}={value}"]
    return [*cmd, "--out", str(out / f"{name}.json")]


def compact(raw: dict, old: dict) -> dict:
    """The results.json entry of a ``rated bench dynamic`` output (rates rounded to 4 decimals)."""

    def pair(m: dict, key: str) -> list[float]:
        return [round(m[key]["mean"], 4), round(m[key]["std"], 4)]

    methods = {
        label: {
            **{k: pair(m, k) for k in ("post_fail_sr", "fsr", "regret")},
            "params": m.get("params") or {},
        }
        for label, m in raw["methods"].items()
    }
    best = raw["best_baseline"]
    entry = {
        **{k: old[k] for k in ("dataset", "scenario", "failure_rate", "stream", "steps", "onset", "probes")},
        "seeds": raw["seeds"],
        "query_repetition_rate": round(raw["query_repetition_rate"]["mean"], 4),
        "best_baseline": best,
        "methods": methods,
        "paired_rated_vs_best": raw["paired"][f"rated - {best}"],
        "validation_seeds": old["validation_seeds"],
        "notes": NOTE,
    }
    if "rated - rated_prev" in raw["paired"]:
        entry["paired_rated_vs_previous"] = raw["paired"]["rated - rated_prev"]
    return entry


def table(before: dict, after: dict, names: list[str]) -> str:
    """Markdown: per configuration, the best baseline and RATED's paired lead before and after the re-run."""

    def pct(m: dict, key: str = "post_fail_sr") -> str:
        return f"{100 * m[key][0]:.1f}"

    def lead(e: dict) -> str:
        p = e["paired_rated_vs_best"]["post_fail_sr"]
        return f"{100 * p['mean']:+.2f} ± {100 * p['std']:.2f} ({p['a_better']}/{p['seeds']})"

    rows = [
        "| configuration | best baseline before: SR, RATED - it | global_mab SR before -> after | "
        "batch_policy SR before -> after | best baseline after: SR / FSR | RATED SR / FSR | RATED - best "
        "after, paired (seeds ahead) | regret RATED / best |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for n in names:
        b, a = before[n], after[n]
        best = a["methods"][a["best_baseline"]]
        rated = a["methods"]["rated"]
        rows.append(
            f"| {n} | {b['best_baseline']} {pct(b['methods'][b['best_baseline']])}, {lead(b)} | "
            f"{pct(b['methods']['global_mab'])} -> {pct(a['methods']['global_mab'])} | "
            f"{pct(b['methods']['batch_policy'])} -> {pct(a['methods']['batch_policy'])} | "
            f"{a['best_baseline']} {pct(best)} / {pct(best, 'fsr')} | {pct(rated)} / {pct(rated, 'fsr')} | "
            f"{lead(a)} | {100 * rated['regret'][0]:.1f} / {100 * best['regret'][0]:.1f} |"
        )
    return "\n".join(rows)


def run(cmd: list[str], log: Path) -> int:
    print(" ".join(cmd), flush=True)
    start = time.monotonic()
    with log.open("w") as f:
        code = subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT, check=False).returncode
    print(f"  {log.stem}: exit {code} in {time.monotonic() - start:.0f} s", flush=True)
    return code


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, help="folder with the prepared datasets (to run)")
    ap.add_argument("--out", type=Path, help="folder for each run's JSON, PNG and log (to run)")
    ap.add_argument("--configs", nargs="*", help="default: every published configuration")
    ap.add_argument("--parallel", type=int, default=1, help="configurations run at once")
    ap.add_argument("--apply", action="store_true", help="write the new entries into results.json")
    ap.add_argument("--table", type=Path, help="results.json from before the re-run: print the comparison")
    args = ap.parse_args()
    results = json.loads(RESULTS.read_text())
    names = args.configs or main_configs(results)
    if args.table:
        print(table(json.loads(args.table.read_text()), results, names))
        return 0
    if args.data is None or args.out is None:
        ap.error("--data and --out are needed to run")
    args.out.mkdir(parents=True, exist_ok=True)
    todo = [n for n in names if not (args.out / f"{n}.json").is_file()]  # resumable
    jobs = [(command(n, results[n], args.data, args.out), args.out / f"{n}.log") for n in todo]
    with ThreadPoolExecutor(max(1, args.parallel)) as pool:
        codes = list(pool.map(lambda job: run(*job), jobs))
    if any(codes):
        print(f"{sum(1 for c in codes if c)} configuration(s) failed; see the logs in {args.out}")
        return 1
    if args.apply:
        for n in names:
            results[n] = compact(json.loads((args.out / f"{n}.json").read_text()), results[n])
        RESULTS.write_text(json.dumps(results, indent=1) + "\n")
        print(f"wrote {len(names)} entries into {RESULTS}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
