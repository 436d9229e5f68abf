"""StableToolBench (ToolBench test queries) as a tool-retrieval benchmark, at API or tool level.

Read from ``data_dir()/stabletoolbench`` (six JSON files, 765 queries). The pool is the union of every
query's ``api_list``. At ``api`` level a tool is one ``(tool_name, api_name)`` pair (id
``"<tool_name>::<api_name>"``; the RapidAPI tool is its ``provider``, its category a tag); at ``tool``
level a tool is a whole RapidAPI tool (id ``tool_name``) whose description lists its APIs. Labels are the
``relevant APIs`` (several per query), mapped to the level.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rated.bench.dataset import Dataset, Query
from rated.bench.datasets.common import Prepared, Problems, assign_splits, check_labels, data_root, read_json
from rated.catalog.schema import Tool
from rated.catalog.text import normalise_space
from rated.errors import DataError

__all__ = ["FILES", "LEVELS", "load_stabletoolbench"]

FILES = (
    "G1_category.json",
    "G1_instruction.json",
    "G1_tool.json",
    "G2_category.json",
    "G2_instruction.json",
    "G3_instruction.json",
)
LEVELS = ("api", "tool")
FRACTIONS = (0.2, 0.3, 0.5)
SEED = 0


def _api_id(tool_name: str, api_name: str) -> str:
    return f"{tool_name.strip()}::{api_name.strip()}"


def _schema(api: dict[str, Any]) -> dict[str, Any]:
    props: dict[str, Any] = {}
    required = []
    for kind in ("required_parameters", "optional_parameters"):
        for p in api.get(kind) or []:
            name = str(p.get("name") or "").strip()
            if not name:
                continue
            spec = {"type": str(p.get("type") or "string").lower()}
            if (p.get("description") or "").strip():
                spec["description"] = normalise_space(str(p["description"]))
            props.setdefault(name, spec)
            if kind == "required_parameters":
                required.append(name)
    return {"type": "object", "properties": props, "required": required} if props else {}


def _read(root: Path) -> list[tuple[str, dict[str, Any]]]:
    entries: list[tuple[str, dict[str, Any]]] = []
    for name in FILES:
        entries.extend((name, e) for e in read_json(root / name))
    return entries


def load_stabletoolbench(level: str = "api", root: Path | None = None) -> Prepared:
    """Convert the StableToolBench test queries (``level``: ``api`` or ``tool``)."""
    if level not in LEVELS:
        raise DataError(f"unknown StableToolBench level {level!r}; expected one of {', '.join(LEVELS)}")
    root = data_root(root, "stabletoolbench")
    problems = Problems()
    apis: dict[str, dict[str, Any]] = {}
    raw_queries: list[tuple[str, str, list[str]]] = []
    for fname, entry in _read(root):
        group = fname.removesuffix(".json")
        offered = set()
        for api in entry["api_list"]:
            key = _api_id(api["tool_name"], api["api_name"])
            offered.add(key)
            if key in apis and apis[key]["api_description"] != api["api_description"]:
                problems.add(f"API {key!r} appears with two descriptions; the first is kept")
            apis.setdefault(key, api)
        rel = []
        for pair in entry["relevant APIs"]:
            key = _api_id(pair[0], pair[1])
            if key not in offered:
                problems.add(f"query {group}/{entry['query_id']}: label {key!r} not in its api_list")
            rel.append(key)
        raw_queries.append((f"{group}/{entry['query_id']}", str(entry["query"]), rel))

    if level == "api":
        tools = [_api_tool(key, api) for key, api in sorted(apis.items())]
        label = {key: key for key in apis}
    else:
        tools = _tool_level(apis)
        label = {key: str(api["tool_name"]).strip() for key, api in apis.items()}
    queries = [
        Query(qid, text, tuple(dict.fromkeys(label.get(r, r) for r in rel))) for qid, text, rel in raw_queries
    ]
    splits = assign_splits([q.id for q in queries], FRACTIONS, SEED)
    queries = [Query(q.id, q.text, q.relevant, s) for q, s in zip(queries, splits, strict=True)]
    queries = check_labels(queries, {t.id for t in tools}, problems)
    meta = {
        "source": "StableToolBench solvable_queries/test_instruction (Apache-2.0)",
        "level": level,
        "split_fractions": list(FRACTIONS),
        "split_seed": SEED,
    }
    return Prepared(Dataset(f"stabletoolbench-{level}", tools, queries, meta), [], problems)


def _api_tool(key: str, api: dict[str, Any]) -> Tool:
    return Tool(
        id=key,
        name=str(api["api_name"]).strip(),
        description=normalise_space(str(api.get("api_description") or "")),
        source="rapidapi",
        parameters=_schema(api),
        provider=str(api["tool_name"]).strip(),
        tags=(str(api["category_name"]),) if api.get("category_name") else (),
        extra={"method": api.get("method")} if api.get("method") else {},
    )


def _tool_level(apis: dict[str, dict[str, Any]]) -> list[Tool]:
    by_tool: dict[str, list[dict[str, Any]]] = {}
    for _, api in sorted(apis.items()):
        by_tool.setdefault(str(api["tool_name"]).strip(), []).append(api)
    tools = []
    for name, members in sorted(by_tool.items()):
        parts = []
        for api in members:
            desc = normalise_space(str(api.get("api_description") or "")).rstrip(".")
            api_name = str(api["api_name"]).strip()
            parts.append(f"{api_name} ({desc})" if desc else api_name)
        categories = tuple(dict.fromkeys(str(a["category_name"]) for a in members if a.get("category_name")))
        tools.append(
            Tool(
                id=name,
                name=name,
                description="APIs: " + "; ".join(parts) + ".",
                source="rapidapi",
                provider=name,
                tags=categories,
                extra={"apis": [str(a["api_name"]).strip() for a in members]},
            )
        )
    return tools
