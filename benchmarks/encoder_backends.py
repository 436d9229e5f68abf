"""Encoder backends against each other in one run: batch-1 queries, catalog encoding, agreement.

Every backend available here (ONNX Runtime float, its int8 graph, OpenVINO when the ``openvino`` extra is
installed) encodes the same texts in interleaved blocks, so that a busy moment on a shared machine hits
them all alike; ratios are against ONNX Runtime float measured in the same run. Queries are real MetaTool
(short) and StableToolBench (long) requests, tool texts the StableToolBench API pool as an index encodes
them; agreement is the worst cosine to the stored sentence-transformers fixture.

    .venv/bin/python benchmarks/encoder_backends.py [--rounds 8] [--tools 1000] [--json]
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import numpy as np
from encode_throughput import fixture_min_cosine, metatool_queries, stabletoolbench_tools
from rich.console import Console
from rich.table import Table

from rated.catalog.text import tool_text
from rated.encode.onnx import OnnxEncoder
from rated.encode.prepare import prepare_minilm
from rated.paths import data_dir

console = Console(stderr=True)


def encoders() -> dict[str, OnnxEncoder]:
    model = prepare_minilm()
    found = {
        "onnxruntime f32": OnnxEncoder.load(model, backend="onnxruntime"),
        "onnxruntime int8": OnnxEncoder.load(model, quantized=True),
    }
    try:
        ov = OnnxEncoder.load(model, backend="openvino")
        found[f"openvino {ov.precision}"] = ov
    except Exception as exc:  # the extra is optional: say why it is missing, measure the rest
        console.print(f"openvino not measured: {exc}")
    return found


def timed(fn, *args) -> float:  # noqa: ANN001
    start = time.perf_counter()
    fn(*args)
    return time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=8, help="interleaved blocks per measure")
    ap.add_argument("--queries", type=int, default=40, help="queries per block")
    ap.add_argument("--tools", type=int, default=1000, help="tool texts encoded per catalog block")
    ap.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    args = ap.parse_args(argv)
    root = data_dir()
    if root is None or not (root / "stabletoolbench").is_dir():
        console.print("benchmark data not found: set RATED_DATA_DIR to the shared data folder")
        return 2
    tools, long_queries = stabletoolbench_tools(root / "stabletoolbench")
    texts = [tool_text(t) for t in tools][: args.tools]
    n = args.rounds * args.queries
    sets = {"short": metatool_queries(root / "metatool", n), "long": long_queries[:n]}
    encs = encoders()
    for enc in encs.values():  # warm-up: first calls, and every input shape a backend compiles
        for q in sets["short"] + sets["long"]:
            enc.encode_queries([q])
        enc.encode_tools(texts[:200])
    ms: dict[str, dict[str, list[float]]] = {name: {"short": [], "long": []} for name in encs}
    rate: dict[str, list[float]] = {name: [] for name in encs}
    for r in range(args.rounds):
        for which, queries in sets.items():
            block = queries[r * args.queries : (r + 1) * args.queries]
            for name, enc in encs.items():
                time.sleep(0.02)  # let the previous backend's threads go idle
                ms[name][which] += [1000 * timed(enc.encode_queries, [q]) for q in block]
        for name, enc in encs.items():
            rate[name].append(len(texts) / timed(enc.encode_tools, texts))
        console.print(f"round {r + 1}/{args.rounds}")
    base = "onnxruntime f32"
    result = {}
    for name, enc in encs.items():
        result[name] = {
            "short_query_ms": float(np.median(ms[name]["short"])),
            "long_query_ms": float(np.median(ms[name]["long"])),
            "catalog_texts_per_s": float(np.median(rate[name])),
            "reference_min_cosine": fixture_min_cosine(enc),
        }
    for name in result:
        result[name]["speedup_short"] = result[base]["short_query_ms"] / result[name]["short_query_ms"]
        result[name]["speedup_long"] = result[base]["long_query_ms"] / result[name]["long_query_ms"]
        result[name]["speedup_catalog"] = (
            result[name]["catalog_texts_per_s"] / result[base]["catalog_texts_per_s"]
        )
    if args.json:
        print(json.dumps(result))
        return 0
    table = Table(title=f"encoder backends, one interleaved run ({args.rounds} rounds); ratios vs {base}")
    for col in ("backend", "short query ms", "long query ms", "catalog texts/s", "fixture cosine (min)"):
        table.add_column(col, justify="left" if col == "backend" else "right")
    for name, m in result.items():
        table.add_row(
            name,
            f"{m['short_query_ms']:.2f} ({m['speedup_short']:.2f}x)",
            f"{m['long_query_ms']:.2f} ({m['speedup_long']:.2f}x)",
            f"{m['catalog_texts_per_s']:.0f} ({m['speedup_catalog']:.2f}x)",
            f"{m['reference_min_cosine']:.5f}",
        )
    Console().print(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
