"""``rated index | search | feedback | tools``: build an index, query it, report outcomes, show health.

Every command takes ``--db`` (a SQLite path or ``redis://host:port/n``; default ``$RATED_DB``) and
``--json`` for one machine-readable document on stdout. Errors are rated errors: one line, non-zero exit.
"""

from __future__ import annotations

import argparse
import os
import shlex
import time
from typing import TYPE_CHECKING, Any, TypedDict

from rich.markup import escape
from rich.table import Table

from rated.catalog.export import FORMATS, tool_definitions
from rated.catalog.schema import AuthType
from rated.cli.output import console, err_console, n_tools, print_json
from rated.errors import ConfigError, RatedError, StoreError, UnknownToolError
from rated.outcome import OutcomeKind
from rated.shown import shown
from rated.store.base import IndexExistsError
from rated.tool_filter import ToolFilter
from rated.tool_filter_names import named_as

if TYPE_CHECKING:
    from rated.retired import RetiredStatus

__all__ = ["add_db_argument", "register"]


def register(sub: argparse._SubParsersAction) -> None:
    """Add this group's sub-commands to the ``rated`` parser."""
    p = sub.add_parser("index", help="encode a tool catalog into a database")
    p.add_argument(
        "catalog",
        metavar="CATALOG",
        help="JSONL, JSON list, OpenAI/Anthropic tool list, MCP tools/list or OpenAPI (JSON)",
    )
    add_db_argument(p)
    p.add_argument(
        "--encoder",
        default="default",
        help="'default' (embedded all-MiniLM-L6-v2), 'hash' or 'hash-DIM' (fast fake, for tests) or an "
        "ONNX model folder",
    )
    p.add_argument("--policy", default="rated", help="re-ranking policy (see rated.policy.POLICIES)")
    p.add_argument("--candidates", type=int, default=10, help="semantic top-K the policy re-ranks (10)")
    p.add_argument("--force", action="store_true", help="replace an index already in --db")
    p.add_argument(
        "--dense",
        choices=["auto", "flat", "hnsw"],
        default=None,
        help="dense index: exact 'flat', approximate 'hnsw', or 'auto' (hnsw above --hnsw-threshold tools)",
    )
    p.add_argument(
        "--hnsw-threshold", type=int, default=None, help="catalog size above which 'auto' uses HNSW (200000)"
    )
    _json(p)
    p.set_defaults(handler=_index)

    p = sub.add_parser("search", help="retrieve tools for a query")
    p.add_argument("query", metavar="QUERY")
    add_db_argument(p)
    p.add_argument("-k", type=int, default=5, help="number of tools to return (5)")
    p.add_argument(
        "--format",
        choices=FORMATS,
        default=None,
        help="print JSON with the tools as this model API's definitions (tools) and the id of each name "
        "they are called by (tool_ids): pass tools to the API, map the called name back with tool_ids",
    )
    _filter_arguments(p)
    _json(p)
    p.set_defaults(handler=_search)

    p = sub.add_parser("feedback", help="report how a tool call went (an outcome, or the HTTP status)")
    p.add_argument("tool_id", metavar="TOOL_ID")
    how = p.add_mutually_exclusive_group(required=True)
    how.add_argument(
        "--outcome",
        metavar="OUTCOME",
        help="one of: " + ", ".join(k.value for k in OutcomeKind),
    )
    how.add_argument(
        "--status",
        type=int,
        metavar="CODE",
        help="the HTTP status the tool answered with, classified into an outcome (e.g. 400: caller_error)",
    )
    p.add_argument(
        "--header",
        action="append",
        default=None,
        dest="headers",
        metavar="'NAME: VALUE'",
        help="a response header of the tool, with --status (repeatable): Retry-After and the like give a "
        "429 or 503 its rate-limit hint",
    )
    p.add_argument("--query", default=None, help="the request the tool was called for")
    p.add_argument(
        "--retry-after",
        type=float,
        default=None,
        metavar="S",
        help="rate-limit hint, seconds (with --status: instead of a Retry-After header)",
    )
    add_db_argument(p)
    _json(p)
    p.set_defaults(handler=_feedback)

    p = sub.add_parser("tools", help="list indexed tools with their current health")
    add_db_argument(p)
    p.add_argument("--unhealthy", action="store_true", help="only tools currently considered unhealthy")
    _json(p)
    p.set_defaults(handler=_tools)


