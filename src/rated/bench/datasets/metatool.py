"""MetaTool (ToolE) as a tool-retrieval benchmark: 199 ChatGPT-plugin tools, about 20k real queries.

Read from ``data_dir()/metatool``. A query text that appears with several tools gets all of them as
labels. The two-tool queries of ``multi_tool_query_golden.json`` join the pool of queries (ids
``multi-<n>``). The split is by query, stratified by the first relevant tool and fixed by a seed, so every
tool has queries in each split; results on it are in-domain for any model trained on the train split.
"""

from __future__ import annotations

import csv
from pathlib import Path

from rated.bench.dataset import Dataset, Query
from rated.bench.datasets.common import (
    Prepared,
    Problems,
    assign_splits,
    check_labels,
    data_root,
    read_json,
    require_file,
)
from rated.catalog.schema import Tool
from rated.catalog.text import normalise_space

__all__ = ["load_metatool"]

FRACTIONS = (0.8, 0.1, 0.1)
SEED = 0


def load_metatool(root: Path | None = None, include_multi: bool = True) -> Prepared:
    """Convert MetaTool's single-tool (and, with ``include_multi``, two-tool) queries."""
    root = data_root(root, "metatool")
    problems = Problems()
    descriptions: dict[str, str] = read_json(root / "plugin_des.json")
    info = {
        str(p.get("name_for_model")): p for p in read_json(root / "plugin_info.json") if isinstance(p, dict)
    }
    tools = []
    for name, desc in sorted(descriptions.items()):
        extra = {}
        if name in info:
            extra = {
                k: info[name][k] for k in ("name_for_human", "description_for_model") if info[name].get(k)
            }
        tools.append(
            Tool(
                id=name,
                name=name,
                description=normalise_space(str(desc)),
                source="chatgpt_plugin",
                extra=extra,
            )
        )

    csv_path = require_file(root / "all_clean_data.csv")
    labels: dict[str, list[str]] = {}
    with csv_path.open(encoding="utf-8", newline="") as fh:
        for lineno, row in enumerate(csv.DictReader(fh), 2):
            text, tool = (row.get("Query") or "").strip(), (row.get("Tool") or "").strip()
            if not text or not tool:
                problems.add(f"{csv_path.name} line {lineno}: empty query or tool, left out")
                continue
            rel = labels.setdefault(text, [])
            if tool not in rel:
                rel.append(tool)
    queries = [Query(f"q{i}", text, tuple(rel)) for i, (text, rel) in enumerate(labels.items())]
    if include_multi:
        for i, item in enumerate(read_json(root / "multi_tool_query_golden.json")):
            text = str(item.get("query") or "").strip()
            queries.append(Query(f"multi-{i}", text, tuple(dict.fromkeys(map(str, item.get("tool") or [])))))
    splits = assign_splits(
        [q.id for q in queries],
        FRACTIONS,
        SEED,
        strata=[q.relevant[0] if q.relevant else "" for q in queries],
    )
    queries = [Query(q.id, q.text, q.relevant, s) for q, s in zip(queries, splits, strict=True)]
    queries = check_labels(queries, {t.id for t in tools}, problems)
    meta = {
        "source": "MetaTool dataset/ (MIT)",
        "split_fractions": list(FRACTIONS),
        "split_seed": SEED,
        "stratified_by": "first relevant tool",
    }
    return Prepared(Dataset("metatool", tools, queries, meta), [], problems)
