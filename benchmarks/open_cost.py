"""What a process pays to start serving a large index: ``Retriever.open``, the first search, and the first
full listing (``tools``), each in a fresh process, optionally against another checkout of rated.

Every ``rated serve`` worker, replica and restart pays for ``open`` and the first search. The catalog is
scale.py's (StableToolBench APIs replicated to the size, the ``hash`` encoder, the exact flat index)
indexed once per size with this checkout; each run is a fresh process that opens it, searches once (the
lexical part restored from the writer's snapshot: the run checks that no tool text was built), lists every
tool, and reports times, resident memory added (after the first search, after the listing) and a digest of
its answers (hits with scores for a few queries, the full listing) and the median of 200 retrievals afterwards
(query embeddings cached). With ``--compare SRC`` (the ``src``
folder of another checkout, e.g. a ``git worktree`` of an older commit) each repeat runs this checkout
and that one in turn, answers must be identical, and the ratios of the medians are printed.

Run: ``.venv/bin/python benchmarks/open_cost.py --sizes 10000 50000 --repeats 3 [--compare DIR/src]
[--tracemalloc]`` (``--tracemalloc``: one more run each, the memory Python itself holds, untimed)
"""

from __future__ import annotations

import argparse
import gc
import hashlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
SRC = HERE.parent / "src"
QUERIES = ["get the weather forecast for a city", "send an email", "find flights to Paris", "stock price"]
MEASURES = (
    "open",
    "first search",
    "open + first search",
    "first tools()",
    "retrieve",
    "rss search",
    "rss tools",
)


def rss_mib() -> float:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def build(source: str, size: int, db: Path) -> float:
    """Index ``size`` tools into ``db`` with this checkout (scale.py's catalog)."""
    sys.path.insert(0, str(HERE))
    from scale import scaled_pool

    from rated.encode.testing import HashEncoder
    from rated.index.semantic import SemanticConfig
    from rated.retriever import Retriever

    tools, _ = scaled_pool(source, size, 0)
    start = time.perf_counter()
    flat = SemanticConfig(dense_kind="flat")
    Retriever.from_catalog(tools, db=db, encoder=HashEncoder(384), semantic=flat).close()
    return time.perf_counter() - start


def one(db: str, traced: bool) -> dict:
    """One fresh process's figures (run with the checkout under test first on the path); ``traced``:
    Python's own count of the memory held (tracemalloc, which slows everything: its times mean nothing)."""
    import tracemalloc

    import rated
    from rated.encode.testing import HashEncoder
    from rated.index import semantic, snapshot
    from rated.retriever import Retriever

    texts = [0]

    def counted(real):
        def text(tool, config):
            texts[0] += tool.id != "probe"  # the snapshot fingerprint's own probe tool is not the catalog's
            return real(tool, config)

        return text

    for module in (semantic, snapshot):
        module.lexical_text = counted(module.lexical_text)
    encoder = HashEncoder(384)
    encoder.encode_queries(QUERIES)  # import and warm the encoder outside the timings
    gc.collect()
    if traced:
        tracemalloc.start()
    base = rss_mib()
    t0 = time.perf_counter()
    r = Retriever.open(db, encoder=encoder)
    t1 = time.perf_counter()
    first = r.retrieve(QUERIES[0], k=5)
    t2 = time.perf_counter()
    rss_search = rss_mib() - base
    live_search = tracemalloc.get_traced_memory()[0] / 2**20
    listing = r.tools(stats=False)
    t3 = time.perf_counter()
    rss_tools = rss_mib() - base
    live_tools, peak = (m / 2**20 for m in tracemalloc.get_traced_memory())
    hits = [[(h.id, h.score, h.semantic, h.prior) for h in r.retrieve(q, k=5)] for q in QUERIES]
    wall = []
    for i in range(200):  # the query embeddings are cached by now: search, ranking and hits are timed
        start = time.perf_counter()
        r.retrieve(QUERIES[i % len(QUERIES)], k=5)
        wall.append(time.perf_counter() - start)
    answers = hashlib.sha256()
    answers.update(json.dumps([[(h.id, h.score) for h in first], hits]).encode())
    for t in listing:
        answers.update(t.tool.model_dump_json().encode())
        answers.update(json.dumps(t.to_dict(), sort_keys=True).encode())
    r.close()
    return {
        "code": rated.__file__,
        "open": t1 - t0,
        "first search": t2 - t1,
        "open + first search": t2 - t0,
        "first tools()": t3 - t2,
        "retrieve": statistics.median(wall),
        "rss search": rss_search,
        "rss tools": rss_tools,
        "live search": live_search,
        "live tools": live_tools,
        "peak": peak,
        "texts built": texts[0],
        "answers": answers.hexdigest(),
    }


