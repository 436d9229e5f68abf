"""``rated add | remove | sync``: change the catalog of a live index, keeping what it learned.

``rated index --force`` re-encodes everything and drops every learned state; these encode only the new
or changed tools (with the encoder the index was built with, a fine-tuned ONNX folder included) and leave
every other tool's prior and learned state as it was. ``sync`` keeps an index in step with a tools file:
new tools added, changed ones updated in place (their learned state kept), with ``--prune`` the ones the
file no longer holds removed. Services and replicas on the same database follow the change. Each command
changes nothing when it fails: an id already indexed, a malformed or empty catalog, an unknown id, or
removing every tool.
"""

from __future__ import annotations

import argparse
import time

from rich.markup import escape

from rated.cli.index_cmds import add_db_argument
from rated.cli.output import console, n_tools, print_json

__all__ = ["register"]

_LISTED = 20  # ids printed for people; --json lists all


def register(sub: argparse._SubParsersAction) -> None:
    """Add this group's sub-commands to the ``rated`` parser."""
    p = sub.add_parser("add", help="add tools to an index, keeping every other tool's learned state")
    p.add_argument(
        "catalog",
        metavar="CATALOG",
        help="the new tools: JSONL, JSON list, OpenAI/Anthropic tool list, MCP tools/list or OpenAPI (JSON)",
    )
    add_db_argument(p)
    _json(p)
    p.set_defaults(handler=_add)

    p = sub.add_parser("remove", help="remove tools (and their learned state) from an index")
    p.add_argument("tool_ids", nargs="+", metavar="TOOL_ID", help="ids as `rated tools` lists them")
    add_db_argument(p)
    _json(p)
    p.set_defaults(handler=_remove)

    p = sub.add_parser(
        "sync", help="make an index hold a tools file: add new, update changed (state kept), --prune absent"
    )
    p.add_argument("catalog", metavar="CATALOG", help="the tools file, in any format `rated index` reads")
    p.add_argument(
        "--prune",
        action="store_true",
        help="also remove indexed tools the file does not hold (and their state)",
    )
    add_db_argument(p)
    _json(p)
    p.set_defaults(handler=_sync)


def _json(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", action="store_true", help="print one JSON document instead of a summary")


# ---- handlers ----------------------------------------------------------------------------------------
def _add(args: argparse.Namespace) -> int:
    from rated.catalog.loaders import load_catalog
    from rated.retriever import Retriever
    from rated.retriever_setup import describe_db

    tools = load_catalog(args.catalog)  # before opening the index: a bad file costs no encoder load
    start = time.perf_counter()
    with Retriever.open(args.db) as r:
        r.add_tools(tools, progress=not args.json)
        total = len(r)
    seconds = time.perf_counter() - start
    added = [t.id for t in tools]
    if args.json:
        print_json(
            {
                "db": describe_db(args.db),  # a redis:// password is never printed
                "added": added,
                "count": len(added),
                "tools": total,
                "seconds": round(seconds, 3),
            }
        )
    else:
        console.print(
            f"added [bold]{n_tools(len(added))}[/] to [bold]{escape(describe_db(args.db))}[/] "
            f"in {seconds:.1f} s (now {n_tools(total)}): {_listed(added)}",
            soft_wrap=True,
        )
    return 0


def _remove(args: argparse.Namespace) -> int:
    from rated.retriever import Retriever
    from rated.retriever_setup import describe_db

    with Retriever.open(args.db) as r:
        removed = r.remove_tools(args.tool_ids)
        total = len(r)
    if args.json:
        print_json({"db": describe_db(args.db), "removed": removed, "count": len(removed), "tools": total})
    else:
        console.print(
            f"removed [bold]{n_tools(len(removed))}[/] from [bold]{escape(describe_db(args.db))}[/] "
            f"(now {n_tools(total)}): {_listed(removed)}",
            soft_wrap=True,
        )
    return 0


def _sync(args: argparse.Namespace) -> int:
    from rated.catalog.loaders import load_catalog
    from rated.retriever import Retriever
    from rated.retriever_setup import describe_db

    tools = load_catalog(args.catalog)  # before opening the index: a bad file costs no encoder load
    start = time.perf_counter()
    with Retriever.open(args.db) as r:
        report = r.sync_tools(tools, prune=args.prune, progress=not args.json)
        total = len(r)
    seconds = time.perf_counter() - start
    kinds = report.to_dict()
    if args.json:
        counts = {kind: len(ids) for kind, ids in kinds.items()}
        print_json(
            {
                "db": describe_db(args.db),
                **kinds,
                "counts": counts,
                "tools": total,
                "seconds": round(seconds, 3),
            }
        )
        return 0
    where = escape(describe_db(args.db))
    if not report.changed:
        console.print(
            f"[bold]{where}[/] holds these {n_tools(len(tools))} as given: nothing to do "
            f"(now {n_tools(total)})",
            soft_wrap=True,
        )
        return 0
    console.print(
        f"synced [bold]{where}[/] in {seconds:.1f} s (now {n_tools(total)}): "
        + ", ".join(f"{len(ids)} {kind}" for kind, ids in kinds.items()),
        soft_wrap=True,
    )
    for kind in ("added", "updated", "removed"):
        if kinds[kind]:
            console.print(f"  {kind}: {_listed(kinds[kind])}", soft_wrap=True)
    return 0


def _listed(ids: list[str]) -> str:
    shown = ", ".join(escape(i) for i in ids[:_LISTED])
    return shown + (f" and {len(ids) - _LISTED} more (--json lists all)" if len(ids) > _LISTED else "")
