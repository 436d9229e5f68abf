"""Encoder speed on this machine: catalog encoding throughput and batch-1 query latency.

Tool texts are the real StableToolBench API pool (name, description, parameters) rendered with
``rated.catalog.text.tool_text``, exactly what an index encodes; queries are real MetaTool (short) and
StableToolBench (long, multi-request) user queries.

    .venv/bin/python benchmarks/encode_throughput.py [--tools 2000] [--threads N] [--quantized] [--json]
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

from rated.catalog.schema import Tool
from rated.catalog.text import tool_text
from rated.encode.onnx import OnnxEncoder, default_threads
from rated.encode.prepare import prepare_minilm
from rated.paths import data_dir


def stabletoolbench_tools(root: Path) -> tuple[list[Tool], list[str]]:
    """Every distinct (tool, api) pair of the six StableToolBench files as a Tool, plus the queries."""
    tools: dict[str, Tool] = {}
    queries: list[str] = []
    for path in sorted(root.glob("*.json")):
        for entry in json.loads(path.read_text(encoding="utf-8")):
            queries.append(entry["query"])
            for api in entry["api_list"]:
                key = f"{api['tool_name']}::{api['api_name']}"
                if key in tools:
                    continue
                params = {
                    p["name"]: {"description": p.get("description") or ""}
                    for p in [*api.get("required_parameters", []), *api.get("optional_parameters", [])]
                    if isinstance(p, dict) and p.get("name")
                }
                tools[key] = Tool(
                    id=key[:200],
                    name=api["api_name"],
                    description=api.get("api_description") or "",
                    parameters={"type": "object", "properties": params},
                    provider=api["tool_name"],
                    tags=(api.get("category_name") or "misc",),
                )
    return list(tools.values()), queries


def metatool_queries(root: Path, n: int) -> list[str]:
    with open(root / "all_clean_data.csv", newline="", encoding="utf-8") as fh:
        rows = [r["Query"] for r in csv.DictReader(fh)]
    step = max(1, len(rows) // n)
    return rows[::step][:n]


def latency_ms(encoder: OnnxEncoder, queries: list[str], repeats: int) -> dict[str, float]:
    for q in queries[:20]:  # warm-up
        encoder.encode_queries([q])
    times = []
    for _ in range(repeats):
        for q in queries:
            t0 = time.perf_counter()
            encoder.encode_queries([q])
            times.append((time.perf_counter() - t0) * 1e3)
    return {
        "median_ms": statistics.median(times),
        "p95_ms": float(np.percentile(times, 95)),
        "mean_ms": statistics.fmean(times),
        "n": len(times),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tools", type=int, default=2000, help="tool texts to encode (default 2000)")
    parser.add_argument("--queries", type=int, default=200, help="queries per latency set (default 200)")
    parser.add_argument("--threads", type=int, default=None, help="onnxruntime intra-op threads")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--quantized", action="store_true", help="use the int8 graph")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of text")
    args = parser.parse_args()

    root = data_dir()
    if root is None or not (root / "stabletoolbench").is_dir():
        print("benchmark data not found: set RATED_DATA_DIR to the shared data folder", file=sys.stderr)
        return 2
    tools, stb_queries = stabletoolbench_tools(root / "stabletoolbench")
    texts = [tool_text(t) for t in tools][: args.tools]
    short_queries = metatool_queries(root / "metatool", args.queries)
    long_queries = stb_queries[: args.queries]

    threads = args.threads or default_threads()
    t0 = time.perf_counter()
    encoder = OnnxEncoder.load(prepare_minilm(progress=not args.json), threads=threads, quantized=args.quantized)
    load_s = time.perf_counter() - t0
    tok = encoder._tokenizer  # token statistics only
    lengths = [len(e.ids) for e in tok.encode_batch(texts)]

    encoder.encode_tools(texts[:64], batch_size=args.batch_size)  # warm-up
    t0 = time.perf_counter()
    encoder.encode_tools(texts, batch_size=args.batch_size)
    elapsed = time.perf_counter() - t0
    result = {
        "encoder": encoder.name,
        "threads": threads,
        "cpu_count": os.cpu_count(),
        "load_s": round(load_s, 3),
        "tool_texts": len(texts),
        "tool_tokens_median": int(np.median(lengths)),
        "tool_tokens_mean": round(float(np.mean(lengths)), 1),
        "tool_tokens_truncated_frac": round(float(np.mean(np.array(lengths) >= encoder.max_length)), 3),
        "tool_texts_per_s": round(len(texts) / elapsed, 1),
        "query_short_metatool": {k: round(v, 3) for k, v in latency_ms(encoder, short_queries, 3).items()},
        "query_long_stabletoolbench": {k: round(v, 3) for k, v in latency_ms(encoder, long_queries, 1).items()},
    }
    if args.json:
        print(json.dumps(result))
        return 0
    s, lq = result["query_short_metatool"], result["query_long_stabletoolbench"]
    print(f"encoder {result['encoder']} on {threads} thread(s) of {os.cpu_count()} CPU(s), load {load_s:.2f} s")
    print(
        f"catalog: {len(texts)} StableToolBench tool texts (median {result['tool_tokens_median']} tokens, "
        f"{result['tool_tokens_truncated_frac']:.0%} truncated at {encoder.max_length}): "
        f"{result['tool_texts_per_s']:.0f} texts/s (target >= 500: ratio {result['tool_texts_per_s'] / 500:.2f})"
    )
    print(f"batch-1 query, MetaTool (short): median {s['median_ms']:.2f} ms, p95 {s['p95_ms']:.2f} ms")
    print(f"batch-1 query, StableToolBench (long): median {lq['median_ms']:.2f} ms, p95 {lq['p95_ms']:.2f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
