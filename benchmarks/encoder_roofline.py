"""Issue 2's encoder targets against the arithmetic this machine's CPUs can do at all.

A BERT encoder needs, per text of T tokens, at least L * (T * (4 h^2 + 2 h i) + 2 T^2 h) multiply-adds
(the four attention projections, the two feed-forward products, and the two attention products; layer
norms, GELU, softmax and the embedding lookup are left out, so this is a lower bound on the work). For
all-MiniLM-L6-v2 (L 6, h 384, i 1536) that is about 10.6 million per token. The script counts the tokens
of the texts the speed benchmarks use, turns each target into the multiply-add rate it needs, and
measures the best rate ONNX Runtime's float32 MatMul reaches here, on the encoder's threads, for the
shape the encoder multiplies most (the feed-forward product at the target's token count) and for a
large square product (the machine's ceiling). "needed / best" above 1: the target asks for more float32
arithmetic per second than these CPUs deliver, however the encoder is written.

    .venv/bin/python benchmarks/encoder_roofline.py [--tools 1000] [--threads N] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from dataclasses import dataclass

import numpy as np
import onnxruntime as ort
from encode_throughput import latency_ms, metatool_queries, stabletoolbench_tools
from onnx import TensorProto, helper
from rich.console import Console
from rich.table import Table

from rated.catalog.text import tool_text
from rated.encode.onnx import OnnxEncoder, default_threads
from rated.encode.onnx_build import BertConfig
from rated.encode.prepare import prepare_minilm
from rated.paths import data_dir

CATALOG_TARGET_TEXTS_PER_S = 500.0  # issue 2: encoding the catalog, 2 cores
RETRIEVE_TARGET_MS = 3.0  # issue 2: batch-1 retrieve end to end (encoding alone gets all of it here)


def macs_per_text(cfg: BertConfig, tokens: float) -> float:
    """Lower bound on the multiply-adds of one encoder pass over ``tokens`` tokens."""
    h, i = cfg.hidden_size, cfg.intermediate_size
    return cfg.num_hidden_layers * (tokens * (4 * h * h + 2 * h * i) + 2 * tokens * tokens * h)


def matmul_session(threads: int) -> ort.InferenceSession:
    """A one-node float32 MatMul graph with free shapes, on ONNX Runtime's CPU provider."""
    a = helper.make_tensor_value_info("a", TensorProto.FLOAT, ["m", "k"])
    b = helper.make_tensor_value_info("b", TensorProto.FLOAT, ["k", "n"])
    c = helper.make_tensor_value_info("c", TensorProto.FLOAT, ["m", "n"])
    graph = helper.make_graph([helper.make_node("MatMul", ["a", "b"], ["c"])], "matmul", [a, b], [c])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    return ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])


def best_gmacs(session: ort.InferenceSession, m: int, k: int, n: int, seconds: float = 1.5) -> float:
    """Highest multiply-add rate (10^9/s) over repeated ``(m, k) @ (k, n)`` products for ``seconds``."""
    rng = np.random.default_rng(0)
    feeds = {
        "a": rng.standard_normal((m, k), dtype=np.float32),
        "b": rng.standard_normal((k, n), dtype=np.float32),
    }
    session.run(None, feeds)  # warm-up
    best, deadline = float("inf"), time.perf_counter() + seconds
    while time.perf_counter() < deadline:
        t0 = time.perf_counter()
        session.run(None, feeds)
        best = min(best, time.perf_counter() - t0)
    return m * k * n / best / 1e9


