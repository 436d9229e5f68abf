"""``rated catalog build | stats``: collect the EcoAgent catalog from platform packages, and describe it.

``build`` fetches the pinned packages (cached), parses them without installing them, deduplicates, scores
the static reliability prior and the metadata defects, and writes JSONL plus a ``.report.json`` beside it.
A failing source fails alone: the others are written, the command exits 1 and names the failure.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
from typing import Any

from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TextColumn,
    TimeElapsedColumn,
)
from rich.table import Table

from rated.cli import catalog_mcp_cmds
from rated.cli.output import console, print_json
from rated.errors import ConfigError

__all__ = ["register"]


def register(sub: argparse._SubParsersAction) -> None:
    """Add this group's sub-commands to the ``rated`` parser."""
    from rated.catalog.collect.build import SOURCES

    group = sub.add_parser("catalog", help="build or describe the EcoAgent tool catalog")
    cmds = group.add_subparsers(dest="catalog_command", metavar="COMMAND")
    group.set_defaults(handler=lambda _a: (group.print_help(), 2)[1])

    p = cmds.add_parser("build", help="collect tools from LangChain, CrewAI, LlamaIndex, n8n and public APIs")
    p.add_argument(
        "--sources",
        nargs="+",
        default=None,
        metavar="SOURCE",
        help=f"sources to (re)build, space or comma separated (default: all of {', '.join(SOURCES)})",
    )
    p.add_argument(
        "--cache", default=None, metavar="DIR", help="package cache (default: RATED_HOME/cache/packages)"
    )
    p.add_argument("--out", required=True, metavar="FILE", help="output catalog (JSONL)")
    p.add_argument("--encoder", default="default", help="prior encoder: 'default' (MiniLM), 'hash' or 'none'")
    p.add_argument(
        "--fresh",
        action="store_true",
        help="ignore an existing --out (else sources not rebuilt or failing keep their tools from it)",
    )
    p.add_argument("--offline", action="store_true", help="use the cache only; never call a registry")
    p.add_argument("--json", action="store_true", help="print the build report as JSON")
    p.set_defaults(handler=_build)

    p = cmds.add_parser("stats", help="per-source counts, auth types, defect rates and reliability")
    p.add_argument("catalog", metavar="CATALOG")
    p.add_argument("--png", default=None, metavar="FILE", help="write per-source r_static histograms here")
    p.add_argument(
        "--encoder", default="default", help="encoder for tools without a stored prior ('none' skips)"
    )
    p.add_argument("--json", action="store_true", help="print the statistics as JSON")
    p.set_defaults(handler=_stats)

    catalog_mcp_cmds.register(cmds)


def _encoder(spec: str, progress: bool) -> Any:
    if spec == "none":
        return None
    if spec == "hash":
        from rated.encode.testing import HashEncoder

        return HashEncoder()
    if spec == "default":
        from rated.encode import default_encoder

        return default_encoder(progress=progress)
    raise ConfigError(f"--encoder {spec!r}: expected 'default', 'hash' or 'none'")


def _sources(values: list[str] | None) -> list[str] | None:
    if not values:
        return None
    return [s.strip() for v in values for s in v.split(",") if s.strip()]


def _build(args: argparse.Namespace) -> int:
    from rated.catalog.collect.build import SOURCES, build_catalog
    from rated.catalog.collect.fetch import Fetcher
    from rated.catalog.loaders import load_catalog, save_catalog

    sources = _sources(args.sources)
    out = _output_path(args.out)
    previous = load_catalog(out) if out.is_file() and not args.fresh else None
    encoder = _encoder(args.encoder, progress=not args.json)
    names = sources or list(SOURCES)
    columns = (
        SpinnerColumn(),
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
    )
    with Progress(*columns, console=console, transient=True, disable=args.json) as bar:
        task = bar.add_task("starting", total=len(names) + 2)
        done: set[str] = set()

        def on_step(stage: str, message: str) -> None:
            bar.update(task, description=f"[bold]{stage}[/]: {message}")
            finished = stage in names and (message.endswith(" tools") or message.startswith("failed"))
            if (finished or stage in {"dedupe", "prior"}) and stage not in done:
                done.add(stage)
                bar.advance(task)

        result = build_catalog(
            sources,
            None,
            encoder=encoder,
            fetcher=Fetcher(args.cache, offline=args.offline),
            previous=previous,
            on_step=on_step,
            progress=not args.json,
        )
    save_catalog(result.tools, out)
    report_path = out.with_name(out.name.removesuffix(".jsonl") + ".report.json")
    report = {**result.to_dict(), "out": str(out)}
    try:
        report_path.write_text(json.dumps(report, indent=2) + "\n")
    except OSError as exc:
        raise ConfigError(f"{report_path}: cannot write the build report ({exc.strerror or exc})") from None
    if args.json:
        print_json(report)
    else:
        _print_build(result, out, report_path)
    return 1 if result.failed else 0


