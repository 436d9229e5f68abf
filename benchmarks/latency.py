"""Batch-1 latency of the live retriever on a 2,000-tool catalog, every stage measured in one run.

Stages (median and p95 over ``--calls`` timed calls after ``--warmup`` untimed ones, with the ratio of each
median to the encode-only median of the same run):

- ``encode``: the query through the encoder (the baseline);
- ``encode+search``: plus the semantic stage (dense + lexical, top-K = 10); ``search alone`` without
  the encoder (query embeddings computed beforehand);
- ``retrieve``: ``Retriever.retrieve(q, k=5)`` end to end, SQLite-backed (store poll, re-rank, hits);
  ``encode``/``retrieve (short queries)`` the same with real short MetaTool requests (the encoder's time
  grows with the query's length: StableToolBench queries are long, multi-part ones);
- ``retrieve (repeated query)``: the same with the retriever's query cache on and 20 queries asked over
  and over (agents repeat requests): the encoder is skipped;
- ``retrieve after search``: what ``retrieve`` adds to encode+search (clock, candidates, RATED scoring,
  fusion, sort, the k hits), on search results computed beforehand, with fresh policy state; ``retrieve
  after search, state``: the same once the retriever has had feedback (with its query) on the best
  candidate of every third query, as in a live system;
- ``rerank+fusion``: building ``Candidates`` for the K candidates (from fields looked up beforehand; the
  constructor checks them) and ``policy.rank`` (RATED's bandit score, health gate and fusion), alone; also
  for the other policies (paper Table 3 rows);
- ``feedback (memory)``: ``policy.learn`` of one outcome with its query context, in memory;
- ``feedback (sqlite)``: ``Retriever.feedback(tool, outcome)``, acknowledged only once committed to the
  SQLite file (WAL, ``durability="normal"``: survives a process crash), and the same with
  ``durability="full"`` (fsync per commit: survives power loss);
- ``catalog encoding``: tool texts per second (not a per-call latency).

Run: ``.venv/bin/python benchmarks/latency.py`` (``--source synthetic`` without the benchmark data;
``--out DIR`` writes latency.json and latency.png).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import random
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
from rich.console import Console
from rich.table import Table

from rated import Tool
from rated.catalog.text import tool_text
from rated.outcome import Outcome
from rated.policy import make_policy
from rated.policy.base import Candidates, Feedback
from rated.retriever import Retriever

TARGETS_MS = {  # issue 2, "How it must perform"
    "retrieve": 3.0,
    "retrieve (short queries)": 3.0,
    "retrieve after search": 0.05,
    "retrieve after search, state": 0.05,
    "rerank+fusion (rated)": 0.05,
    "feedback (memory)": 0.05,
    "feedback (sqlite, normal)": 1.0,
}
console = Console(stderr=True)


def timed(fn: Callable[[int], object], calls: int, warmup: int) -> tuple[np.ndarray, np.ndarray]:
    """Per-call wall and process-CPU time in ms of ``fn(i)``, after ``warmup`` untimed calls.

    CPU time (all threads of this process) shows the cost of a call even when other processes compete
    for the cores and stretch the wall time.
    """
    for i in range(warmup):
        fn(i)
    gc.collect()
    wall, cpu = np.empty(calls), np.empty(calls)
    for i in range(calls):
        c0, w0 = time.process_time_ns(), time.perf_counter_ns()
        fn(i)
        wall[i] = (time.perf_counter_ns() - w0) / 1e6
        cpu[i] = (time.process_time_ns() - c0) / 1e6
    return wall, cpu


def load_pool(source: str, n_tools: int, seed: int) -> tuple[list[Tool], list[str]]:
    """The first ``n_tools`` StableToolBench APIs and its real queries, or a synthetic pool."""
    if source == "stabletoolbench":
        from rated.bench.datasets import load

        ds = load("stabletoolbench").dataset
        if len(ds.tools) < n_tools:
            raise SystemExit(f"StableToolBench has {len(ds.tools)} tools, fewer than --tools {n_tools}")
        return ds.tools[:n_tools], [q.text for q in ds.queries]
    rng = random.Random(seed)
    words = [
        f"{a}{b}"
        for a in ("get", "list", "send", "find", "make", "scan", "sync", "read")
        for b in ("mail", "news", "stock", "map", "file", "user", "song", "order", "flight", "image", "note")
    ]
    tools = [
        Tool(
            id=f"tool{i:05d}",
            name=f"{rng.choice(words)}_{i}",
            description=" ".join(rng.choice(words) for _ in range(rng.randint(8, 30))),
            provider=f"provider{i % 300}",
        )
        for i in range(n_tools)
    ]
    queries = [" ".join(rng.choice(words) for _ in range(rng.randint(5, 25))) for _ in range(500)]
    return tools, queries


def short_queries(n: int, rng: random.Random) -> list[str]:
    """Real short user requests (MetaTool, about 25 tokens), beside StableToolBench's long multi-part ones
    (about 60 tokens): encoder time grows with the query's length."""
    from rated.bench.datasets import load

    try:
        texts = [q.text for q in load("metatool").dataset.queries]
    except Exception as exc:  # the data is optional: say so and time the long queries only
        console.print(f"no MetaTool queries ({exc}); timing long queries only")
        return []
    return [texts[rng.randrange(len(texts))] for _ in range(n)]


