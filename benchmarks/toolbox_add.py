"""What ``Toolbox.add_tools`` costs against ``Retriever.add_tools`` for the same new tools, at a few catalog
sizes, measured in the same run (and, with ``--before REV``, the ``Toolbox`` of ``src/rated/toolbox.py``
at that revision beside them).

Each catalog is ``N`` tools with random six-word descriptions over a 20-word vocabulary (the ``hash``
encoder, 384 dimensions, so that encoding does not dominate), indexed once per contender (a toolbox of
catalog dicts, a bare retriever) in the store chosen (``--store``: in memory or a SQLite file). Each round
adds ``--add`` tools none of the indexes holds (fresh ids every round, the same tools for every
contender, each round begun by the next one); printed per size: the median time of each (ms) and its
ratio to the retriever's.

Run: ``.venv/bin/python benchmarks/toolbox_add.py [--sizes 100,1000,5000] [--add 5] [--rounds 15]
[--store memory|sqlite] [--before REV]``
"""

from __future__ import annotations

import argparse
import importlib.util
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

from rated import Tool
from rated.encode.testing import HashEncoder
from rated.retriever import Retriever
from rated.toolbox import Toolbox

WORDS = (
    "weather email search file calendar stock news translate image video map route pay invoice user issue "
    "repo chat note task"
).split()
ROOT = Path(__file__).resolve().parents[1]


def old_toolbox(rev: str, tmp: Path) -> ModuleType:
    """``rated.toolbox`` as revision ``rev`` defines it (run against the rest of rated as it is now)."""
    source = subprocess.run(
        ["git", "show", f"{rev}:src/rated/toolbox.py"], cwd=ROOT, check=True, capture_output=True, text=True
    ).stdout
    path = tmp / "toolbox_before.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location("rated._toolbox_before", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses resolve the module's annotations through it
    spec.loader.exec_module(module)
    return module


def tool(rng: random.Random, tool_id: str) -> dict[str, Any]:
    description = " ".join(rng.choices(WORDS, k=6)) + f" tool {tool_id}"
    return Tool(id=tool_id, name=tool_id, description=description).model_dump(mode="json")


def measure(
    size: int, args: argparse.Namespace, toolboxes: dict[str, type], tmp: Path
) -> dict[str, list[float]]:
    """Seconds per ``add_tools`` call of each contender, round by round, for a catalog of ``size``."""
    rng = random.Random(size)
    catalog = [tool(rng, f"t{i}") for i in range(size)]
    encoder = HashEncoder(384)

    def db(name: str) -> Path | None:
        return tmp / f"{name}-{size}.db" if args.store == "sqlite" else None

    adders: dict[str, tuple[Any, Callable[[list[dict[str, Any]]], Any]]] = {}
    retriever = Retriever.from_catalog(catalog, db("retriever"), encoder)
    adders["Retriever.add_tools"] = (retriever, retriever.add_tools)
    for name, cls in toolboxes.items():
        box = cls(catalog, db(name), encoder=encoder)
        adders[name] = (box, box.add_tools)
    times: dict[str, list[float]] = {name: [] for name in adders}
    try:
        for r in range(args.rounds + 2):  # the first two warm up
            new = [tool(rng, f"new{r}_{j}") for j in range(args.add)]
            names = list(adders)
            for name in names[r % len(names) :] + names[: r % len(names)]:  # each goes first in turn
                add = adders[name][1]
                start = time.perf_counter()
                add(new)
                if r >= 2:
                    times[name].append(time.perf_counter() - start)
    finally:
        for owner, _ in adders.values():
            owner.close()
    return times


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="100,1000,5000", help="catalog sizes, comma-separated")
    ap.add_argument("--add", type=int, default=5, help="tools added per call")
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--store", choices=("memory", "sqlite"), default="memory")
    ap.add_argument("--before", metavar="REV", help="also time Toolbox.add_tools of this git revision")
    args = ap.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")]
    with tempfile.TemporaryDirectory() as tmp:
        toolboxes: dict[str, type] = {"Toolbox.add_tools": Toolbox}
        if args.before:
            toolboxes[f"Toolbox.add_tools ({args.before})"] = old_toolbox(args.before, Path(tmp)).Toolbox
        print(f"{args.add} new tools per call, {args.rounds} rounds, {args.store} store, hash encoder (384)")
        width = max(map(len, toolboxes)) + 2
        for size in sizes:
            times = measure(size, args, toolboxes, Path(tmp))
            base = statistics.median(times["Retriever.add_tools"])
            for name, t in times.items():
                median = statistics.median(t)
                print(f"{size:6} tools  {name:{width}} median {median * 1e3:8.2f} ms  x{median / base:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