def _output_path(value: str) -> Path:
    """``--out``, checked before a build that may take minutes rather than when its result is saved."""
    out = Path(value).expanduser()
    if out.is_dir():
        raise ConfigError(f"--out {out}: is a directory, expected a catalog file path")
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigError(f"--out {out}: cannot create its folder ({exc.strerror or exc})") from None
    if not os.access(out.parent, os.W_OK):
        raise ConfigError(f"--out {out}: its folder is not writable")
    return out


def _print_build(result: Any, out: Path, report_path: Path) -> None:
    table = Table(title="catalog sources", show_lines=False)
    for col in ("source", "tools", "status", "seconds", "license"):
        table.add_column(col)
    for r in result.reports:
        status = "[green]ok[/]" if r.ok else f"[red]failed[/]: {r.error}"
        if r.carried_over:
            status += f" [yellow](kept {r.carried_over} from the previous catalog)[/]"
        table.add_row(r.name, str(r.tools), status, f"{r.seconds:.1f}", ", ".join(r.licenses))
    console.print(table)
    reliable = sum(1 for t in result.tools if t.extra.get("prior", {}).get("reliable"))
    console.print(
        f"{len(result.tools)} tools -> {out} ({result.exact_duplicates} exact duplicates removed, "
        f"{result.groups} near-duplicate groups over {result.grouped} tools; "
        f"{reliable} reliable; prior encoder: {result.encoder or 'none'}); report: {report_path}"
    )


def _stats(args: argparse.Namespace) -> int:
    from rated.catalog.loaders import load_catalog
    from rated.catalog.stats import catalog_stats, ensure_annotated, plot_reliability

    tools = load_catalog(args.catalog)
    needs_encoder = any("prior" not in t.extra for t in tools)
    encoder = _encoder(args.encoder, progress=not args.json) if needs_encoder else None
    tools = ensure_annotated(tools, encoder)
    stats = catalog_stats(tools)
    png = str(plot_reliability(tools, args.png)) if args.png else None
    if args.json:
        print_json({"sources": stats, "png": png})
        return 0
    _print_stats(stats)
    if png:
        console.print(f"histograms: {png}")
    return 0


_DEFECT_COLUMNS = (
    ("missing_description", "no desc"),
    ("missing_auth", "no auth"),
    ("missing_endpoint", "no endpoint"),
    ("malformed_endpoint", "bad endpoint"),
    ("name_description_mismatch", "mismatch"),
)
_AUTH_COLUMNS = ("none", "api_key", "oauth2", "basic", "other", "unknown")


def _print_stats(stats: dict[str, Any]) -> None:
    """Three narrow tables (reliability, defects, auth) rather than one that wraps on a terminal."""
    rel = Table(title="static reliability prior (r_static)")
    for col in ("source", "tools", "reliable", "median", "p10", "p90", "any defect"):
        rel.add_column(col, no_wrap=True, justify="left" if col == "source" else "right")
    defects = Table(title="metadata defects (% of tools)")
    defects.add_column("source", no_wrap=True)
    for _, label in _DEFECT_COLUMNS:
        defects.add_column(label, justify="right", no_wrap=True)
    auth = Table(title="auth types (tools)")
    auth.add_column("source", no_wrap=True)
    for label in _AUTH_COLUMNS:
        auth.add_column(label, justify="right", no_wrap=True)
    for name, row in stats.items():
        r = row.get("r_static") or {}
        reliable = f"{100 * row['reliable']:.1f}%" if "reliable" in row else "-"
        q = [f"{r[k]:.3f}" if k in r else "-" for k in ("median", "p10", "p90")]
        rel.add_row(name, str(row["tools"]), reliable, *q, f"{100 * row['any_defect']:.1f}%")
        defects.add_row(name, *(f"{100 * row['defect_rate'][code]:.1f}" for code, _ in _DEFECT_COLUMNS))
        auth.add_row(name, *(str(row["auth"].get(label, 0)) for label in _AUTH_COLUMNS))
    for table in (rel, defects, auth):
        console.print(table)