def summarise(
    name: str, ms: np.ndarray, cpu: np.ndarray, base: float | None
) -> dict[str, float | str | None]:
    median = float(np.median(ms))
    target = TARGETS_MS.get(name)
    return {
        "stage": name,
        "median_ms": median,
        "p95_ms": float(np.percentile(ms, 95)),
        "mean_ms": float(ms.mean()),
        "cpu_median_ms": float(np.median(cpu)),
        "ratio_to_encode": None if base is None else median / base,
        "target_ms": target,
        "meets_target": None if target is None else bool(median <= target),
    }


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tools", type=int, default=2000)
    ap.add_argument("--calls", type=int, default=500, help="timed calls per stage")
    ap.add_argument("--warmup", type=int, default=50)
    ap.add_argument("--source", choices=["stabletoolbench", "synthetic"], default="stabletoolbench")
    encoders = "default (MiniLM on $RATED_ENCODER_BACKEND or onnxruntime), onnxruntime, openvino, int8, hash"
    choices = ["default", "onnxruntime", "openvino", "int8", "hash"]
    ap.add_argument("--encoder", default="default", choices=choices, help=encoders)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, default=None, help="folder for latency.json and latency.png")
    args = ap.parse_args(argv)

    tools, queries = load_pool(args.source, args.tools, args.seed)
    if args.encoder == "hash":
        from rated.encode.testing import HashEncoder

        encoder = HashEncoder(384)
    elif args.encoder in ("int8", "onnxruntime", "openvino"):
        from rated.encode.onnx import OnnxEncoder
        from rated.encode.prepare import prepare_minilm

        int8 = args.encoder == "int8"
        backend = "onnxruntime" if int8 else args.encoder
        encoder = OnnxEncoder.load(prepare_minilm(), quantized=int8, backend=backend)
    else:
        from rated.encode import default_encoder

        encoder = default_encoder()
    rng = random.Random(args.seed)
    qs = [queries[rng.randrange(len(queries))] for _ in range(args.calls + args.warmup)]
    short_qs = short_queries(args.calls + args.warmup, rng) if args.source == "stabletoolbench" else []
    q = lambda i: qs[i % len(qs)]  # noqa: E731

    label = encoder.name + (f" on {encoder.backend}" if hasattr(encoder, "backend") else "")
    texts = [tool_text(t) for t in tools]
    start = time.perf_counter()
    encoder.encode_tools(texts)
    rate = len(texts) / (time.perf_counter() - start)
    console.print(f"catalog encoding: {rate:,.0f} tool texts/s ({len(texts)} texts, {label})")

    tmp = Path(tempfile.mkdtemp(prefix="rated-latency-"))
    # no query cache: every timed call pays the encoder, as a query never seen before does
    r = Retriever.from_catalog(tools, db=tmp / "bench.db", encoder=encoder, query_cache=0)
    r_full = Retriever.open(tmp / "bench.db", encoder=encoder, durability="full", query_cache=0)
    r_cached = Retriever.open(tmp / "bench.db", encoder=encoder)
    k_cand = r.meta.candidates
    prior = {t.tool.id: t.prior for t in r.tools()}
    pool = [t.tool for t in r.tools()]

    rows: list[dict] = []
    calls, warm = args.calls, args.warmup

    def stage(name: str, fn: Callable[[int], object], base: float | None) -> float:
        ms, cpu = timed(fn, calls, warm)
        rows.append(summarise(name, ms, cpu, base))
        console.print(f"  {name}: median {rows[-1]['median_ms']:.4f} ms")
        return float(np.median(ms))

    console.print(f"timing {calls} calls per stage on {len(tools)} tools ...")
    vecs = encoder.encode_queries(qs)
    base = stage("encode", lambda i: encoder.encode_queries([q(i)]), None)
    stage("encode+search", lambda i: r.index.search(q(i), encoder.encode_queries([q(i)])[0], k_cand), base)
    stage("search alone", lambda i: r.index.search(q(i), vecs[i], k_cand), base)
    stage("retrieve", lambda i: r.retrieve(q(i), k=5), base)
    stage("retrieve (repeated query)", lambda i: r_cached.retrieve(q(i % 20), k=5), base)
    if short_qs:
        stage("encode (short queries)", lambda i: encoder.encode_queries([short_qs[i % len(short_qs)]]), base)
        stage("retrieve (short queries)", lambda i: r.retrieve(short_qs[i % len(short_qs)], k=5), base)

    # the semantic top-K of every query, fixed, so that only the re-ranking is timed
    found = [r.index.search(q(i), vecs[i], k_cand) for i in range(len(qs))]
    # what retrieve adds on top of encode+search: clock, candidates, RATED, fusion, sort and the k hits
    # (state from the feedback stages below is not there yet: fresh policy state, the common case)
    stage("retrieve after search", lambda i: r._rank(*found[i], vecs[i], 5), base)

    # each query's candidate fields, looked up once: the stages below time building ``Candidates`` (with its
    # checks) and ``rank``, not this script's lookups by id (15-30 us a call when they were inside; the
    # retriever's own lookups are timed in "retrieve after search")
    fields = []
    for pos, sem in found:
        ids = tuple(pool[p].id for p in pos.tolist())
        providers = tuple(pool[p].provider_key for p in pos.tolist())
        fields.append((ids, sem, np.array([prior[t] for t in ids], np.float32), providers))

    def candidates(i: int, now: float) -> Candidates:
        ids, sem, prior_i, providers = fields[i]
        return Candidates(
            tool_ids=ids, semantic=sem, prior=prior_i, providers=providers, context=vecs[i], now=now
        )

    for name in ("static", "rated_no_feedback", "global_mab", "rated"):
        policy = make_policy(name, **(r.meta.policy_params if name == "rated" else {}))
        for i in range(0, len(qs), 3):  # some state, as in a live system: a third of the candidates
            pos, _ = found[i]
            policy.learn(
                Feedback(
                    pool[pos[0]].id,
                    Outcome.of(i % 2 == 0),
                    now=float(i),
                    context=vecs[i],
                    provider=pool[pos[0]].provider_key,
                )
            )
        now = float(len(qs))
        stage(f"rerank+fusion ({name})", lambda i, p=policy, n=now: p.rank(candidates(i, n)), base)

    live = make_policy("rated", **r.meta.policy_params)

    def learn(i: int) -> None:
        pos, _ = found[i]
        tool = pool[pos[i % len(pos)]]
        live.learn(
            Feedback(
                tool.id, Outcome.of(i % 3 != 0), now=1e6 + i, context=vecs[i], provider=tool.provider_key
            )
        )

    stage("feedback (memory)", learn, base)
    stage("feedback (sqlite, normal)", lambda i: r.feedback(pool[i % 50].id, i % 3 != 0), base)
    stage("feedback (sqlite, full)", lambda i: r_full.feedback(pool[i % 50].id, i % 3 != 0), base)
    stage(
        "feedback (sqlite, normal) + query",
        lambda i: r.feedback(pool[i % 50].id, i % 3 != 0, query=q(i)),
        base,
    )
    for i in range(0, len(qs), 3):  # state on the best candidate of every third query, as for the policies
        r.feedback(pool[found[i][0][0]].id, i % 2 == 0, query=q(i))
    stage("retrieve after search, state", lambda i: r._rank(*found[i], vecs[i], 5), base)
    r.close(), r_full.close(), r_cached.close()
    shutil.rmtree(tmp, ignore_errors=True)

    load = os.getloadavg()[0]
    table = Table(
        title=f"batch-1 latency, {len(tools)} tools ({args.source}), {label}, {calls} calls, "
        f"{os.cpu_count()} CPUs, load average {load:.1f} at the end"
    )
    for col in ("stage", "median ms", "p95 ms", "cpu ms", "x encode", "target ms", "ok"):
        table.add_column(col, justify="left" if col == "stage" else "right")
    for row in rows:
        ok = {None: "", True: "[green]yes[/]", False: "[red]no[/]"}[row["meets_target"]]
        ratio = "" if row["ratio_to_encode"] is None else f"{row['ratio_to_encode']:.3f}"
        target = "" if row["target_ms"] is None else f"{row['target_ms']:g}"
        cpu = f"{row['cpu_median_ms']:.4f}"
        table.add_row(row["stage"], f"{row['median_ms']:.4f}", f"{row['p95_ms']:.4f}", cpu, ratio, target, ok)
    Console().print(table)
    Console().print(f"catalog encoding: {rate:,.0f} tool texts/s (target >= 500)")
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        doc = {
            "cpus": os.cpu_count(),
            "load_average": load,
            "tools": len(tools),
            "source": args.source,
            "encoder": label,
            "calls": calls,
            "catalog_texts_per_s": rate,
            "stages": rows,
        }
        (args.out / "latency.json").write_text(json.dumps(doc, indent=2))
        plot(rows, args.out / "latency.png", f"{len(tools)} tools, {label}")
        console.print(f"wrote {args.out / 'latency.json'} and {args.out / 'latency.png'}")
    return 0


def plot(rows: list[dict], path: Path, subtitle: str) -> None:
    from rated.plotting import pyplot, save_png

    plt = pyplot()
    names = [r["stage"] for r in rows]
    med = [r["median_ms"] for r in rows]
    p95 = [r["p95_ms"] for r in rows]
    fig, ax = plt.subplots(figsize=(9, 0.45 * len(rows) + 1.5))
    y = np.arange(len(rows))
    ax.barh(y, med, color="tab:blue", label="median")
    ax.scatter(p95, y, color="tab:red", marker="|", s=200, label="p95")
    for i, r in enumerate(rows):
        if r["target_ms"] is not None:
            ax.plot([r["target_ms"]] * 2, [i - 0.4, i + 0.4], color="black", lw=2)
    ax.set_yticks(y, names)
    ax.invert_yaxis()
    ax.set_xscale("log")
    ax.set_xlabel("milliseconds per call (log scale; black bar = target)", labelpad=2)
    ax.set_title(f"rated batch-1 latency ({subtitle})")
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.09), ncol=2, frameon=False)
    save_png(fig, path)


if __name__ == "__main__":
    sys.exit(main())
