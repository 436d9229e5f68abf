"""Training rows from synthetic pairs or a benchmark's train split, and batches without false negatives.

A row is (query, positive tool, negative tools); batches are filled so that no document in a batch belongs
to the duplicate group of another row's positive (a repeated tool, the same integration listed twice, or
another relevant tool of a multi-tool query): such a column would be a false negative. No torch here.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

from rated.bench.dataset import Dataset
from rated.catalog.schema import Tool
from rated.encode.train.config import TrainConfig
from rated.errors import DataError
from rated.synth.records import SynthQuery

__all__ = ["TrainRow", "make_batches", "rows_from_dataset", "rows_from_pairs"]


@dataclass(frozen=True)
class TrainRow:
    """One training example: query, positive tool, negative tools, and the groups it must not meet.

    ``banned`` holds the duplicate groups of every tool relevant to the query (its positive's included).
    """

    query: str
    positive: str
    negatives: tuple[str, ...]
    banned: frozenset[str]
    doc_groups: frozenset[str]


def _groups(tools: Sequence[Tool]) -> dict[str, str]:
    return {t.id: t.group or t.id for t in tools}


def _fill_negatives(
    picked: list[str], n: int, banned: set[str], group_of: dict[str, str], ids: list[str], rng: random.Random
) -> tuple[str, ...]:
    out = [x for x in picked if x in group_of and group_of[x] not in banned][:n]
    for _ in range(50 * n):
        if len(out) >= n:
            break
        cand = ids[rng.randrange(len(ids))]
        if group_of[cand] not in banned and cand not in out:
            out.append(cand)
    if len(out) < n:
        raise DataError(f"the pool is too small to draw {n} negative(s) outside the positive's group")
    return tuple(out)


def _row(
    query: str, pos: str, relevant: Sequence[str], picked: list[str], n_neg: int, ctx: tuple
) -> TrainRow:
    group_of, ids, rng = ctx
    banned = {group_of[r] for r in relevant}
    negs = _fill_negatives(picked, n_neg, banned, group_of, ids, rng)
    return TrainRow(
        query, pos, negs, frozenset(banned), frozenset({group_of[pos], *(group_of[n] for n in negs)})
    )


def rows_from_pairs(
    records: Sequence[SynthQuery], tools: Sequence[Tool], config: TrainConfig, split: str = "train"
) -> list[TrainRow]:
    """Training rows from synthetic pairs of ``split``; missing negatives are drawn at random (seeded)."""
    group_of = _groups(tools)
    unknown = sorted({r.tool_id for r in records} - set(group_of))
    if unknown:
        raise DataError(f"{len(unknown)} tool id(s) in the pairs are not in the catalog, e.g. {unknown[0]!r}")
    ctx = (group_of, list(group_of), random.Random(config.seed))
    n_neg = config.hard_negatives + config.random_negatives
    rows = []
    for rec in records:
        if rec.split != split:
            continue
        hard = [h for h in rec.hard_negatives if h in group_of and group_of[h] != group_of[rec.tool_id]]
        picked = hard[: config.hard_negatives] + list(rec.random_negatives)
        rows.append(_row(rec.text, rec.tool_id, [rec.tool_id], picked, n_neg, ctx))
    return rows


def rows_from_dataset(dataset: Dataset, tools: Sequence[Tool], config: TrainConfig) -> list[TrainRow]:
    """Rows from a benchmark dataset's *train* split (real queries): one row per relevant tool."""
    group_of = _groups(tools)
    ctx = (group_of, list(group_of), random.Random(config.seed + 1))
    n_neg = config.hard_negatives + config.random_negatives
    rows = []
    for q in dataset.split("train"):
        for pos in q.relevant:
            rows.append(_row(q.text, pos, q.relevant, [], n_neg, ctx))
    return rows


def make_batches(rows: Sequence[TrainRow], batch_size: int, rng: random.Random) -> list[list[int]]:
    """Shuffle, then fill batches greedily so no row's document is in another row's banned groups.

    A row that does not fit waits for the next batch, so every row is used once per epoch; batches can be
    smaller than ``batch_size`` when the pool has fewer distinct groups than that.
    """
    pending = list(range(len(rows)))
    rng.shuffle(pending)
    batches: list[list[int]] = []
    while pending:
        batch: list[int] = []
        banned: set[str] = set()
        docs: set[str] = set()
        rest: list[int] = []
        for k, i in enumerate(pending):
            r = rows[i]
            if not (r.banned & docs) and not (r.doc_groups & banned):
                batch.append(i)
                banned |= r.banned
                docs |= r.doc_groups
                if len(batch) == batch_size:
                    rest.extend(pending[k + 1 :])
                    break
            else:
                rest.append(i)
        batches.append(batch)
        pending = rest
    return batches
