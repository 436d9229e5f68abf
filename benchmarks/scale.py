"""How the live retriever scales with the catalog: build, reopen, search, catalog edits, memory, disk.

Each catalog size runs in its own process (clean memory figures): real StableToolBench APIs replicated
to the size (copy ``c`` of a tool gets the id ``ID#c``, its own provider and two rare words, so the
vocabulary grows with the catalog as a real one does), indexed into SQLite with the ``hash`` encoder
(rated.encode.testing: 384 dimensions, fast, so the encoder's cost does not hide the rest; MiniLM's
catalog encoding is measured by ``latency.py``). Stages, per size:

- ``index (from_catalog)``: encode, prior, SQLite write, the in-memory index and its lexical snapshot
  (``rated.index.snapshot``); ``open``: ``Retriever.open``; ``first search``: the first retrieval after
  ``open``, which builds the in-memory index from the stored embeddings and restores the lexical part
  from the snapshot; ``first search, no snapshot``: the same in a process that finds no snapshot (it
  validates every stored record, builds every text and tokenizes it, as all did before snapshots);
- ``retrieve``: ``Retriever.retrieve(q, k=5)`` on real queries, their embeddings cached, so that search
  (dense + TF-IDF over the whole pool), re-ranking and hits are timed without the encoder; the dense
  part is the exact flat index at every size (``auto`` picks HNSW above ``hnsw_threshold``);
- ``add 1 tool`` / ``remove 1 tool``: ``add_tools`` / ``remove_tools`` of one tool (index, store);
- ``feedback``: ``Retriever.feedback`` persisted (SQLite WAL);
- ``replica catch-up``: the first retrieval of a second retriever on the same database after the
  first one added a tool (it re-reads the catalog and follows the change);
- ``rss``: resident memory that ``open`` and the first search add (the catalog is built in a forked
  child, so its objects do not count), ``db``: the database's size on disk;
- ``hnsw build``, ``hnsw search`` and ``hnsw recall@10`` (sizes >= ``--hnsw-from``): the semantic
  index with its dense part as an HNSW graph (``SemanticConfig(dense_kind="hnsw")``, what ``auto``
  picks above ``hnsw_threshold`` tools): build time (as ``first search`` for the flat one), search time,
  and the share of its top-10 that the exact flat index of the same run also returns.

Every figure is printed with its ratio to the smallest size of the same run, beside the ratio of the
sizes (a stage whose ratio grows like the size is linear in the catalog).

Run: ``.venv/bin/python benchmarks/scale.py [--sizes 2000 10000 50000] [--out DIR]`` (``--source
synthetic`` without the benchmark data; ``--out`` writes scale.json and scale.png).
"""

from __future__ import annotations

import argparse
import gc
import json
import multiprocessing as mp
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import numpy as np
from latency import load_pool, timed
from rich.console import Console
from rich.table import Table

from rated import Tool
from rated.encode.testing import HashEncoder
from rated.index import snapshot
from rated.index.semantic import SemanticConfig, SemanticIndex
from rated.retriever import Retriever
from rated.store.sqlite import SQLiteStore

console = Console(stderr=True)
#: stage -> (unit, one-line meaning); the order of the table
STAGES = {
    "index (from_catalog)": ("s", "encode (hash), prior, SQLite write, index and its lexical snapshot"),
    "open": ("s", "Retriever.open"),
    "first search": ("s", "builds the in-memory index, the lexical part restored from its snapshot"),
    "first search, no snapshot": ("s", "the same, validating every record, reading its text"),
    "retrieve": ("ms", "median, query embedding cached"),
    "retrieve p95": ("ms", "95th percentile"),
    "add 1 tool": ("ms", "median of 3"),
    "remove 1 tool": ("ms", "median of 3"),
    "feedback": ("ms", "median, persisted"),
    "replica catch-up": ("ms", "first retrieve of another retriever after an add"),
    "rss": ("MiB", "memory taken by open and the first search"),
    "db": ("MiB", "SQLite file and WAL"),
    "snapshot": ("MiB", "the saved lexical index, part of db"),
    "hnsw build": ("s", "the semantic index with an HNSW dense part"),
    "hnsw search": ("ms", "S_sem with an HNSW dense part"),
    "hnsw recall@10": ("", "top-10 shared with the flat index"),
}


def scaled_pool(source: str, size: int, seed: int) -> tuple[list[Tool], list[str]]:
    """``size`` tools: the source's tools replicated with distinct ids, providers and rare words."""
    base, queries = load_pool(source, 2000, seed)
    rng = random.Random(seed)
    tools = []
    for i in range(size):
        tool, copy = base[i % len(base)], i // len(base)
        if copy:
            rare = f"zq{rng.randrange(10 * size):x} zq{rng.randrange(10 * size):x}"
            tool = tool.model_copy(
                update={
                    "id": f"{tool.id}#{copy}",
                    "provider": f"{tool.provider_key}#{copy}",
                    "description": f"{tool.description} {rare}",
                }
            )
        tools.append(tool)
    return tools, queries