def add_db_argument(p: argparse.ArgumentParser) -> None:
    """``--db PATH`` (a SQLite file or redis:// URL), defaulting to ``$RATED_DB``: required (and shown so in
    the usage line) only while that is unset, which the help says; the value is never shown (a Redis URL
    may hold a password). Its "required" error names the variable too (``rated.cli.parser``)."""
    env = os.environ.get("RATED_DB")
    p.add_argument(
        "--db",
        default=env,
        required=env is None,
        metavar="PATH",
        help="SQLite file or redis:// URL"
        + ("; required unless $RATED_DB is set" if env is None else " (default: $RATED_DB)"),
    )


# rated.tool_filter's keys as search options, each repeatable: key -> (option, metavar, help)
_FILTER_OPTIONS = {
    "tools": ("--only", "ID", "only this tool id"),
    "exclude": (
        "--exclude",
        "ID",
        "never this tool id (e.g. one that just failed; an unknown id is ignored)",
    ),
    "source": ("--source", "S", "only tools of this platform (langchain, n8n, mcp, ...; any case)"),
    "tags": ("--tag", "T", "only tools with this tag (any case)"),
    "provider": ("--provider", "P", "only tools of this provider"),
    "auth": ("--auth", "KIND", f"only tools of this auth kind ({', '.join(AuthType)})"),
}
_FILTER_NAMES = {key: option for key, (option, _, _) in _FILTER_OPTIONS.items()}  # in its errors


def _filter_arguments(p: argparse.ArgumentParser) -> None:
    group = p.add_argument_group(
        "filter",
        "rank only the tools these allow: a tool must pass every option given, and one of the values of "
        "an option given more than once (each option is repeatable)",
    )
    for key, (option, metavar, text) in _FILTER_OPTIONS.items():
        group.add_argument(option, dest=key, action="append", metavar=metavar, help=text)


def _tool_filter(args: argparse.Namespace) -> ToolFilter | None:
    """The filter the options make (None without any); a bad auth kind is a QueryError."""
    return ToolFilter.parse({key: getattr(args, key) for key in _FILTER_OPTIONS})


def _shown_filter(where: ToolFilter | None) -> str:
    """``where`` as the options that make it, e.g. ``--exclude gmail.send --source mcp``."""
    given = where.as_dict() if where is not None else {}
    return shlex.join(
        [part for key, values in given.items() for v in values for part in (_FILTER_NAMES[key], v)]
    )


