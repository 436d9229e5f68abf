"""What ``Toolbox.select`` costs when the index it opened also holds tools that are none of its objects
(left by an earlier run with other tools, added by other processes), against a toolbox whose index holds
only its own tools, measured in the same run.

The tools are random six-word descriptions over a 20-word vocabulary (the ``hash`` encoder, 384
dimensions); ``--own`` of them are the toolbox's objects (catalog dicts), ``--tools`` in all are indexed
in the shared SQLite file. Each toolbox answers ``--queries`` three-word queries (after 20 to warm up),
``select(q, k=5)`` and ``select(q, k=5, where={"exclude": [one of its tools]})``, interleaved query by
query with the baseline; printed: median and p95 (ms) and the ratio of the medians.

Run: ``.venv/bin/python benchmarks/toolbox_select.py [--tools 5000] [--own 1000] [--queries 200]``
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

from rated import Tool
from rated.encode.testing import HashEncoder
from rated.retriever import Retriever
from rated.toolbox import Toolbox

WORDS = (
    "weather email search file calendar stock news translate image video map route pay invoice user issue "
    "repo chat note task"
).split()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tools", type=int, default=5000)
    ap.add_argument("--own", type=int, default=1000)
    ap.add_argument("--queries", type=int, default=200)
    args = ap.parse_args(argv)
    rng = random.Random(0)
    tools = [
        Tool(id=f"t{i}", name=f"t{i}", description=" ".join(rng.choices(WORDS, k=6)) + f" tool {i}")
        for i in range(args.tools)
    ]
    queries = [" ".join(rng.choices(WORDS, k=3)) for _ in range(args.queries + 20)]
    own = [t.model_dump(mode="json") for t in tools[: args.own]]
    encoder = HashEncoder(384)
    with tempfile.TemporaryDirectory() as tmp:
        Retriever.from_catalog(tools, Path(tmp) / "shared.db", encoder).close()
        alone = Toolbox(own, Path(tmp) / "alone.db", encoder=encoder)
        shared = Toolbox(own, Path(tmp) / "shared.db", encoder=encoder)
        times: dict[tuple[str, str], list[float]] = {}
        for i, query in enumerate(queries):
            for name, box in (("alone", alone), ("shared", shared)):
                for kind, where in (("plain", None), ("where", {"exclude": [own[i % len(own)]["id"]]})):
                    start = time.perf_counter()
                    box.select(query, k=5, where=where)
                    if i >= 20:
                        times.setdefault((name, kind), []).append(time.perf_counter() - start)
        alone.close()
        shared.close()
    print(f"{args.own} own tools; the shared index holds {args.tools} ({args.queries} queries)")
    for kind in ("plain", "where"):
        base = statistics.median(times[("alone", kind)])
        for name in ("alone", "shared"):
            t = sorted(times[(name, kind)])
            median, p95 = statistics.median(t), t[int(0.95 * (len(t) - 1))]
            print(
                f"select {kind:5} {name:6}  median {median * 1e3:6.2f} ms  p95 {p95 * 1e3:6.2f} ms  "
                f"x{median / base:.2f}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