@contextmanager
def no_snapshot() -> Iterator[None]:
    """Retrievers opened inside neither read nor save a lexical snapshot."""
    saved = SQLiteStore.load_cached, SQLiteStore.save_cached
    SQLiteStore.load_cached = lambda self, name: None  # type: ignore[method-assign]
    SQLiteStore.save_cached = lambda self, name, data, **kwargs: None  # type: ignore[method-assign]
    try:
        yield
    finally:
        SQLiteStore.load_cached, SQLiteStore.save_cached = saved  # type: ignore[method-assign]


def rss_mib() -> float:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def _index(source: str, size: int, seed: int, db: Path, report: Path) -> None:
    """Build the index (in a forked child, so that the catalog's objects never count in the parent)."""
    tools, _ = scaled_pool(source, size, seed)
    start = time.perf_counter()
    flat = SemanticConfig(dense_kind="flat")  # the exact index at every size; the HNSW rows time the graph
    Retriever.from_catalog(tools, db=db, encoder=HashEncoder(384), semantic=flat).close()
    report.write_text(json.dumps(time.perf_counter() - start))


def measure(source: str, size: int, calls: int, hnsw: bool, seed: int) -> dict[str, float]:
    """Every stage for one catalog size (run in a fresh process)."""
    _, queries = load_pool(source, 2000, seed)
    encoder = HashEncoder(384)
    out: dict[str, float] = {}
    tmp = Path(tempfile.mkdtemp(prefix="rated-scale-"))
    db = tmp / "scale.db"
    console.print(f"[{size:,} tools] indexing ...")
    child = mp.get_context("fork").Process(target=_index, args=(source, size, seed, db, tmp / "t.json"))
    child.start()
    child.join()
    if child.exitcode:
        raise SystemExit(f"indexing {size:,} tools failed (exit {child.exitcode})")
    out["index (from_catalog)"] = json.loads((tmp / "t.json").read_text())
    gc.collect()
    rss_before = rss_mib()
    start = time.perf_counter()
    r = Retriever.open(db, encoder=encoder)
    out["open"] = time.perf_counter() - start
    qs = [queries[i % len(queries)] for i in range(50)]
    start = time.perf_counter()
    r.retrieve(qs[0], k=5)
    out["first search"] = time.perf_counter() - start
    out["rss"] = rss_mib() - rss_before
    with no_snapshot():
        other = Retriever.open(db, encoder=encoder)
        start = time.perf_counter()
        other.retrieve(qs[0], k=5)
        out["first search, no snapshot"] = time.perf_counter() - start
        other.close()
    out["snapshot"] = len(r.store.load_cached(snapshot.NAME) or b"") / 2**20
    for q in qs:  # cache the embeddings: the search, not the (fake) encoder, is timed
        r.retrieve(q, k=5)
    console.print(f"[{size:,} tools] timing {calls} retrievals ...")
    wall, _ = timed(lambda i: r.retrieve(qs[i % len(qs)], k=5), calls, 10)
    out["retrieve"], out["retrieve p95"] = float(np.median(wall)), float(np.percentile(wall, 95))
    ids = [t.tool.id for t in r.tools(stats=False)]
    wall, _ = timed(lambda i: r.feedback(ids[i * 7 % size], i % 3 != 0), 100, 5)
    out["feedback"] = float(np.median(wall))
    adds, removes = [], []
    for j in range(3):
        extra = r.tool(ids[j]).model_copy(update={"id": f"scale-extra-{j}"})
        start = time.perf_counter()
        r.add_tools([extra])
        adds.append(time.perf_counter() - start)
        start = time.perf_counter()
        r.remove_tools([extra.id])
        removes.append(time.perf_counter() - start)
    out["add 1 tool"], out["remove 1 tool"] = 1e3 * float(np.median(adds)), 1e3 * float(np.median(removes))
    with Retriever.open(db, encoder=encoder) as replica:  # another process's view of the same store
        replica.retrieve(qs[0], k=5)
        r.add_tools([r.tool(ids[0]).model_copy(update={"id": "scale-replicated"})])
        start = time.perf_counter()
        replica.retrieve(qs[0], k=5)  # catches up with the change first
        out["replica catch-up"] = 1e3 * (time.perf_counter() - start)
    if hnsw:
        console.print(f"[{size:,} tools] HNSW ...")
        stored = r.store.load_catalog()
        flat = r.index
        start = time.perf_counter()
        graph = SemanticIndex.build(r.index.tools, stored.embeddings, flat.config.with_(dense_kind="hnsw"))
        out["hnsw build"] = time.perf_counter() - start
        vecs = encoder.encode_queries(qs)
        wall, _ = timed(lambda i: graph.search(qs[i % len(qs)], vecs[i % len(qs)], 10), calls, 10)
        out["hnsw search"] = float(np.median(wall))
        shared = [
            len(set(graph.search(q, v, 10)[0].tolist()) & set(flat.search(q, v, 10)[0].tolist())) / 10
            for q, v in zip(qs, vecs, strict=True)
        ]
        out["hnsw recall@10"] = float(np.mean(shared))
    r.close()
    out["db"] = sum(p.stat().st_size for p in tmp.glob("scale.db*")) / 2**20
    shutil.rmtree(tmp, ignore_errors=True)
    return out


