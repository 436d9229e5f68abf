"""What the opt-in int8 encoder costs in retrieval quality, against the float model, in one run.

For each dataset folder (``rated data prepare ...``), the test queries are ranked by the dense encoder
and by the default semantic stage + prior (``rated``), once with the float all-MiniLM-L6-v2 graph and
once with its int8 copy (``RATED_ENCODER_INT8=1``; embeddings cached on disk as in ``rated bench
offline``). The table gives MRR, the paired difference with a bootstrap 95% interval, the per-text
cosine between the two encoders' embeddings, and the batch-1 query-encoding time.

    .venv/bin/python benchmarks/int8_quality.py runs/demo/bfcl runs/data/metatool runs/data/stabletoolbench
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
from rich.console import Console
from rich.table import Table

from rated.bench.dataset import load_dataset
from rated.bench.embcache import CachedEncoder
from rated.bench.metrics import bootstrap_ci
from rated.bench.offline import run_offline
from rated.catalog.text import tool_text
from rated.encode.onnx import OnnxEncoder
from rated.encode.prepare import prepare_minilm

console = Console(stderr=True)


def median_encode_ms(encoder: OnnxEncoder, texts: list[str]) -> float:
    for t in texts[:10]:
        encoder.encode_queries([t])
    times = []
    for t in texts:
        start = time.perf_counter()
        encoder.encode_queries([t])
        times.append(time.perf_counter() - start)
    return 1000.0 * float(np.median(times))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("datasets", nargs="+", type=Path, help="dataset folders")
    ap.add_argument("--timed-queries", type=int, default=200)
    args = ap.parse_args(argv)
    model = prepare_minilm()
    fp32, int8 = OnnxEncoder.load(model), OnnxEncoder.load(model, quantized=True)
    table = Table(title="int8 vs float encoder, test split (MRR; paired difference, bootstrap 95% CI)")
    columns = ("dataset", "method", "float", "int8", "int8 - float", "cosine min / mean", "encode ms f / i8")
    for col in columns:
        table.add_column(col, justify="left" if col in ("dataset", "method") else "right")
    for folder in args.datasets:
        ds = load_dataset(folder)
        console.print(f"{ds.name}: {len(ds.tools)} tools")
        methods = ["dense", "rated", "finetuned", "rated-finetuned"]  # "finetuned" = the int8 encoder here
        res = run_offline(
            folder, methods, encoder=CachedEncoder(fp32), finetuned=CachedEncoder(int8), progress=True
        )
        texts = [tool_text(t) for t in ds.tools[:500]] + [q.text for q in ds.queries[:500]]
        cos = np.sum(fp32.encode(texts) * int8.encode(texts), axis=1)
        queries = [q.text for q in ds.queries[: args.timed_queries]]
        ms = f"{median_encode_ms(fp32, queries):.2f} / {median_encode_ms(int8, queries):.2f}"
        for label, base, quant in (("dense", "dense", "finetuned"), ("rated", "rated", "rated-finetuned")):
            diff = np.asarray(res.per_query_rr[quant]) - np.asarray(res.per_query_rr[base])
            lo, hi = bootstrap_ci(diff.tolist())
            table.add_row(
                ds.name,
                label,
                f"{res.methods[base]['mrr']:.3f}",
                f"{res.methods[quant]['mrr']:.3f}",
                f"{diff.mean():+.4f} [{lo:+.4f}, {hi:+.4f}]",
                f"{cos.min():.4f} / {cos.mean():.4f}",
                ms,
            )
    Console().print(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