@dataclass
class Line:
    target: str
    tokens: float
    needed_gmacs: float
    shape: tuple[int, int, int]
    shape_gmacs: float
    encoder_gmacs: float


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--tools", type=int, default=1000, help="StableToolBench tool texts to encode (default 1000)"
    )
    parser.add_argument("--queries", type=int, default=100, help="queries per batch-1 set (default 100)")
    parser.add_argument("--threads", type=int, default=None, help="threads (default: the encoder's default)")
    parser.add_argument(
        "--seconds", type=float, default=1.5, help="time spent on each MatMul shape (default 1.5)"
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    args = parser.parse_args(argv)

    root = data_dir()
    if root is None or not (root / "stabletoolbench").is_dir():
        print("benchmark data not found: set RATED_DATA_DIR to the shared data folder", file=sys.stderr)
        return 2
    threads = args.threads or default_threads()
    tools, stb_queries = stabletoolbench_tools(root / "stabletoolbench")
    texts = [tool_text(t) for t in tools][: args.tools]
    sets = {"short": metatool_queries(root / "metatool", args.queries), "long": stb_queries[: args.queries]}
    model_dir = prepare_minilm(progress=not args.json)
    cfg = BertConfig.from_json(model_dir / "config.json")
    encoder = OnnxEncoder.load(model_dir, threads=threads)
    tokenize = encoder._tokenizer.encode_batch  # token counts only

    tool_tokens = float(np.mean([len(e.ids) for e in tokenize(texts)]))
    encoder.encode_tools(texts[:64])
    t0 = time.perf_counter()
    encoder.encode_tools(texts)
    texts_per_s = len(texts) / (time.perf_counter() - t0)

    session = matmul_session(threads)
    h, i = cfg.hidden_size, cfg.intermediate_size
    catalog_rows = 64 * round(tool_tokens)  # a full batch of 64 texts, as encode_tools sends them
    lines = [
        Line(
            f"catalog >= {CATALOG_TARGET_TEXTS_PER_S:.0f} texts/s",
            tool_tokens,
            CATALOG_TARGET_TEXTS_PER_S * macs_per_text(cfg, tool_tokens) / 1e9,
            (catalog_rows, h, i),
            best_gmacs(session, catalog_rows, h, i, args.seconds),
            texts_per_s * macs_per_text(cfg, tool_tokens) / 1e9,
        )
    ]
    for label, name in (("short", "MetaTool"), ("long", "StableToolBench")):
        tokens = float(np.median([len(e.ids) for e in tokenize(sets[label])]))
        work = macs_per_text(cfg, tokens)
        lines.append(
            Line(
                f"retrieve <= {RETRIEVE_TARGET_MS:g} ms, {label} queries ({name})",
                tokens,
                work / (RETRIEVE_TARGET_MS / 1e3) / 1e9,
                (round(tokens), h, i),
                best_gmacs(session, round(tokens), h, i, args.seconds),
                work / (latency_ms(encoder, sets[label], 1)["median_ms"] / 1e3) / 1e9,
            )
        )
    ceiling = best_gmacs(session, 2048, 2048, 2048, 2 * args.seconds)
    best = max(ceiling, *(line.shape_gmacs for line in lines))  # the most generous bar
    result = {
        "threads": threads,
        "cpu_count": os.cpu_count(),
        "load_average_1min": round(os.getloadavg()[0], 2),
        "macs_per_token_millions": round(macs_per_text(cfg, 1) / 1e6, 2),
        "square_matmul_2048_gmacs": round(ceiling, 1),
        "best_matmul_gmacs": round(best, 1),
        "targets": [
            {
                "target": line.target,
                "tokens": round(line.tokens, 1),
                "needed_gmacs": round(line.needed_gmacs, 1),
                "needed_over_best": round(line.needed_gmacs / best, 2),
                "matmul_shape": list(line.shape),
                "shape_matmul_gmacs": round(line.shape_gmacs, 1),
                "encoder_gmacs": round(line.encoder_gmacs, 1),
            }
            for line in lines
        ],
    }
    if args.json:
        print(json.dumps(result))
        return 0
    console = Console()
    table = Table(title=f"float32 multiply-adds per second, 10^9 ({threads} threads)")
    for col in ("target", "tokens", "needed", "needed / best", "encoder now"):
        table.add_column(col, justify="left" if col == "target" else "right")
    for line in lines:
        needed = f"{line.needed_gmacs:.0f}"
        ratio = f"{line.needed_gmacs / best:.2f}"
        table.add_row(line.target, f"{line.tokens:.0f}", needed, ratio, f"{line.encoder_gmacs:.0f}")
    console.print(table)
    shapes = ", ".join(f"{'x'.join(map(str, line.shape))}: {line.shape_gmacs:.0f}" for line in lines)
    console.print(
        f"best float32 MatMul rate here: {best:.0f} (2048x2048x2048: {ceiling:.0f}; {shapes}); "
        f"machine load average {result['load_average_1min']}; MiniLM needs >= "
        f"{result['macs_per_token_millions']} million multiply-adds per token"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
