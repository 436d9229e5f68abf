"""Turn a ``BenchResult`` into the JSON of issue 5, a markdown table and a PNG of the success curves."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from rated.bench.dynamic.metrics import aggregate
from rated.bench.dynamic.metrics import paired as paired_diffs
from rated.bench.dynamic.runner import BenchResult
from rated.plural import counted

__all__ = [
    "best_baseline",
    "fault_cost",
    "is_baseline",
    "json_params",
    "markdown_table",
    "plot_curves",
    "to_json",
]

NOT_BASELINES = ("rated", "oracle")
MULTI_CALL = ("retry3",)  # methods that may call several tools per step


def json_params(params: Any) -> dict[str, Any]:
    """Method settings for JSON: an infinite setting (a half-life of inf) is written as the string "inf"."""
    out = {}
    for k, v in dict(params).items():
        if isinstance(v, float | np.floating) and not math.isfinite(float(v)):
            v = "inf" if v > 0 else "-inf"
        out[str(k)] = v
    return out


def _clean(x: Any) -> Any:
    """JSON-safe: numpy scalars to Python, non-finite floats to None."""
    if isinstance(x, dict):
        return {str(k): _clean(v) for k, v in x.items()}
    if isinstance(x, list | tuple):
        return [_clean(v) for v in x]
    if isinstance(x, np.generic):
        x = x.item()
    if isinstance(x, float) and not math.isfinite(x):
        return None
    return x


def is_baseline(label: str, policy: str) -> bool:
    """A method RATED is compared with: not RATED (nor a variant of it, ``rated_*``), not the oracle."""
    return policy not in NOT_BASELINES and not label.startswith("rated")


def fault_cost(report: dict[str, Any]) -> float:
    """The price per failed call the tuned settings were chosen with (0: for success alone)."""
    return float((report.get("tuning") or {}).get("fault_cost") or 0.0)


def best_baseline(result: BenchResult, single_call: bool = True) -> str | None:
    """The baseline with the highest mean Post-Fail SR (by default among methods making one call per step)."""
    summary = result.summary()
    candidates = [
        label
        for label, spec in result.methods.items()
        if is_baseline(label, spec.policy)
        and not (single_call and (spec.policy in MULTI_CALL or (spec.attempts or 1) > 1))
    ]
    if not candidates:
        return None
    return max(candidates, key=lambda m: summary[m]["post_fail_sr"]["mean"])


def _with_net(per_seed: dict[str, list[dict[str, Any]]], cost: float) -> dict[str, list[dict[str, Any]]]:
    """Each seed's row with ``net`` = Post-Fail SR - ``cost`` x FSR, the objective the settings were tuned
    for, when they were tuned with a price per failed call (rows unchanged otherwise)."""
    if not cost:
        return per_seed
    return {
        label: [{**row, "net": row["post_fail_sr"] - cost * row["fsr"]} for row in rows]
        for label, rows in per_seed.items()
    }


def to_json(result: BenchResult, tuning: dict[str, Any] | None = None) -> dict[str, Any]:
    """The report of one benchmark run, in the shape issue 5 asks for (plus context fields)."""
    cfg = result.config
    cost = fault_cost({"tuning": tuning})
    per_seed = _with_net(result.per_seed, cost)
    methods: dict[str, Any] = {}
    for label, spec in result.methods.items():
        methods[label] = {
            **aggregate(per_seed[label]),
            "policy": spec.policy,
            "retriever": spec.retriever,
            "params": json_params(spec.params),
            "seconds": result.seconds.get(label, 0.0),
            "per_seed": per_seed[label],
        }
    keys = ("post_fail_sr", "fsr", "regret", "net") if cost else ("post_fail_sr", "fsr", "regret")
    paired: dict[str, Any] = {}
    if "rated" in per_seed:
        for label in per_seed:
            if label != "rated":
                paired[f"rated - {label}"] = paired_diffs(per_seed["rated"], per_seed[label], keys)
    rep = np.array(result.repetition)
    return _clean(
        {
            "dataset": result.dataset,
            "scenario": cfg.scenario.name,
            "failure_rate": cfg.scenario.failure_rate,
            "seeds": list(cfg.seeds),
            "stream": cfg.stream,
            "steps": cfg.scenario.steps,
            "onset": cfg.scenario.onset,
            "k": cfg.k,
            "probes": {
                "interval": cfg.probe_interval,
                "budget": cfg.probe_budget if cfg.probe_interval else 0,
            },
            "window": cfg.window,
            "query_repetition_rate": {
                "mean": float(rep.mean()),
                "std": float(rep.std(ddof=1)) if len(rep) > 1 else 0.0,
            },
            "best_baseline": best_baseline(result),
            "methods": methods,
            "paired": paired,
            "curves": {
                "step": result.curve_steps.tolist(),
                **{k: v.tolist() for k, v in result.curves.items()},
            },
            "scenario_config": cfg.scenario.to_dict(),
            "scenario_info": result.scenario_info,
            "notes": result.notes,
            **({"tuning": tuning} if tuning else {}),
        }
    )


def _fmt(entry: dict[str, Any] | None, digits: int = 3, pct: bool = False) -> str:
    if not entry or entry.get("mean") is None:
        return "never" if entry and entry.get("never") else "-"
    mean, std = entry["mean"], entry.get("std") or 0.0
    text = f"{100 * mean:.1f} ± {100 * std:.1f}" if pct else f"{mean:.{digits}f} ± {std:.{digits}f}"
    never = entry.get("never")
    return text + (f" ({never} never)" if never else "")


def _objective(cost: float) -> str:
    """How the tuned settings were chosen, when not for success alone (a price per failed call)."""
    return f", tuned settings chosen by Post-Fail SR - {cost:g} x FSR" if cost else ""


def markdown_table(report: dict[str, Any]) -> str:
    """Methods as rows: Post-Fail SR and FSR in %, regret in points, adaptation steps, probes; with a price
    per failed call (``--fault-cost``), the objective too, and RATED's paired lead on it over each
    baseline."""
    cost = fault_cost(report)
    head = (
        f"**{report['dataset']}**, scenario `{report['scenario']}`, failure rate {report['failure_rate']}, "
        f"{report['stream']} stream ({counted(report['steps'], 'step')}, onset {report['onset']}, "
        f"query repetition {100 * report['query_repetition_rate']['mean']:.0f}%), "
        f"{counted(len(report['seeds']), 'seed')}, probes {report['probes']['interval'] or 'off'}"
        f"{_objective(cost)}\n\n"
    )
    net = f" SR - {cost:g} x FSR % |" if cost else ""
    rows = [
        f"| method | Post-Fail SR % | FSR % |{net} regret (pts) | adapt. steps | adapt. vs oracle | probes |",
        "|---|---|---|" + ("---|" if cost else "") + "---|---|---|---|",
    ]
    for label, m in report["methods"].items():
        cells = [
            _fmt(m["post_fail_sr"], pct=True),
            _fmt(m["fsr"], pct=True),
            *([_fmt(m["net"], pct=True)] if cost else []),
            _fmt(m["regret"], pct=True),
            _fmt(m["adaptation_steps"], 0),
            _fmt(m["adaptation_steps_oracle"], 0),
            f"{(m['probes']['mean'] or 0):.0f}",
        ]
        rows.append(f"| {label} | " + " | ".join(cells) + " |")
    tail = ""
    best = report.get("best_baseline")
    key = f"rated - {best}"
    if best and key in report.get("paired", {}):
        d = report["paired"][key]
        tail = (
            f"\nPaired, rated - {best} (best single-call baseline): Post-Fail SR "
            f"{_paired(d['post_fail_sr'])}; FSR {100 * d['fsr']['mean']:+.2f} pts.\n"
        )
        if cost:
            nets = [
                f"{label} {_paired(p['net'])}"
                for label, p in report["paired"].items()
                if "net" in p and _baseline_in(report, label.removeprefix("rated - "))
            ]
            tail += f"Paired, Post-Fail SR - {cost:g} x FSR: " + "; ".join(nets) + ".\n"
    return head + "\n".join(rows) + "\n" + tail


def _paired(d: dict[str, Any]) -> str:
    """A paired difference in points: mean ± std, and on how many seeds rated was ahead."""
    ahead = f"rated ahead on {d['a_better']}/{d['seeds']} seeds"
    return f"{100 * d['mean']:+.2f} ± {100 * d['std']:.2f} pts, {ahead}"


def _baseline_in(report: dict[str, Any], label: str) -> bool:
    method = report["methods"].get(label)
    return method is not None and is_baseline(label, method["policy"])


def plot_curves(report: dict[str, Any], path: str | Path, only: Sequence[str] | None = None) -> Path:
    """PNG of each method's trailing success rate (mean over seeds; ``only``: these methods), onset marked."""
    from rated.bench.plots import success_curves

    curves = {k: v for k, v in report["curves"].items() if k != "step" and v and (not only or k in only)}
    marks = {"onset": report["onset"]}
    cfg = report.get("scenario_config") or {}
    if report["scenario"] == "recovery" and cfg.get("recovery_at"):
        marks["recovery"] = cfg["recovery_at"]
    title = (
        f"{report['dataset']} · {report['scenario']} · failure rate {report['failure_rate']} · "
        f"{report['stream']} · probes {report['probes']['interval'] or 'off'}"
    )
    return success_curves(report["curves"]["step"], curves, path, title=title, marks=marks)
