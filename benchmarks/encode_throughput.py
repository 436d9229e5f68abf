"""Encoder speed on this machine: catalog encoding throughput and batch-1 query latency.

Tool texts are the real StableToolBench API pool (name, description, parameters) rendered with
``rated.catalog.text.tool_text``, exactly what an index encodes; queries are real MetaTool (short) and
StableToolBench (long, multi-request) user queries.

    .venv/bin/python benchmarks/encode_throughput.py [--tools 2000] [--threads N] [--quantized]
        [--backend auto|onnxruntime|openvino] [--json]

It also prints the worst cosine against the sentence-transformers reference embeddings stored in
``tests/fixtures/minilm_reference.npz`` (batched and one text at a time), the agreement bar of issue 2.
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
from rated.catalog.text import TextConfig, tool_text
from rated.encode.onnx import OnnxEncoder, default_threads
from rated.encode.prepare import prepare_minilm
from rated.encode.runtime import BACKENDS
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


FIXTURE = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "minilm_reference.npz"


def fixture_min_cosine(encoder: OnnxEncoder) -> float:
    """Worst cosine to the stored sentence-transformers embeddings, batched and one text at a time."""
    with np.load(FIXTURE, allow_pickle=False) as data:
        texts, expected = [str(t) for t in data["texts"]], data["embeddings"]
    batched = encoder.encode_tools(texts)
    singles = np.vstack([encoder.encode_queries([t]) for t in texts])
    return float(min((batched * expected).sum(1).min(), (singles * expected).sum(1).min()))


def latency_ms(encoder: OnnxEncoder, queries: list[str], repeats: int) -> dict[str, float]:
    """Wall-clock and CPU time per batch-1 encode (CPU time is what an idle machine would show)."""
    for q in queries[:20]:  # warm-up
        encoder.encode_queries([q])
    wall, cpu = [], []
    for _ in range(repeats):
        for q in queries:
            c0, t0 = time.process_time(), time.perf_counter()
            encoder.encode_queries([q])
            wall.append((time.perf_counter() - t0) * 1e3)
            cpu.append((time.process_time() - c0) * 1e3)
    return {
        "median_ms": round(statistics.median(wall), 3),
        "p95_ms": round(float(np.percentile(wall, 95)), 3),
        "cpu_median_ms": round(statistics.median(cpu), 3),
        "n": len(wall),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tools", type=int, default=2000, help="tool texts to encode (default 2000)")
    parser.add_argument("--queries", type=int, default=200, help="queries per latency set (default 200)")
    parser.add_argument("--threads", type=int, default=None, help="onnxruntime intra-op threads")
    parser.add_argument("--batch-size", type=int, default=64)
    text_help = "full: tool_text (name, description, parameters, provider, tags); short: name + description"
    parser.add_argument("--text", choices=["full", "short"], default="full", help=text_help)
    parser.add_argument("--quantized", action="store_true", help="use the int8 graph")
    parser.add_argument("--backend", choices=BACKENDS, default=None, help="graph runtime")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of text")
    args = parser.parse_args()

    root = data_dir()
    if root is None or not (root / "stabletoolbench").is_dir():
        print("benchmark data not found: set RATED_DATA_DIR to the shared data folder", file=sys.stderr)
        return 2
    tools, stb_queries = stabletoolbench_tools(root / "stabletoolbench")
    config = TextConfig() if args.text == "full" else TextConfig(parameters=False, provider=False, tags=False)
    texts = [tool_text(t, config) for t in tools][: args.tools]
    short_queries = metatool_queries(root / "metatool", args.queries)
    long_queries = stb_queries[: args.queries]

    threads = args.threads or default_threads()
    t0 = time.perf_counter()
    model_dir = prepare_minilm(progress=not args.json)
    encoder = OnnxEncoder.load(model_dir, threads=threads, quantized=args.quantized, backend=args.backend)
    load_s = time.perf_counter() - t0
    lengths = np.array([len(e.ids) for e in encoder._tokenizer.encode_batch(texts)])  # statistics only

    encoder.encode_tools(texts[:64], batch_size=args.batch_size)  # warm-up
    c0, t0 = time.process_time(), time.perf_counter()
    encoder.encode_tools(texts, batch_size=args.batch_size)
    elapsed, cpu = time.perf_counter() - t0, time.process_time() - c0
    result = {
        "encoder": encoder.name,
        "backend": encoder.backend,
        "threads": threads,
        "cpu_count": os.cpu_count(),
        "load_average_1min": round(os.getloadavg()[0], 2),
        "model_load_s": round(load_s, 3),
        "tool_text": args.text,
        "tool_texts": len(texts),
        "tool_tokens_median": int(np.median(lengths)),
        "tool_tokens_mean": round(float(lengths.mean()), 1),
        "tool_tokens_truncated_frac": round(float(np.mean(lengths >= encoder.max_length)), 3),
        "tool_texts_per_s": round(len(texts) / elapsed, 1),
        "tool_texts_per_cpu_s": round(len(texts) / cpu, 1),
        "query_short_metatool": latency_ms(encoder, short_queries, 3),
        "query_long_stabletoolbench": latency_ms(encoder, long_queries, 1),
        "reference_min_cosine": round(fixture_min_cosine(encoder), 6),
    }
    if args.json:
        print(json.dumps(result))
        return 0
    r = result
    s, lq = r["query_short_metatool"], r["query_long_stabletoolbench"]
    print(
        f"encoder {r['encoder']} on {r['backend']}: {threads} thread(s) of {r['cpu_count']} CPU(s), "
        f"model load {load_s:.2f} s"
    )
    print(f"machine load average {r['load_average_1min']} while measuring (other processes share the CPUs)")
    print(
        f"catalog: {len(texts)} StableToolBench tool texts ({args.text}; median {r['tool_tokens_median']} "
        f"tokens, mean {r['tool_tokens_mean']}, {r['tool_tokens_truncated_frac']:.0%} truncated at "
        f"{encoder.max_length}): {r['tool_texts_per_s']:.0f} texts/s wall (target >= 500: ratio "
        f"{r['tool_texts_per_s'] / 500:.2f}); {r['tool_texts_per_cpu_s']:.0f} texts per CPU-second"
    )
    print(f"stored sentence-transformers fixture: worst cosine {r['reference_min_cosine']:.5f}")
    for label, q in (("MetaTool (short)", s), ("StableToolBench (long)", lq)):
        print(
            f"batch-1 query encode, {label}: median {q['median_ms']:.2f} ms, p95 {q['p95_ms']:.2f} ms wall; "
            f"median {q['cpu_median_ms']:.2f} ms CPU"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
