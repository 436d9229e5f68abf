"""What the saved HNSW graph saves: open + first search of a catalog above ``hnsw_threshold``, with the graph
the writer saved (``rated.index.hnsw_snapshot``) and without it (the graph built from the stored
embeddings, as every process did before), in the same run.

The catalog is ``scale.py``'s (tools replicated to the size with their own ids, providers and rare words;
the ``hash`` encoder, 384 dimensions), indexed into SQLite by ``Retriever.from_catalog`` in a child process
with ``hnsw_threshold`` lowered so that the dense part is a graph at this size. Then, alternately,
``Retriever.open`` + one ``retrieve`` with the saved graph and with a store that hides it (the lexical
snapshot is used in both), ``--repeats`` times each; medians and their ratio are printed, and the
graph's blob size per tool. Last, a writer adds one tool and removes it again, each change saving the graph
the writer then holds: the time of each change, and of an open + first search after it, which attaches
that graph (the table says whether it built one instead).

Run: ``.venv/bin/python benchmarks/hnsw_open.py [--tools 50000] [--threshold 10000] [--repeats 2]``
(``--source stabletoolbench`` replicates the real APIs; ``--out DIR`` writes hnsw_open.json).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import faiss
import numpy as np
from rich.console import Console
from rich.table import Table
from scale import scaled_pool

from rated.catalog.schema import Tool
from rated.encode.testing import HashEncoder
from rated.index import hnsw_snapshot
from rated.retriever import Retriever
from rated.store.sqlite import SQLiteStore

console = Console(stderr=True)


def build(args: argparse.Namespace, db: Path) -> float:
    """Seconds to index the catalog into ``db``, in a child process (the parent's memory and caches
    stay clean, and faiss's threads are never forked)."""
    cmd = [sys.executable, __file__, "--build", str(db), "--tools", str(args.tools)]
    cmd += ["--threshold", str(args.threshold), "--source", args.source, "--seed", str(args.seed)]
    done = subprocess.run(cmd, stdout=subprocess.PIPE, text=True, check=False)
    if done.returncode:
        raise SystemExit(f"indexing failed (exit {done.returncode})")
    return float(json.loads(done.stdout))


def _build_here(args: argparse.Namespace) -> float:
    tools, _ = scaled_pool(args.source, args.tools, args.seed)
    start = time.perf_counter()
    semantic = {"hnsw_threshold": args.threshold}
    Retriever.from_catalog(tools, db=args.build, encoder=HashEncoder(384), semantic=semantic).close()
    return time.perf_counter() - start


@contextmanager
def graph_hidden() -> Iterator[None]:
    """Retrievers opened inside neither read nor save the HNSW graph (the lexical snapshot still works)."""
    load, save = SQLiteStore.load_cached, SQLiteStore.save_cached
    SQLiteStore.load_cached = lambda self, name: None if name == hnsw_snapshot.NAME else load(self, name)  # type: ignore[method-assign]
    SQLiteStore.save_cached = lambda self, name, data, **kwargs: (
        None if name == hnsw_snapshot.NAME else save(self, name, data, **kwargs)
    )  # type: ignore[method-assign]
    try:
        yield
    finally:
        SQLiteStore.load_cached, SQLiteStore.save_cached = load, save  # type: ignore[method-assign]


def open_and_search(db: Path, query: str) -> tuple[float, float, list[str]]:
    """Seconds for ``Retriever.open`` and for the first ``retrieve`` (which builds the index), and its ids."""
    start = time.perf_counter()
    r = Retriever.open(db, encoder=HashEncoder(384))
    opened = time.perf_counter() - start
    start = time.perf_counter()
    hits = r.retrieve(query, k=10)
    first = time.perf_counter() - start
    kind = r.index.dense.kind
    r.close()
    if kind != "hnsw":
        raise SystemExit(f"the dense part is {kind}: lower --threshold below --tools")
    return opened, first, [h.id for h in hits]


def measure(args: argparse.Namespace) -> dict[str, object]:
    _, queries = scaled_pool(args.source, 10, args.seed)
    tmp = Path(tempfile.mkdtemp(prefix="rated-hnsw-open-"))
    try:
        db = tmp / "hnsw.db"
        console.print(f"indexing {args.tools:,} tools (hnsw_threshold {args.threshold:,}) ...")
        indexed = build(args, db)
        store = SQLiteStore(db)
        blob = store.load_cached(hnsw_snapshot.NAME) or b""
        store.close()
        runs: dict[str, list[tuple[float, float]]] = {"saved graph": [], "graph built": []}
        hits: dict[str, list[str]] = {}
        for i in range(args.repeats):
            for mode in runs:
                console.print(f"run {i + 1}/{args.repeats}: open + first search, {mode} ...")
                with graph_hidden() if mode == "graph built" else _nothing():
                    opened, first, ids = open_and_search(db, queries[0])
                runs[mode].append((opened, first))
                hits.setdefault(mode, ids)
        console.print("a writer adds a tool, then removes it; open + first search after each ...")
        extra = scaled_pool(args.source, args.tools + 1, args.seed)[0][-1]
        return {
            "tools": args.tools,
            "threshold": args.threshold,
            "source": args.source,
            "cpus": os.cpu_count(),
            "faiss_threads": faiss.omp_get_max_threads(),
            "index (from_catalog) s": indexed,
            "graph blob bytes per tool": len(blob) / args.tools,
            "runs": runs,
            "same top-10": hits["saved graph"] == hits["graph built"],
            "writer": writer_changes(db, extra, queries[0]),
        }
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def writer_changes(db: Path, extra: Tool, query: str) -> dict[str, dict[str, float | bool]]:
    """A writer's ``add_tools`` of ``extra`` and then ``remove_tools`` of it (each saves the graph the writer
    then holds: the opened one grown by the tool, then the kept tools' one rebuilt): seconds for each
    change, and for an open + first search after it, and whether that open built a graph instead of
    attaching the saved one."""
    out: dict[str, dict[str, float | bool]] = {}
    with Retriever.open(db, encoder=HashEncoder(384)) as writer:
        writer.retrieve(query, k=10)  # its index, on the saved graph
        changes = {
            "add 1 tool": lambda: writer.add_tools([extra]),
            "remove it": lambda: writer.remove_tools([extra.id]),
        }
        for step, change in changes.items():
            start = time.perf_counter()
            change()
            changed = time.perf_counter() - start
            with graph_builds() as built:
                opened, first, _ = open_and_search(db, query)
            out[step] = {
                "writer s": changed,
                "open s": opened,
                "first search s": first,
                "graph built": bool(built),
            }
    return out


@contextmanager
def graph_builds() -> Iterator[list[int]]:
    """The sizes of the HNSW graphs built inside (faiss inserts of more than one vector)."""
    add, built = faiss.IndexHNSWFlat.add, []

    def counted(self: faiss.IndexHNSWFlat, x: np.ndarray, *args: object, **kwargs: object) -> None:
        if len(x) > 1:
            built.append(len(x))
        add(self, x, *args, **kwargs)

    faiss.IndexHNSWFlat.add = counted  # type: ignore[method-assign]
    try:
        yield built
    finally:
        faiss.IndexHNSWFlat.add = add  # type: ignore[method-assign]


@contextmanager
def _nothing() -> Iterator[None]:
    yield


def table(doc: dict) -> Table:
    out = Table(
        title=f"open + first search, {doc['tools']:,} tools, HNSW above {doc['threshold']:,} "
        f"({doc['cpus']} CPUs, load average {os.getloadavg()[0]:.1f})"
    )
    for column in ("mode", "open s", "first search s", "open + first search s (median)", "runs"):
        out.add_column(column, justify="right" if column != "mode" else "left")
    totals = {}
    for mode, runs in doc["runs"].items():
        total = [o + f for o, f in runs]
        totals[mode] = float(np.median(total))
        out.add_row(
            mode,
            f"{np.median([o for o, _ in runs]):.2f}",
            f"{np.median([f for _, f in runs]):.2f}",
            f"{totals[mode]:.2f}",
            ", ".join(f"{t:.2f}" for t in total),
        )
    writer = []
    for step, run in doc["writer"].items():
        total = run["open s"] + run["first search s"]
        writer.append(
            f"{step} {run['writer s']:.2f} s, then the open {'built' if run['graph built'] else 'attached'}"
        )
        out.add_row(
            f"after a writer's {step}",
            f"{run['open s']:.2f}",
            f"{run['first search s']:.2f}",
            f"{total:.2f}",
            f"{total:.2f}",
        )
    out.caption = (
        f"built / saved: {totals['graph built'] / totals['saved graph']:.1f}x; graph blob "
        f"{doc['graph blob bytes per tool']:.0f} bytes a tool; index (from_catalog) "
        f"{doc['index (from_catalog) s']:.1f} s; same top-10 both ways: {doc['same top-10']}; the "
        f"writer's {'; '.join(writer)} its graph"
    )
    return out


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tools", type=int, default=50_000)
    ap.add_argument("--threshold", type=int, default=10_000, help="hnsw_threshold for this run")
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--source", choices=["stabletoolbench", "synthetic"], default="synthetic")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, default=None, help="folder for hnsw_open.json")
    ap.add_argument("--build", type=Path, default=None, help=argparse.SUPPRESS)  # child: index, JSON out
    args = ap.parse_args(argv)
    if args.build is not None:
        print(json.dumps(_build_here(args)))
        return 0
    if args.tools <= args.threshold:
        raise SystemExit("--tools must be above --threshold (else the dense part is flat)")
    doc = measure(args)
    Console().print(table(doc))
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "hnsw_open.json").write_text(json.dumps(doc, indent=2))
        console.print(f"wrote {args.out / 'hnsw_open.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
