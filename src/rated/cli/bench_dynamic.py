"""``rated bench dynamic | tune | sweep | latency``: the dynamic reliability benchmark, from the shell.

Thin: parse, build the library objects, run, print a markdown table, write JSON (and PNGs).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

from rated.cli.bench_group import get_bench_subparsers
from rated.cli.outpath import check_out_dir, check_out_file, writing
from rated.cli.output import err_console
from rated.errors import ConfigError

if TYPE_CHECKING:  # for type hints only: the benchmark is imported when a command runs
    from rated.bench.dynamic.runner import BenchConfig, Env, MethodSpec
    from rated.encode.base import Encoder

__all__ = ["register"]


def _say(text: str) -> None:
    """Plain text on stdout (markdown tables must not be re-wrapped by rich)."""
    sys.stdout.write(text.rstrip("\n") + "\n")


DEFAULT_METHODS = (
    "static",
    "rated_no_feedback",
    "blacklist",
    "retry3",
    "breaker",
    "window_breaker",
    "global_mab",
    "batch_policy",
    "rated",
)


def register(sub: argparse._SubParsersAction) -> None:
    bench = get_bench_subparsers(sub)
    dyn = bench.add_parser(
        "dynamic", help="dynamic reliability benchmark (Table 2): methods under tool failures"
    )
    _common(dyn)
    dyn.add_argument(
        "--methods",
        nargs="+",
        default=list(DEFAULT_METHODS),
        help="methods (name or name@retriever); the oracle is always added",
    )
    dyn.add_argument("--tune", action="store_true", help="tune every method on validation seeds first")
    dyn.add_argument(
        "--fixed",
        nargs="+",
        default=[],
        metavar="LABEL",
        help="with --tune: methods (by label) kept at their given settings",
    )
    _fault_cost(dyn)
    dyn.add_argument("--tuned", type=Path, help="JSON written by 'rated bench tune': settings to use")
    dyn.add_argument("--plot", type=Path, help="PNG of the success curves (default: next to --out)")
    dyn.add_argument(
        "--plot-methods", nargs="+", default=None, metavar="LABEL", help="methods to draw (default: all)"
    )
    dyn.set_defaults(handler=_dynamic)

    tun = bench.add_parser("tune", help="tune each method's settings on validation seeds (never on test)")
    _common(tun)
    tun.add_argument("--methods", nargs="+", default=list(DEFAULT_METHODS))
    _fault_cost(tun)
    tun.set_defaults(handler=_tune, validation=True)

    swp = bench.add_parser("sweep", help="RATED sensitivity heatmaps on validation seeds (Figure 4)")
    _common(swp)
    swp.add_argument(
        "--grids", nargs="+", default=["fusion", "bandit", "fading"], choices=["fusion", "bandit", "fading"]
    )
    swp.set_defaults(handler=_sweep, validation=True)

    lat = bench.add_parser("latency", help="batch-1 latency: encode only, + prior, + global MAB, full RATED")
    lat.add_argument(
        "--dataset", required=True, type=Path, help="dataset folder (tools.jsonl, queries.jsonl)"
    )
    lat.add_argument("--out", required=True, type=Path, help="JSON file to write")
    lat.add_argument("--queries", type=int, default=500)
    lat.add_argument("--warmup", type=int, default=50)
    lat.add_argument("-k", type=int, default=10)
    lat.add_argument(
        "--encoder",
        choices=["default", "hash"],
        default="default",
        help="'default' is the embedded MiniLM; 'hash' a fast fake for smoke tests",
    )
    lat.set_defaults(handler=_latency)


def _fault_cost(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--fault-cost",
        type=float,
        default=0.0,
        metavar="C",
        help="tuning: choose each method's settings by Post-Fail SR - C x FSR (a price per failed call; "
        "default 0: success alone)",
    )


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--dataset", required=True, type=Path, help="dataset folder (tools.jsonl, queries.jsonl)")
    p.add_argument(
        "--scenario",
        default="outages",
        choices=["persistent", "recovery", "degraded", "provider", "coldstart", "caller_errors", "outages"],
    )
    p.add_argument("--failure-rate", type=float, default=0.2)
    p.add_argument("--steps", type=int, default=5000)
    p.add_argument("--onset", type=int, default=2000)
    p.add_argument("--recovery-at", type=int, default=3500)
    p.add_argument("--error-kind", default="tool_error", help="error kind of the paper scenarios' failures")
    p.add_argument("--seeds", type=int, default=5, help="number of seeds (test: 0.., validation: 1000..)")
    p.add_argument(
        "--val-seeds", type=int, default=None, help="validation seeds for tuning (default: --seeds)"
    )
    p.add_argument("--validation", action="store_true", help="run on validation seeds instead of test seeds")
    p.add_argument("--stream", choices=["iid", "norepeat"], default="iid")
    p.add_argument("--probes", default="off", help="'off' or a probe interval in steps")
    p.add_argument("--probe-budget", type=int, default=5, help="tools a method may probe per interval")
    p.add_argument(
        "--retriever",
        default="semantic",
        choices=["tfidf", "bm25", "dense", "semantic"],
        help="retriever of methods named without @retriever",
    )
    p.add_argument("--split", default="test", help="query split for the stream (test, val, train or all)")
    p.add_argument("-k", type=int, default=10)
    p.add_argument("--metadata-link", choices=["on", "off"], default="on")
    p.add_argument("--kind-link", choices=["on", "off"], default="on")
    p.add_argument(
        "--partial-share",
        type=float,
        default=0.0,
        help="outages: extra failures that hit only some kinds of query (share of the failure rate)",
    )
    p.add_argument(
        "--encoder",
        choices=["default", "hash"],
        default="default",
        help="encoder for dense retrieval, contexts and the prior ('hash': fast fake)",
    )
    p.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="METHOD.PARAM=VALUE",
        help="override a method's setting, e.g. --set breaker.cooldown=400",
    )
    p.add_argument("--jobs", type=int, default=1, help="worker processes for tuning and sweeps")
    p.add_argument("--out", required=True, type=Path, help="JSON file (sweep: a folder)")


# ---- building blocks ---------------------------------------------------------------------------------
def _probes(text: str) -> int | None:
    if text.strip().lower() in ("off", "none", "0"):
        return None
    try:
        value = int(text)
    except ValueError:
        raise ConfigError(f"--probes must be 'off' or an interval in steps, got {text!r}") from None
    if value < 1:
        raise ConfigError(f"--probes interval must be >= 1, got {value}")
    return value


def _value(text: str) -> Any:
    low = text.strip().lower()
    if low in ("true", "false"):
        return low == "true"
    if low in ("inf", "infinity"):
        return math.inf
    for cast in (int, float):
        try:
            value = cast(text)
        except ValueError:
            continue
        if value != value:  # NaN: compares false with every bound a policy checks
            raise ConfigError(f"{text!r} is not a usable number")
        return value
    return text


def _overrides(items: list[str]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for item in items:
        key, sep, value = item.partition("=")
        method, dot, param = key.partition(".")
        if not sep or not dot or not method or not param:
            raise ConfigError(f"--set expects METHOD.PARAM=VALUE, got {item!r}")
        try:
            out.setdefault(method, {})[param] = _value(value)
        except ConfigError as exc:
            raise ConfigError(f"--set {item}: {exc}") from None
    return out


def _check_params(label: str, policy: str, params: dict[str, Any], source: str) -> None:
    """Every parameter is one the policy takes, with a value of the kind its default has."""
    import inspect

    from rated.policy.registry import POLICIES

    spec = POLICIES[policy]
    taken = {
        name: p.default
        for name, p in list(inspect.signature(spec.cls.__init__).parameters.items())[1:]
        if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
    }
    for name, value in params.items():
        if name not in taken:
            known = ", ".join(taken) or "no parameters"
            raise ConfigError(
                f"{source} {label}.{name}: {policy} has no parameter {name!r} (it takes {known})"
            )
        default = taken[name]
        numeric = isinstance(default, int | float) and not isinstance(default, bool)
        if isinstance(default, bool) and not isinstance(value, bool):
            raise ConfigError(f"{source} {label}.{name}={value}: expected true or false")
        if numeric and (isinstance(value, bool) or not isinstance(value, int | float)):
            raise ConfigError(f"{source} {label}.{name}={value}: expected a number")


def _encoder(name: str) -> Encoder:
    """``hash`` or ``default`` (argparse's choices), the real model's embeddings cached on disk."""
    from rated.encode import encoder_from_spec

    encoder = encoder_from_spec(name, progress=True)
    if name == "hash":
        return encoder
    from rated.bench.embcache import CachedEncoder

    return CachedEncoder(encoder)


def _env(args: argparse.Namespace) -> Env:
    from rated.bench.dataset import load_dataset
    from rated.bench.dynamic.runner import Env

    dataset = load_dataset(args.dataset)
    encoder = _encoder(args.encoder)
    env = Env.from_dataset(dataset, args.split, encoder=encoder)
    env.context_encoder = encoder
    return env


def _config(args: argparse.Namespace, validation: bool) -> BenchConfig:
    from rated.bench.dynamic.runner import BenchConfig, seeds_for
    from rated.bench.dynamic.scenarios import ScenarioConfig

    scenario = ScenarioConfig(
        name=args.scenario,
        steps=args.steps,
        onset=args.onset,
        failure_rate=args.failure_rate,
        recovery_at=args.recovery_at,
        error_kind=args.error_kind,
        metadata_link=args.metadata_link == "on",
        kind_link=args.kind_link == "on",
        partial_share=args.partial_share,
    )
    n = (args.seeds if args.val_seeds is None else args.val_seeds) if validation else args.seeds
    return BenchConfig(
        scenario=scenario,
        seeds=seeds_for(n, validation=validation),
        stream=args.stream,
        k=args.k,
        probe_interval=_probes(args.probes),
        probe_budget=args.probe_budget,
    )


def _specs(args: argparse.Namespace, tuned: dict[str, dict[str, Any]] | None = None) -> list[MethodSpec]:
    from rated.bench.dynamic.runner import MethodSpec

    sets = _overrides(args.set)
    specs: list[MethodSpec] = []
    for text in args.methods:
        if text.startswith("oracle"):
            continue
        spec = MethodSpec.parse(text, args.retriever)
        if any(s.label == spec.label for s in specs):
            raise ConfigError(
                f"method {spec.label!r} is given twice; name a second copy, e.g. {spec.label}_2={text}"
            )
        _check_params(spec.label, spec.policy, sets.get(spec.label, {}), "--set")
        params = {**(tuned or {}).get(spec.label, {}), **sets.get(spec.label, {})}
        specs.append(MethodSpec(spec.label, spec.policy, spec.retriever, params, spec.attempts))
    labels = {s.label for s in specs}
    unknown = [m for m in sets if m not in labels]
    if unknown:
        raise ConfigError(
            f"--set names {', '.join(map(repr, unknown))}, not among --methods ({', '.join(sorted(labels))})"
        )
    return specs


def _check_common(args: argparse.Namespace) -> None:
    """Settings that would make a run fail or mean nothing, refused before any work."""
    for flag, value, low in (
        ("--seeds", args.seeds, 1),
        ("--val-seeds", args.val_seeds, 1),
        ("--jobs", args.jobs, 1),
        ("--probe-budget", args.probe_budget, 1),
        ("-k", args.k, 1),
    ):
        if value is not None and value < low:
            raise ConfigError(f"{flag} must be >= {low}, got {value}")
    if getattr(args, "fault_cost", 0.0):
        from rated.bench.dynamic.tuning import check_fault_cost

        try:
            check_fault_cost(args.fault_cost)
        except ConfigError as exc:
            raise ConfigError(f"--fault-cost: {exc}") from None
    _config(args, args.validation)


def _labels_in(flag: str, given: list[str], labels: set[str]) -> None:
    unknown = [x for x in given if x not in labels]
    if unknown:
        raise ConfigError(
            f"{flag} names {', '.join(map(repr, unknown))}, "
            f"not among the methods ({', '.join(sorted(labels))})"
        )


def _read_tuning(path: Path) -> dict[str, Any]:
    """A payload written by ``rated bench tune`` (or a ``--tune`` run), checked for its shape."""
    if not path.is_file():
        raise ConfigError(f"--tuned {path}: no such file (write it with 'rated bench tune')")
    try:
        payload = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ConfigError(f"--tuned {path}: not a JSON file ({exc})") from None
    methods = payload.get("methods") if isinstance(payload, dict) else None
    if not isinstance(methods, dict) or not all(
        isinstance(v, dict) and isinstance(v.get("params"), dict) for v in methods.values()
    ):
        raise ConfigError(
            f"--tuned {path}: not tuned settings (expected 'methods' -> {{label: {{'params': ...}}}}, "
            "as 'rated bench tune' writes)"
        )
    if "fault_cost" in payload:  # how they were chosen: the report says it, with the objective's column
        from rated.bench.dynamic.tuning import check_fault_cost

        try:
            payload["fault_cost"] = check_fault_cost(payload["fault_cost"])
        except ConfigError as exc:
            raise ConfigError(f"--tuned {path}: {exc}") from None
    return payload


class _Progress:
    """A rich status line on stderr (quiet when not a terminal)."""

    def __init__(self, label: str):
        self.status = err_console.status(label)

    def __enter__(self) -> _Progress:
        self.status.__enter__()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.status.__exit__(exc_type, exc, tb)

    def __call__(self, message: str) -> None:
        self.status.update(message)


def _run_tuning(args: argparse.Namespace, env: Any, specs: list[Any], progress: _Progress) -> dict[str, Any]:
    from rated.bench.dynamic.report import json_params
    from rated.bench.dynamic.runner import prepare
    from rated.bench.dynamic.tuning import tune_all

    cfg = _config(args, validation=True)
    prep = prepare(env, cfg, list(dict.fromkeys(s.retriever for s in specs)))
    results = tune_all(prep, specs, jobs=args.jobs, on_progress=progress, fault_cost=args.fault_cost)
    return {
        "validation_seeds": list(cfg.seeds),
        "fault_cost": args.fault_cost,
        "methods": {
            label: {
                "params": json_params(r.params),
                "val_post_fail_sr": r.post_fail_sr,
                "val_fsr": r.fsr,
                "grid": [{**t, "params": json_params(t["params"])} for t in r.tried],
            }
            for label, r in results.items()
        },
    }


def _tuned_params(tuning: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Chosen settings per method from a tuning payload ("inf" strings back to floats)."""
    return {
        m: {k: _value(x) if isinstance(x, str) else x for k, x in v["params"].items()}
        for m, v in tuning.get("methods", {}).items()
    }


def _dump(path: Path, payload: Any) -> None:
    path.write_text(json.dumps(payload, indent=2, default=str) + "\n", encoding="utf-8")


def _write_json(path: Path, payload: Any) -> None:
    """Write ``payload`` whole or not at all (an interrupted write leaves no half file)."""
    with writing(path) as tmp:
        _dump(tmp, payload)


# ---- handlers ----------------------------------------------------------------------------------------
def _dynamic(args: argparse.Namespace) -> int:
    from rated.bench.dynamic.report import markdown_table, plot_curves, to_json
    from rated.bench.dynamic.runner import run_benchmark

    tuned: dict[str, dict[str, Any]] = {}
    tuning: dict[str, Any] | None = None
    _check_common(args)
    specs = _specs(args)
    labels = {s.label for s in specs}
    if args.fixed and not args.tune:
        raise ConfigError("--fixed only means something with --tune")
    if args.fault_cost and not args.tune:
        raise ConfigError("--fault-cost only means something with --tune (it is how settings are chosen)")
    _labels_in("--fixed", args.fixed, labels)
    oracles = {"oracle"} | {f"oracle@{s.retriever}" for s in specs}
    _labels_in("--plot-methods", args.plot_methods or [], labels | oracles)
    check_out_file(args.out)
    plot_path = check_out_file(args.plot or args.out.with_suffix(".png"), "--plot")
    if args.tuned is not None:
        tuning = _read_tuning(args.tuned)
        tuned = _tuned_params(tuning)
    with _Progress("preparing the benchmark") as progress:
        env = _env(args)
        if args.tune:
            fixed = set(args.fixed)
            tuning = _run_tuning(args, env, [s for s in _specs(args) if s.label not in fixed], progress)
            tuned = _tuned_params(tuning)
        result = run_benchmark(env, _config(args, args.validation), _specs(args, tuned), on_progress=progress)
    report = to_json(result, tuning)
    with writing(args.out) as tmp:  # the JSON appears last, once the plot is drawn
        _dump(tmp, report)
        plot = plot_curves(report, plot_path, args.plot_methods)
    _say(markdown_table(report))
    for note in report["notes"]:
        _say(f"note: {note}")
    _say(f"wrote {args.out} and {plot}")
    return 0


def _tune(args: argparse.Namespace) -> int:
    _check_common(args)
    _specs(args)
    check_out_file(args.out)
    with _Progress("preparing the benchmark") as progress:
        env = _env(args)
        tuning = _run_tuning(args, env, _specs(args), progress)
    payload = {
        "dataset": env.name,
        "scenario": args.scenario,
        "failure_rate": args.failure_rate,
        "stream": args.stream,
        "probes": args.probes,
        **tuning,
    }
    _write_json(args.out, payload)
    if args.fault_cost:
        _say(f"settings chosen by validation Post-Fail SR - {args.fault_cost:g} x FSR\n")
    _say("| method | chosen settings | validation Post-Fail SR | FSR | grid size |")
    _say("|---|---|---|---|---|")
    for label, r in tuning["methods"].items():
        _say(
            f"| {label} | {r['params']} | {100 * r['val_post_fail_sr']:.2f} | "
            f"{100 * r['val_fsr']:.2f} | {len(r['grid'])} |"
        )
    _say(f"wrote {args.out}")
    return 0


def _sweep(args: argparse.Namespace) -> int:
    from rated.bench.dynamic.runner import prepare
    from rated.bench.sweep import run_sweeps, sweep_plot

    _check_common(args)
    sets = _overrides(args.set)
    if set(sets) - {"rated"}:
        raise ConfigError(
            f"a sweep varies only rated; --set names {', '.join(sorted(set(sets) - {'rated'}))}"
        )
    base = sets.get("rated", {})
    _check_params("rated", "rated", base, "--set")
    check_out_dir(args.out)
    with _Progress("preparing the sweep") as progress:
        env = _env(args)
        prep = prepare(env, _config(args, validation=True), [args.retriever])
        results = run_sweeps(prep, args.retriever, args.grids, base, jobs=args.jobs, on_progress=progress)
    args.out.mkdir(parents=True, exist_ok=True)
    payload = {
        "dataset": env.name,
        "scenario": args.scenario,
        "failure_rate": args.failure_rate,
        "validation_seeds": list(prep.cfg.seeds),
        "base_params": base,
        "sweeps": results,
    }
    _write_json(args.out / "sweep.json", payload)
    paths = sweep_plot(results, args.out, title=f"{env.name} {args.scenario} {args.failure_rate}")
    for name, r in results.items():
        _say(
            f"{name}: best {r['best']['params']} Post-Fail SR {100 * r['best']['post_fail_sr']:.2f} "
            f"FSR {100 * r['best']['fsr']:.2f}"
        )
    _say(f"wrote {args.out / 'sweep.json'} and {', '.join(map(str, paths))}")
    return 0


def _latency(args: argparse.Namespace) -> int:
    from rated.bench.dataset import load_dataset
    from rated.bench.latency import run_latency

    for flag, value, low in (("--queries", args.queries, 1), ("--warmup", args.warmup, 0), ("-k", args.k, 1)):
        if value < low:
            raise ConfigError(f"{flag} must be >= {low}, got {value}")
    check_out_file(args.out)
    dataset = load_dataset(args.dataset)
    encoder = _encoder(args.encoder)
    encoder = getattr(encoder, "encoder", encoder)  # time the encoder itself, not a cache
    with _Progress("timing") as progress:
        result = run_latency(
            dataset,
            encoder,
            queries=args.queries,
            warmup=args.warmup,
            k=args.k,
            on_progress=lambda i, n: progress(f"query {i}/{n}"),
        )
    _write_json(args.out, result)
    # added: over encode + search, through the public Candidates + rank; the retriever's own path
    # (Candidates._trusted + _ranked, what Retriever.retrieve runs) in the last column
    _say("| stage | mean ms | P95 ms | added mean ms | added P95 ms | added median ms, retriever path |")
    _say("|---|---|---|---|---|---|")
    for name, m in result["methods"].items():
        extra = f"{m['added_mean_ms']:.4f} | {m['added_p95_ms']:.4f}" if "added_mean_ms" in m else "- | -"
        live = f"{m['live_added_median_ms']:.4f}" if "live_added_median_ms" in m else "-"
        _say(f"| {name} | {m['mean_ms']:.4f} | {m['p95_ms']:.4f} | {extra} | {live} |")
    _say(f"wrote {args.out}")
    return 0
