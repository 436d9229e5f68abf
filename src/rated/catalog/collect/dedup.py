"""Deduplication: exact duplicates removed, near-duplicates across platforms linked by a shared ``group``.

- **Exact**: the same normalised name, description and parameters (whatever the source). The first tool in
  catalog order is kept (sources in build order, then by id) and lists the others under
  ``extra["duplicates"]``.
- **Near**: two tools from *different* sources that are each other's closest tool in the other's source
  (name+description TF-IDF cosine), with a cosine of at least ``same_integration`` when they wrap the same
  service (``extra["integration"]``), or at least ``any_integration`` otherwise. Linked tools
  (transitively) share ``group = "group:<smallest member id>"``,
  which depends only on the members, so it is stable across runs. Training uses the group so that one
  listing of an integration is never a negative for another listing of it.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from rated.catalog.schema import Tool
from rated.catalog.text import split_identifier

__all__ = ["DedupResult", "dedupe", "exact_key"]

SAME_INTEGRATION = 0.25
ANY_INTEGRATION = 0.75


@dataclass(frozen=True)
class DedupResult:
    tools: list[Tool]
    removed: int  # exact duplicates dropped
    groups: int  # near-duplicate groups (of two or more tools)
    grouped: int  # tools that belong to a group


def exact_key(tool: Tool) -> tuple[str, str, str]:
    """What makes two records the same tool: case/space-normalised name and description, and parameters."""
    return (
        " ".join(tool.name.lower().split()),
        " ".join(tool.description.lower().split()),
        json.dumps(tool.parameters, sort_keys=True, default=str),
    )


def dedupe(
    tools: Sequence[Tool],
    *,
    same_integration: float = SAME_INTEGRATION,
    any_integration: float = ANY_INTEGRATION,
) -> DedupResult:
    """Drop exact duplicates and set ``group`` on near-duplicate listings across sources."""
    kept: list[Tool] = []
    first: dict[tuple[str, str, str], int] = {}
    dropped: dict[int, list[str]] = {}
    for tool in tools:
        key = exact_key(tool)
        if key in first:
            dropped.setdefault(first[key], []).append(tool.id)
            continue
        first[key] = len(kept)
        kept.append(tool)
    for i, ids in dropped.items():
        kept[i] = kept[i].model_copy(update={"extra": {**kept[i].extra, "duplicates": sorted(ids)}})
    group_of = _near_groups(kept, same_integration, any_integration)
    members: dict[str, int] = {}
    for g in group_of.values():
        members[g] = members.get(g, 0) + 1
    out = [t.model_copy(update={"group": group_of[t.id]}) if t.id in group_of else t for t in kept]
    return DedupResult(
        tools=out,
        removed=sum(len(v) for v in dropped.values()),
        groups=len(members),
        grouped=sum(members.values()),
    )


def _near_groups(tools: list[Tool], same: float, anywhere: float) -> dict[str, str]:
    """Link mutual best matches between sources: within one integration at ``same``, anywhere at ``anywhere``.

    Mutual best (each is the other's closest tool in the other's source) keeps groups small: an API-level
    listing pairs with one operation of that API per platform, not with all of them.
    """
    n = len(tools)
    source_names = sorted({t.source for t in tools})
    if len(source_names) < 2:
        return {}
    from sklearn.feature_extraction.text import TfidfVectorizer  # heavy import, only when deduplicating

    texts = [f"{split_identifier(t.name)}. {t.description}" for t in tools]
    matrix = TfidfVectorizer(sublinear_tf=True, dtype=np.float32).fit_transform(texts).tocsr()
    src = np.array([source_names.index(t.source) for t in tools])
    integ_names = sorted({_integration(t) for t in tools})
    integ = np.array([integ_names.index(_integration(t)) for t in tools])
    no_integ = integ_names.index("") if "" in integ_names else -1
    n_src = len(source_names)
    best_any = np.full((n, n_src), -1, dtype=np.int64)
    best_int = np.full((n, n_src), -1, dtype=np.int64)
    sim_any = np.zeros((n, n_src), dtype=np.float32)
    sim_int = np.zeros((n, n_src), dtype=np.float32)
    for start in range(0, n, 512):
        rows = np.arange(start, min(start + 512, n))
        sims = (matrix[rows] @ matrix.T).toarray()
        sims[src[rows][:, None] == src[None, :]] = -1.0
        same_int = (integ[rows][:, None] == integ[None, :]) & (integ[rows][:, None] != no_integ)
        sims_int = np.where(same_int, sims, -1.0)
        for s in range(n_src):
            cols = np.flatnonzero(src == s)
            for table, sim_table, values in ((best_any, sim_any, sims), (best_int, sim_int, sims_int)):
                pick = np.argmax(values[:, cols], axis=1)
                table[rows, s] = cols[pick]
                sim_table[rows, s] = values[np.arange(len(rows)), cols[pick]]
    links: set[tuple[float, str, str, int, int]] = set()
    for table, sim_table, threshold in ((best_int, sim_int, same), (best_any, sim_any, anywhere)):
        for i in range(n):
            for s in range(n_src):
                j = int(table[i, s])
                if j > i and sim_table[i, s] >= threshold and table[j, src[i]] == i:
                    links.add((-float(sim_table[i, s]), tools[i].id, tools[j].id, i, j))
    # strongest links first; a group never holds two tools of one source (no chaining through a third)
    parent = list(range(n))
    members_src: dict[int, set[int]] = {i: {int(src[i])} for i in range(n)}

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for _, _, _, i, j in sorted(links):
        a, b = find(i), find(j)
        if a != b and not (members_src[a] & members_src[b]):
            parent[a] = b
            members_src[b] |= members_src.pop(a)
    roots: dict[int, list[int]] = {}
    for i in range(n):
        roots.setdefault(find(i), []).append(i)
    group_of: dict[str, str] = {}
    for members in roots.values():
        if len(members) < 2:
            continue
        name = "group:" + min(tools[m].id for m in members)
        for m in members:
            group_of[tools[m].id] = name
    return group_of


def _integration(tool: Tool) -> str:
    key = tool.extra.get("integration")
    return str(key) if key else ""
