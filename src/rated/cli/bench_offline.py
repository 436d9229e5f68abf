"""``rated bench offline``: the offline retrieval benchmark (MRR, recall, hit, NDCG per method)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TYPE_CHECKING

from rated.cli.bench_group import get_bench_subparsers
from rated.cli.outpath import check_out_file, writing
from rated.cli.output import console

if TYPE_CHECKING:  # the encoder is imported when a command runs
    from rated.encode.base import Encoder

__all__ = ["register"]


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``bench offline`` to the shared ``bench`` group."""
    from rated.bench.offline import DEFAULT_METHODS, METHODS

    p = get_bench_subparsers(sub).add_parser(
        "offline", help="rank the full pool for every query of a split and report MRR, recall, NDCG"
    )
    p.add_argument(
        "--dataset",
        required=True,
        action="append",
        help="dataset folder (see `rated data prepare`); repeat it with --ablation to compare benchmarks",
    )
    p.add_argument(
        "--methods",
        default=",".join(DEFAULT_METHODS),
        help=f"comma-separated, from {', '.join(METHODS)} (default: %(default)s)",
    )
    p.add_argument(
        "--encoder", help="an ONNX model folder (e.g. a fine-tuned encoder): adds finetuned methods"
    )
    p.add_argument("--split", default="test", choices=("train", "val", "test"))
    p.add_argument("--out", required=True, help="result JSON (a PNG chart is written next to it)")
    p.add_argument("--no-cache", action="store_true", help="do not cache embeddings under RATED_HOME")
    p.add_argument(
        "--ablation",
        action="store_true",
        help="instead, compare semantic-stage variants (fusion, weights, text) on the split (use val)",
    )
    p.set_defaults(handler=_offline)


def _encoder(path: str | None, cache: bool) -> Encoder:
    from rated.bench.embcache import CachedEncoder

    if path is None:
        from rated.encode import default_encoder

        enc = default_encoder(progress=True)
    else:
        from rated.encode.onnx import OnnxEncoder

        enc = OnnxEncoder.load(Path(path))
    return CachedEncoder(enc) if cache else enc


def _offline(args: argparse.Namespace) -> int:
    from rated.bench.offline import METHODS, markdown_table, run_offline, write_result
    from rated.errors import ConfigError, RatedError

    methods = list(dict.fromkeys(m.strip() for m in args.methods.split(",") if m.strip()))
    if not methods:
        raise ConfigError(f"--methods names no method: {args.methods!r}")
    unknown = [m for m in methods if m not in METHODS]
    if unknown:  # before loading an encoder
        raise ConfigError(f"unknown method(s) {unknown}; expected some of {', '.join(METHODS)}")
    check_out_file(args.out)
    if args.encoder and not any(m.endswith("finetuned") for m in methods):
        methods += ["finetuned", "rated-finetuned"]
    if args.ablation:
        return _ablation(args)
    if len(args.dataset) != 1:
        raise ConfigError("give one --dataset (several only with --ablation)")
    needs_encoder = any(m not in ("tfidf", "bm25") for m in methods)
    encoder = _encoder(None, not args.no_cache) if needs_encoder else None
    finetuned = _encoder(args.encoder, not args.no_cache) if args.encoder else None
    if any(m.endswith("finetuned") for m in methods) and finetuned is None:
        raise ConfigError("the finetuned methods need --encoder PATH")
    with console.status(f"benchmarking {', '.join(methods)}"):
        result = run_offline(
            args.dataset[0], methods, split=args.split, encoder=encoder, finetuned=finetuned, progress=False
        )
    try:
        out, png = write_result(result, args.out)
    except OSError as exc:
        raise RatedError(f"cannot write {exc.filename or args.out}: {exc.strerror or exc}") from None
    console.print(markdown_table(result), markup=False, highlight=False, soft_wrap=True)
    if result.abstention:
        shown = ", ".join(f"{m} {v['auroc']:.3f}" for m, v in result.abstention.items())
        console.print(f"abstention AUROC (top-1 score, answerable vs not): {shown}", soft_wrap=True)
    console.print(f"wrote {out} and {png}")
    return 0


def _ablation(args: argparse.Namespace) -> int:
    from rated.bench.ablation import VARIANTS, ablation_table, select_default
    from rated.bench.dataset import load_dataset
    from rated.bench.offline import run_ablation

    encoder = _encoder(args.encoder, not args.no_cache)
    results = {}
    for folder in args.dataset:
        dataset = load_dataset(folder)
        with console.status(f"ablation over {len(VARIANTS)} variants on {dataset.name} ({args.split})"):
            results[dataset.name] = run_ablation(dataset, VARIANTS, encoder, split=args.split)
    chosen = select_default(results)
    out = Path(args.out)
    payload = {"split": args.split, "encoder": encoder.name, "selected": chosen, "results": results}
    with writing(out) as tmp:
        tmp.write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
    console.print("MRR per variant (gain over the best of dense, bm25, tfidf):", highlight=False)
    console.print(ablation_table(results), markup=False, highlight=False, soft_wrap=True)
    console.print(
        f"selected (largest worst-case gain): {chosen}", markup=False, highlight=False, soft_wrap=True
    )
    console.print(f"wrote {out}")
    return 0