def _json(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", action="store_true", help="print one JSON document instead of tables")


# ---- handlers ----------------------------------------------------------------------------------------
class _IndexSummary(TypedDict):
    """What ``rated index`` prints (``--json``: as it is)."""

    db: str
    tools: int
    encoder: str
    policy: str
    seconds: float


def _index(args: argparse.Namespace) -> int:
    from rated.encode import encoder_from_spec
    from rated.retriever import Retriever
    from rated.retriever_setup import describe_db

    given = {"dense_kind": args.dense, "hnsw_threshold": args.hnsw_threshold}
    semantic = {key: value for key, value in given.items() if value is not None}  # else the defaults
    encoder = encoder_from_spec(args.encoder, progress=not args.json)
    start = time.perf_counter()
    try:
        built = Retriever.from_catalog(
            args.catalog,
            db=args.db,
            encoder=encoder,
            policy=args.policy,
            candidates=args.candidates,
            overwrite=args.force,
            progress=not args.json,
            **({"semantic": semantic} if semantic else {}),
        )
    except IndexExistsError:  # the library's message names its API; say what to type instead
        raise ConfigError(
            f"{describe_db(args.db)} already holds an index: `rated sync {shlex.quote(args.catalog)}` "
            "with the same --db updates it, keeping the learned state (`rated add` adds new tools only); "
            "`rated index --force` replaces it (the learned state is lost)"
        ) from None
    with built as r:
        seconds = time.perf_counter() - start
        summary: _IndexSummary = {
            "db": describe_db(args.db),  # a redis:// password is never printed
            "tools": len(r),
            "encoder": str(r.meta.encoder),
            "policy": r.meta.policy,
            "seconds": round(seconds, 3),
        }
    if args.json:
        print_json(summary)
    else:
        console.print(
            f"indexed [bold]{n_tools(summary['tools'])}[/] into [bold]{escape(summary['db'])}[/] "
            f"in {seconds:.1f} s "
            f"(encoder {escape(summary['encoder'])}, policy {escape(summary['policy'])})",
            soft_wrap=True,
        )
    return 0


def _search(args: argparse.Namespace) -> int:
    from rated.retriever import Retriever

    with named_as(_FILTER_NAMES):
        where = _tool_filter(args)  # checked before the database is opened
        with Retriever.open(args.db) as r:
            hits = r.retrieve(args.query, k=args.k, where=where)
    degraded = any(h.degraded for h in hits)
    if args.format is not None:  # still a file rated reads back: load_catalog takes {"tools": [...]}
        defs = tool_definitions(hits, args.format)
        tool_ids = {name: tool_id for tool_id, name in defs.names.items()}
        print_json(
            {
                "query": args.query,
                "format": defs.format,
                "degraded": degraded,
                "tools": defs.definitions,
                "tool_ids": tool_ids,
            }
        )
        return 0
    if args.json:
        print_json(
            {"query": args.query, "k": args.k, "degraded": degraded, "hits": [h.to_dict() for h in hits]}
        )
        return 0
    if not hits:  # only a filter can leave nothing: the index is never empty
        console.print(
            f"no tool matches the filter ({escape(_shown_filter(where))})", soft_wrap=True, highlight=False
        )
        return 0
    table = Table(title=f"top {len(hits)} for {escape(repr(args.query))}", title_justify="left")
    for col in ("#", "tool", "score", "semantic", "bandit", "prior", "healthy"):
        table.add_column(
            col, justify="right" if col not in ("tool", "healthy") else "left", overflow=_overflow(col)
        )
    for h in hits:
        table.add_row(
            str(h.rank),
            escape(h.id),
            _f(h.score),
            _f(h.semantic),
            _f(h.bandit),
            _f(h.prior),
            "yes" if h.healthy else "[red]no[/]",
        )
    console.print(table)
    if degraded:
        console.print("[yellow]warning:[/] no candidate looked healthy; ranked anyway (fail open)")
    return 0


def _feedback(args: argparse.Namespace) -> int:
    from rated.reported import reported_outcome
    from rated.retired import is_evidence, status_of
    from rated.retriever import Retriever

    headers = None if args.headers is None else _headers(args.headers)
    # checked before the database is opened; as stored: "SUCCESS" is recorded as "success"
    reported = reported_outcome(
        args.outcome, status=args.status, headers=headers, retry_after=args.retry_after
    )
    with Retriever.open(args.db) as r:
        learned = r.feedback(args.tool_id, reported, query=args.query).kind  # what the policy learned
        tool_id, healthy, retired = args.tool_id, None, None
        try:
            health = r.health(args.tool_id, stats=False)
        except (UnknownToolError, StoreError) as exc:  # removed, or the index rebuilt, since recorded:
            err_console.print(  # recorded already: an error exit would have it reported (and logged) twice
                f"[yellow]warning:[/] recorded, but the tool's health could not be read: {escape(str(exc))}",
                highlight=False,
                soft_wrap=True,
            )
        else:  # as the catalog spells it (Unicode form), as POST /feedback answers
            tool_id, healthy = health.tool.id, health.healthy
        if healthy is not None and is_evidence(reported):  # a 404/410: the tool's run of them now
            try:
                retired = status_of(r, [tool_id]).get(tool_id)
            # whatever fails (a store of one's own raising its own errors too): recorded already, an error
            # exit would have it reported again; POST /feedback answers without the run as well
            except Exception as exc:
                said = str(exc) if isinstance(exc, RatedError) else f"{type(exc).__name__}: {exc}"
                err_console.print(
                    f"[yellow]warning:[/] could not read the retired-endpoint evidence: {escape(said)}",
                    highlight=False,
                    soft_wrap=True,
                )
    outcome = reported.kind.value
    counted = None if learned is reported.kind else learned
    if args.json:
        answer: dict[str, Any] = {
            "tool_id": tool_id,
            "outcome": outcome,
            "retry_after": reported.retry_after,
            "recorded": True,
            "healthy": healthy,
        }
        if counted is not None:  # as POST /feedback answers: only a 404/410 adds to it
            answer["counted_as"] = counted.value
        if retired is not None:
            answer["retired"] = retired.to_dict()
        print_json(answer)
    else:
        state = {True: "healthy", False: "[red]unhealthy[/]", None: "health unknown"}[healthy]
        notes = [f"HTTP {args.status}"] if args.status is not None else []
        if reported.retry_after is not None:
            notes.append(f"retry after {reported.retry_after:g} s")
        said = f" ({'; '.join(notes)})" if notes else ""
        console.print(f"recorded [bold]{outcome}[/]{said} for [bold]{escape(tool_id)}[/]; now {state}")
        if retired is not None:  # a 404/410: how the retired-endpoint rule weighed it
            line = f"retired-endpoint rule: {escape(retired.describe())}"
            if counted is not None:
                line = f"[red]{line}[/]; the outcome log keeps {outcome}"
            console.print(line, soft_wrap=True, highlight=False)
    return 0


def _tools(args: argparse.Namespace) -> int:
    from rated.retired import with_status
    from rated.retriever import Retriever
    from rated.retriever_setup import describe_db

    with Retriever.open(args.db) as r:
        rows = [t for t in with_status(r, r.tools()) if not (args.unhealthy and t.healthy)]
    if args.json:
        print_json([t.to_dict() for t in rows])
        return 0
    if not rows:  # a title over an empty table reads like a failed listing
        console.print(f"no unhealthy tools in {escape(describe_db(args.db))}", soft_wrap=True)
        return 0
    what = n_tools(len(rows), "unhealthy tool" if args.unhealthy else "tool")
    table = Table(title=f"{what} in {escape(describe_db(args.db))}", title_justify="left")
    cols = ("tool", "source", "prior", "healthy", "ok", "failed", "caller err", "last outcome", "retired")
    for col in cols:
        table.add_column(
            col,
            justify="right" if col in ("prior", "ok", "failed", "caller err") else "left",
            overflow=_overflow(col),
        )
    for t in rows:
        d = t.to_dict()
        table.add_row(
            escape(d["id"]),
            escape(d["source"]),
            _f(d["prior"]),
            "yes" if t.healthy else "[red]no[/]",
            str(d["successes"]),
            str(d["failures"]),
            str(d["caller_errors"]),
            d["last_outcome"] or "",
            _retired(t.retired),
        )
    console.print(table)
    if any(t.retired is not None for t in rows):
        console.print(
            "retired: different queries answered 404/410 since the tool's last success / how many the rule "
            "needs; yes: counted as tool_error until a call succeeds (a retired endpoint? rated.retired)",
            soft_wrap=True,
            highlight=False,
        )
    return 0


# ---- helpers -----------------------------------------------------------------------------------------
def _headers(lines: list[str]) -> dict[str, str]:
    """``--header 'Name: value'`` options as a map (the first of a repeated name wins, as a client's
    header lookup does)."""
    headers: dict[str, str] = {}
    for line in lines:
        name, colon, value = line.partition(":")
        if not colon or not name.strip():
            raise ConfigError(f"--header {shown(line)}: expected 'NAME: VALUE', e.g. 'Retry-After: 120'")
        headers.setdefault(name.strip(), value.strip())
    return headers


def _overflow(col: str) -> Any:
    """A narrow terminal wraps a tool id onto more lines, never cuts it to 'outlook.s…': people copy it
    into ``rated feedback``."""
    return "fold" if col == "tool" else "ellipsis"


def _retired(status: RetiredStatus | None) -> str:
    """The retired column: ``yes 3/3`` when the rule holds (different queries / how many it needs),
    ``no 1/3`` (``no 4/-``: it never could), or empty (no run)."""
    if status is None:
        return ""
    of = f"{status.queries}/{'-' if status.need is None else status.need}"
    return f"[red]yes[/] {of}" if status.holds else f"no {of}"


def _f(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"