def run(db: Path, src: Path, traced: bool = False) -> dict:
    env = {**os.environ, "PYTHONPATH": str(src)}
    cmd = [sys.executable, __file__, "--one", str(db)] + (["--tracemalloc"] if traced else [])
    done = subprocess.run(cmd, stdout=subprocess.PIPE, text=True, env=env, check=False)
    if done.returncode:
        raise SystemExit(f"a run with {src} failed (exit {done.returncode})")
    out = json.loads(done.stdout)
    if not out["code"].startswith(str(src)):
        raise SystemExit(f"the run imported {out['code']}, not rated from {src}")
    if out["texts built"]:
        raise SystemExit(f"{src}: {out['texts built']} tool texts built: the lexical snapshot was not used")
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--source", choices=["stabletoolbench", "synthetic"], default="stabletoolbench")
    ap.add_argument("--sizes", type=int, nargs="+", default=[10_000, 50_000])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--compare", type=Path, help="the src folder of another checkout, run in turn")
    ap.add_argument("--tracemalloc", action="store_true", help="also one traced run each: live memory")
    ap.add_argument("--one", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.one:
        print(json.dumps(one(args.one, args.tracemalloc)))
        return 0
    variants = {"this": SRC} | ({"compare": args.compare.resolve()} if args.compare else {})
    tmp = Path(tempfile.mkdtemp(prefix="rated-open-"))
    try:
        for size in args.sizes:
            db = tmp / f"{size}.db"
            print(f"[{size:,} tools] indexed in {build(args.source, size, db):.1f} s", file=sys.stderr)
            runs: dict[str, list[dict]] = {name: [] for name in variants}
            for i in range(args.repeats):
                for name, src in variants.items():  # in turn: a load change hits both alike
                    runs[name].append(run(db, src))
                print(f"[{size:,} tools] repeat {i + 1}/{args.repeats} done", file=sys.stderr)
            answers = {r["answers"] for rs in runs.values() for r in rs}
            print(
                f"\n{size:,} tools ({os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}); answers "
                f"{'identical in every run' if len(answers) == 1 else 'DIFFER'}"
            )
            for measure in MEASURES:
                unit = "MiB" if measure.startswith("rss") else "s"
                scale = 1e3 if measure == "retrieve" else 1.0
                unit = "ms" if measure == "retrieve" else unit
                cells = []
                for name, rs in runs.items():
                    values = [scale * r[measure] for r in rs]
                    cells.append(
                        f"{name} {statistics.median(values):.3f} {unit} ({min(values):.3f}-{max(values):.3f})"
                    )
                if args.compare and not measure.startswith("rss"):
                    ratio = statistics.median(r[measure] for r in runs["compare"]) / statistics.median(
                        r[measure] for r in runs["this"]
                    )
                    cells.append(f"compare/this {ratio:.2f}x")
                print(f"  {measure:20s} " + "; ".join(cells))
            if args.tracemalloc:
                for name, src in variants.items():
                    m = run(db, src, traced=True)
                    print(
                        f"  {'traced (MiB)':20s} {name}: live after the first search {m['live search']:.1f}, "
                        f"after tools() {m['live tools']:.1f}, peak {m['peak']:.1f}"
                    )
            if len(answers) != 1:
                raise SystemExit("answers differ between runs")
            for path in tmp.glob(f"{size}.db*"):
                path.unlink()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
