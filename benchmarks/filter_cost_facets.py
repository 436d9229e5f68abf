"""What the first filter by a platform, tag, provider or auth kind costs: every record parsed against the
facet snapshot (``rated.index.snapshot.FACETS_NAME``) and the last pool's facets, in one run.

The catalog is ``scale.py``'s (tools replicated to the size with their own ids, providers and rare words,
the ``hash`` encoder, the exact flat index) in SQLite, its facet snapshot saved as ``from_catalog`` saves it.
Each round opens it twice per variant, a writer and a replica, and times (query embeddings cached):

- ``first facet filter``: the first ``retrieve(q, where={"provider": ...})`` of a retriever just opened
  (its index built by a first search, its records not parsed), in both the writer and the replica;
- ``after own add``: the writer adds one tool, then filters by a provider again (a new pool);
- ``replica after add``: the replica's next facet filter after the writer's add, once an unfiltered
  query (not timed) has reloaded its pool;
- ``unfiltered``: the median of 30 unfiltered queries of the replica, for the ratios.

Variants: ``parse`` (every pool's facets read from every tool, parsing each record not parsed yet: what a
store without the snapshot pays, and all of rated before it; ``--before REV`` takes ``PoolFilter`` from
that revision of ``src/rated/tool_filter.py`` instead) and ``snapshot`` (the retriever's own
``_current_pool_filter``: ``PoolFilter`` given the store and the last pool's facet table). Printed per
stage: the median ms of each variant over the rounds (alternated), their ratio, each one's ratio to the
unfiltered median, and how many records each parsed (the same in every round).

Run: ``.venv/bin/python benchmarks/filter_cost_facets.py [--tools 20000] [--rounds 3] [--before REV]
[--out DIR]`` (``--out`` writes filter_cost_facets.json)
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import tempfile
import time
import types
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import numpy as np
from rich.console import Console
from rich.table import Table
from scale import scaled_pool

from rated import stored_tool
from rated.encode.testing import HashEncoder
from rated.index import snapshot
from rated.retriever import Retriever
from rated.tool_filter import PoolFilter

VARIANTS = ("parse", "snapshot")
STAGES = ("first facet filter", "after own add", "replica after add", "unfiltered")
ROOT = Path(__file__).resolve().parents[1]


def parse_all(pool_filter: type) -> Callable[[Retriever], PoolFilter]:
    """The retriever's pool filter of rated before the facet snapshot: each pool's facets from its tools."""

    def current(self: Retriever) -> PoolFilter:
        if self._pool_filter is None:
            self._pool_filter = pool_filter(self._tools, self._position)
        return self._pool_filter

    return current


#: the retriever's own pool filter (the store's facet snapshot and the last pool's facet table), called
#: as it is, not copied here: a copy went on timing what the retriever no longer does
from_snapshot = Retriever._current_pool_filter


def old_pool_filter(rev: str) -> type:
    """``PoolFilter`` as revision ``rev`` of rated.tool_filter defines it."""
    source = subprocess.run(
        ["git", "show", f"{rev}:src/rated/tool_filter.py"],
        cwd=ROOT,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    module = types.ModuleType(f"tool_filter_{rev}")
    sys.modules[module.__name__] = module  # dataclasses look their module up
    exec(compile(source, f"{rev}:src/rated/tool_filter.py", "exec"), module.__dict__)
    if not hasattr(module.PoolFilter, "latest_facets"):  # what the retriever keeps of a pool's filter when
        module.PoolFilter.latest_facets = None  # the pool changes (since cdb2dbc): nothing, for this one
    return module.PoolFilter


@contextmanager
def variant(current: Callable[[Retriever], PoolFilter]) -> Iterator[None]:
    saved = Retriever._current_pool_filter
    Retriever._current_pool_filter = current  # type: ignore[method-assign]
    try:
        yield
    finally:
        Retriever._current_pool_filter = saved  # type: ignore[method-assign]


@contextmanager
def counting_parses() -> Iterator[list[int]]:
    """Counts the stored records parsed meanwhile (``rated.stored_tool.parse_record``)."""
    seen = [0]
    real = stored_tool.parse_record

    def parse(record: str, tool_id: str, where: str = "store"):  # type: ignore[no-untyped-def]
        seen[0] += 1
        return real(record, tool_id, where)

    stored_tool.parse_record = parse  # type: ignore[assignment]
    try:
        yield seen
    finally:
        stored_tool.parse_record = real  # type: ignore[assignment]


def timed(fn: Callable[[], object]) -> tuple[float, int]:
    """ms of ``fn()`` and the records it parsed."""
    with counting_parses() as parsed:
        start = time.perf_counter()
        fn()
        return (time.perf_counter() - start) * 1e3, parsed[0]


def one_round(db: Path, tools: list, queries: list[str], encoder: HashEncoder, rnd: int) -> dict:
    """One variant's stages (ms, records parsed) on the catalog in ``db``; leaves the catalog as it was."""
    out: dict[str, list[tuple[float, int]]] = {s: [] for s in STAGES}
    rng = random.Random(rnd)
    provider = tools[rng.randrange(len(tools))].provider_key
    with (
        Retriever.open(db, encoder=encoder, query_cache=4096) as writer,
        Retriever.open(db, encoder=encoder, query_cache=4096) as replica,
    ):
        for r in (writer, replica):
            r.retrieve(queries[0], k=5)  # builds the index (lexical part from its snapshot)
        unfiltered = [timed(lambda q=q: replica.retrieve(q, k=5)) for q in queries[1:31]]
        out["unfiltered"].append((float(np.median([ms for ms, _ in unfiltered])), 0))
        for r in (writer, replica):
            out["first facet filter"].append(
                timed(lambda r=r: r.retrieve(queries[1], k=5, where={"provider": provider}))
            )
        new = tools[0].model_copy(update={"id": f"added-{rnd}", "provider": f"added-{rnd}"})
        writer.add_tools([new])
        where = {"provider": new.provider_key}
        out["after own add"].append(timed(lambda: writer.retrieve(queries[2], k=5, where=where)))
        replica.retrieve(queries[3], k=5)  # reloads the pool (hundreds of ms at 20,000 tools: not timed)
        out["replica after add"].append(timed(lambda: replica.retrieve(queries[2], k=5, where=where)))
        hits = replica.retrieve(queries[2], k=5, where=where)
        assert [h.id for h in hits] == [new.id], hits  # both variants answer alike
        writer.remove_tools([new.id])
    return out


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tools", type=int, default=20_000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--source", default="synthetic", help="synthetic | stabletoolbench (as scale.py)")
    ap.add_argument("--before", metavar="REV", help="the parse variant's PoolFilter from this git revision")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path)
    args = ap.parse_args(argv)
    console = Console()
    tools, queries = scaled_pool(args.source, args.tools, args.seed)
    queries = [queries[i % len(queries)] for i in range(40)]
    encoder = HashEncoder(384)
    baseline = parse_all(old_pool_filter(args.before) if args.before else PoolFilter)
    currents = {"parse": baseline, "snapshot": from_snapshot}
    samples: dict[str, dict[str, list[tuple[float, int]]]] = {v: {s: [] for s in STAGES} for v in VARIANTS}
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "filter_cost_facets.db"
        with console.status(f"indexing {len(tools):,} tools"):
            with Retriever.from_catalog(tools, db, encoder=encoder, semantic={"dense_kind": "flat"}) as r:
                if r.store.load_cached(snapshot.FACETS_NAME) is None:  # as from_catalog saves it
                    r.retrieve(queries[0], k=1, where={"provider": tools[0].provider_key})
                assert r.store.load_cached(snapshot.FACETS_NAME) is not None
        for rnd in range(args.rounds):
            for name in VARIANTS if rnd % 2 == 0 else VARIANTS[::-1]:
                with console.status(f"round {rnd + 1}/{args.rounds}: {name}"), variant(currents[name]):
                    for stage, got in one_round(db, tools, queries, encoder, rnd).items():
                        samples[name][stage].extend(got)
    rows = []
    for stage in STAGES:
        row: dict[str, object] = {"stage": stage}
        for name in VARIANTS:
            row[f"{name}_ms"] = float(np.median([ms for ms, _ in samples[name][stage]]))
            row[f"{name}_parsed"] = int(np.median([n for _, n in samples[name][stage]]))
        rows.append(row)
    base = {name: rows[-1][f"{name}_ms"] for name in VARIANTS}
    before = f"parse ({args.before})" if args.before else "parse"
    title = f"the first facet filter of a pool, {len(tools):,} tools (SQLite), {args.rounds} rounds"
    table = Table(title=title)
    for col in ("stage", f"{before} ms", "snapshot ms", "parse / snapshot", "x unfiltered", "records parsed"):
        table.add_column(col, justify="left" if col == "stage" else "right")
    for row in rows:
        row["ratio"] = row["parse_ms"] / row["snapshot_ms"]  # type: ignore[operator]
        row["parse_x_unfiltered"] = row["parse_ms"] / base["parse"]  # type: ignore[operator]
        row["snapshot_x_unfiltered"] = row["snapshot_ms"] / base["snapshot"]  # type: ignore[operator]
        table.add_row(
            str(row["stage"]),
            f"{row['parse_ms']:.1f}",
            f"{row['snapshot_ms']:.1f}",
            f"{row['ratio']:.1f}",
            f"{row['parse_x_unfiltered']:.1f} / {row['snapshot_x_unfiltered']:.1f}",
            f"{row['parse_parsed']:,} / {row['snapshot_parsed']:,}",
        )
    console.print(table)
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        doc = {"tools": len(tools), "rounds": args.rounds, "before": args.before, "rows": rows}
        (args.out / "filter_cost_facets.json").write_text(json.dumps(doc, indent=2))
        console.print(f"wrote {args.out / 'filter_cost_facets.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
