"""What a filter costs: ``retrieve(q, where=...)`` against the unfiltered ``retrieve(q)``, flat and HNSW.

The catalog is ``scale.py``'s (tools replicated to the size with their own ids, providers and rare words;
the ``hash`` encoder, 384 dimensions, query embeddings cached so that the encoder's cost does not hide
the rest), indexed twice in memory: with the exact flat dense part and with an HNSW graph. Filters, as
agents use them: ``exclude 3`` (the query's three unfiltered best, as an agent skips tools that just
failed), ``a third`` (a platform: every third tool), ``50 tools`` (an agent's enabled tools, random),
``one provider``. Printed per index and filter: median and p95 of ``retrieve`` (ms) and the ratio to the
unfiltered median measured in the same run, interleaved query by query; for HNSW also the share of the
exact filtered top-5 (the flat index's) it returns.

Then the first filter by a platform, tag, provider or auth kind (``one provider``) in a process that has
just opened the catalog from SQLite (its records not parsed yet: it needs every tool's platform, tags,
provider and auth kind, from the store's facet snapshot where the retriever reads it, else by parsing
every record; ``filter_cost_facets.py`` times both): its own time, the median and worst times of the
unfiltered queries another thread sends meanwhile (how many in brackets: they would wait for it if it
held the retriever; the worst includes the garbage collector's pauses while thousands of records are
parsed), and the time of the next filter by another of those keys (``a platform``), each with its ratio
to the unfiltered median of that retriever.

Run: ``.venv/bin/python benchmarks/filter_cost.py [--tools 20000] [--queries 200] [--out DIR]``
(``--source stabletoolbench`` replicates the real APIs; ``--out`` writes filter_cost.json).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
from rich.console import Console
from rich.progress import track
from rich.table import Table
from scale import scaled_pool

from rated.encode.testing import HashEncoder
from rated.retriever import Retriever

FILTERS = ("none", "exclude 3", "a third", "50 tools", "one provider")


def filters(tools: list, best: list[str], rng: random.Random) -> dict[str, dict | None]:
    ids = [t.id for t in tools]
    return {
        "none": None,
        "exclude 3": {"exclude": best[:3]},
        "a third": {"tools": ids[::3]},
        "50 tools": {"tools": rng.sample(ids, 50)},
        "one provider": {"provider": tools[rng.randrange(len(tools))].provider_key},
    }


def timed(fn: Callable[[], list]) -> tuple[float, list]:
    start = time.perf_counter()
    out = fn()
    return (time.perf_counter() - start) * 1e3, out


def first_facet_filter(tools: list, queries: list[str], encoder: HashEncoder) -> list[dict]:
    """The first facet filter of a retriever that has just opened a stored catalog, and its neighbours."""
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "filter_cost.db"
        Retriever.from_catalog(tools, db, encoder=encoder, semantic={"dense_kind": "flat"}).close()
        with Retriever.open(db, encoder=encoder, query_cache=4096) as r:
            base = float(np.median([timed(lambda q=q: r.retrieve(q, k=5))[0] for q in queries[:50]]))
            waits: list[float] = []
            done = threading.Event()

            def unfiltered() -> None:  # another agent's queries while the first filter runs
                i = 0
                while not done.is_set():
                    waits.append(timed(lambda i=i: r.retrieve(queries[i % len(queries)], k=5))[0])
                    i += 1

            other = threading.Thread(target=unfiltered)
            other.start()
            time.sleep(0.05)  # the other thread is querying
            first, _ = timed(lambda: r.retrieve(queries[1], k=5, where={"provider": tools[7].provider_key}))
            done.set()
            other.join()
            source = tools[3].source
            after, _ = timed(lambda: r.retrieve(queries[2], k=5, where={"source": source}))
    meanwhile = float(np.median(waits))
    return [
        {"stage": "first facet filter", "ms": first, "ratio": first / base},
        {"stage": f"unfiltered meanwhile ({len(waits)}, median)", "ms": meanwhile, "ratio": meanwhile / base},
        {"stage": "unfiltered meanwhile (worst)", "ms": max(waits), "ratio": max(waits) / base},
        {"stage": "next facet filter (platform)", "ms": after, "ratio": after / base},
        {"stage": "unfiltered (median)", "ms": base, "ratio": 1.0},
    ]


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tools", type=int, default=20_000)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--source", default="synthetic", help="synthetic | stabletoolbench (as scale.py)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path)
    args = ap.parse_args(argv)
    console = Console()
    tools, queries = scaled_pool(args.source, args.tools, args.seed)
    rng = random.Random(args.seed)
    queries = [queries[i % len(queries)] for i in range(args.queries)]
    encoder = HashEncoder(384)
    retrievers = {}
    for kind in ("flat", "hnsw"):
        with console.status(f"indexing {len(tools):,} tools ({kind})"):
            r = Retriever.from_catalog(
                tools, encoder=encoder, semantic={"dense_kind": kind}, query_cache=4096
            )
            r.retrieve(queries[0], k=5)  # builds the index
        retrievers[kind] = r
    times: dict[str, dict[str, list[float]]] = {k: {f: [] for f in FILTERS} for k in retrievers}
    recall: dict[str, list[float]] = {f: [] for f in FILTERS}
    for q in track(queries, description="retrieving", console=console):
        best = [h.id for h in retrievers["flat"].retrieve(q, k=3)]
        for name, where in filters(tools, best, rng).items():
            answers = {}
            for kind, r in retrievers.items():
                ms, hits = timed(lambda r=r, q=q, where=where: r.retrieve(q, k=5, where=where))
                times[kind][name].append(ms)
                answers[kind] = [h.id for h in hits]
            if answers["flat"]:
                recall[name].append(len(set(answers["flat"]) & set(answers["hnsw"])) / len(answers["flat"]))
    for r in retrievers.values():
        r.close()
    rows = []
    table = Table(title=f"retrieve with a filter, {len(tools):,} tools, {len(queries)} queries, hash encoder")
    for col in ("index", "filter", "median ms", "p95 ms", "x unfiltered", "recall@5 vs flat"):
        table.add_column(col, justify="left" if col in ("index", "filter") else "right")
    for kind, per_filter in times.items():
        base = float(np.median(per_filter["none"]))
        for name, ms in per_filter.items():
            med, p95 = float(np.median(ms)), float(np.percentile(ms, 95))
            rec = float(np.mean(recall[name])) if kind == "hnsw" and recall[name] else None
            rows.append({"index": kind, "filter": name, "median_ms": med, "p95_ms": p95, "ratio": med / base})
            rows[-1]["recall_at_5"] = rec
            table.add_row(
                kind,
                name,
                f"{med:.3f}",
                f"{p95:.3f}",
                f"{med / base:.2f}",
                "" if rec is None else f"{rec:.3f}",
            )
    console.print(table)
    with console.status("first facet filter after open"):
        first = first_facet_filter(tools, queries, encoder)
    table = Table(title=f"the first facet filter after Retriever.open, {len(tools):,} tools (SQLite)")
    for col in ("stage", "ms", "x unfiltered"):
        table.add_column(col, justify="left" if col == "stage" else "right")
    for row in first:
        table.add_row(row["stage"], f"{row['ms']:.1f}", f"{row['ratio']:.2f}")
    console.print(table)
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        doc = {"tools": len(tools), "queries": len(queries), "source": args.source, "rows": rows}
        doc["first_facet_filter"] = first
        (args.out / "filter_cost.json").write_text(json.dumps(doc, indent=2))
        console.print(f"wrote {args.out / 'filter_cost.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