def run_size(args: argparse.Namespace, size: int) -> dict[str, float]:
    """``measure`` in a child process (so that memory and caches start clean)."""
    cmd = [sys.executable, __file__, "--one", str(size), "--source", args.source]
    cmd += ["--calls", str(args.calls), "--seed", str(args.seed), "--hnsw-from", str(args.hnsw_from)]
    done = subprocess.run(cmd, stdout=subprocess.PIPE, text=True, check=False)
    if done.returncode:
        raise SystemExit(f"the {size:,}-tool run failed (exit {done.returncode})")
    return json.loads(done.stdout)


def table(sizes: Sequence[int], results: dict[int, dict[str, float]]) -> Table:
    base = sizes[0]
    out = Table(
        title=f"rated at scale: ratios to the smallest size of the same run ({os.cpu_count()} CPUs, "
        f"load average {os.getloadavg()[0]:.1f})"
    )
    out.add_column("stage")
    for n in sizes:
        out.add_column(f"{n:,} tools", justify="right")
    out.add_row("(size ratio)", *[f"{n / base:.0f}x" for n in sizes])
    for stage, (unit, _) in STAGES.items():
        cells = []
        for n in sizes:
            value = results[n].get(stage)
            ref = next((results[m][stage] for m in sizes if stage in results[m]), None)
            if value is None:
                cells.append("-")
                continue
            ratio = f" ({value / ref:.1f}x)" if ref and stage != "hnsw recall@10" else ""
            cells.append(f"{value:.3g} {unit}{ratio}")
        out.add_row(stage, *cells)
    return out


def plot(sizes: Sequence[int], results: dict[int, dict[str, float]], path: Path) -> None:
    from rated.plotting import pyplot, save_png

    plt = pyplot()
    fig, ax = plt.subplots(figsize=(8, 5))
    for stage in ("retrieve", "add 1 tool", "remove 1 tool", "feedback", "hnsw search"):
        pts = [(n, results[n][stage]) for n in sizes if stage in results[n]]
        if pts:
            ax.plot(*zip(*pts, strict=True), marker="o", label=f"{stage} (ms)")
    for stage in ("open", "first search", "first search, no snapshot"):
        ax.plot(sizes, [1e3 * results[n][stage] for n in sizes], marker="s", ls="--", label=f"{stage} (ms)")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("tools in the catalog")
    ax.set_ylabel("milliseconds (log scale)")
    ax.set_title("rated: cost per operation against catalog size (hash encoder, SQLite)")
    ax.legend(fontsize=8)
    save_png(fig, path)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[2000, 10000, 50000])
    ap.add_argument("--calls", type=int, default=300, help="timed retrievals per size")
    ap.add_argument("--source", choices=["stabletoolbench", "synthetic"], default="stabletoolbench")
    ap.add_argument("--hnsw-from", type=int, default=10000, help="smallest size that also times HNSW")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, default=None, help="folder for scale.json and scale.png")
    ap.add_argument("--one", type=int, default=None, help=argparse.SUPPRESS)  # child: one size, JSON out
    args = ap.parse_args(argv)
    if args.one is not None:
        print(json.dumps(measure(args.source, args.one, args.calls, args.one >= args.hnsw_from, args.seed)))
        return 0
    sizes = sorted(set(args.sizes))
    if sizes[0] < 10:
        raise SystemExit("--sizes must be at least 10")
    results = {n: run_size(args, n) for n in sizes}
    Console().print(table(sizes, results))
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        doc = {"cpus": os.cpu_count(), "source": args.source, "calls": args.calls, "sizes": results}
        (args.out / "scale.json").write_text(json.dumps(doc, indent=2))
        plot(sizes, results, args.out / "scale.png")
        console.print(f"wrote {args.out / 'scale.json'} and {args.out / 'scale.png'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
