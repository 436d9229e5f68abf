"""``rated data prepare NAME --out DIR``: convert a public benchmark into the generic dataset format.

DIR is written whole or not at all: a failure or Ctrl-C midway leaves the previous DIR as it was.
"""

from __future__ import annotations

import argparse
from collections import Counter

from rated.cli.output import console

__all__ = ["register"]


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``data prepare`` to the ``rated`` parser."""
    from rated.bench.datasets import LOADERS

    data = sub.add_parser("data", help="benchmark datasets")
    data_sub = data.add_subparsers(dest="data_command", metavar="DATA")
    prep = data_sub.add_parser(
        "prepare", help="convert a public benchmark (bfcl, stabletoolbench, metatool) into DIR"
    )
    prep.add_argument("name", choices=sorted(LOADERS), help="benchmark to convert")
    prep.add_argument("--out", required=True, help="output folder (tools.jsonl, queries.jsonl, meta.json)")
    prep.add_argument("--distractors", help="a catalog file whose tools join the pool as distractors")
    prep.set_defaults(handler=_prepare)
    data.set_defaults(handler=lambda _args: data.print_help() or 2)


def _prepare(args: argparse.Namespace) -> int:
    from rated.bench.datasets import prepare
    from rated.cli.outpath import check_out_dir
    from rated.errors import RatedError

    check_out_dir(args.out)
    with console.status(f"preparing {args.name}"):
        try:  # a failed write is already a RatedError naming the file (and --out is left as it was)
            prepared = prepare(args.name, args.out, args.distractors)
        except OSError as exc:  # reading the raw data, the distractors or the cache
            raise RatedError(f"{exc.filename or args.out}: {exc.strerror or exc}") from None
    ds = prepared.dataset
    splits = Counter(q.split for q in ds.queries)
    shown = ", ".join(f"{s} {splits[s]}" for s in ("train", "val", "test") if splits[s])
    console.print(
        f"[bold]{ds.name}[/]: {len(ds.tools)} tools, {len(ds.queries)} queries ({shown}) -> {args.out}"
    )
    if prepared.irrelevance:
        console.print(f"{len(prepared.irrelevance)} queries with no correct tool -> irrelevance.jsonl")
    if prepared.problems:
        console.print(
            f"[yellow]{len(prepared.problems)} note(s)/problem(s)[/], listed in problems.txt; first ones:"
        )
        for item in prepared.problems.items[:5]:
            console.print(f"  - {item}", highlight=False, markup=False)
    return 0
