"""Train/validation/test splits of synthetic queries: by query with a fixed seed, plus unseen tools.

A query split tells whether the model learned the tools it was trained on; an "unseen" split (every query of
a held-out set of tool groups) tells whether it still works for tools added after training, which is how the
retriever is used: new tools are encoded, never trained on.

>>> from rated.synth.records import SynthQuery
>>> recs = [SynthQuery(id=str(i), text="q", tool_id=f"t{i % 5}", group=f"t{i % 5}") for i in range(100)]
>>> out = assign_splits(recs, val_fraction=0.1, unseen_fraction=0.2, seed=0)
>>> sorted({r.split for r in out})
['train', 'unseen', 'val']
>>> len({r.group for r in out if r.split == "unseen"})
1
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import replace

from rated.synth.records import SynthQuery

__all__ = ["SPLIT_NAMES", "assign_splits"]

SPLIT_NAMES = ("train", "val", "test", "unseen")


def assign_splits(
    records: Sequence[SynthQuery],
    *,
    val_fraction: float = 0.1,
    test_fraction: float = 0.0,
    unseen_fraction: float = 0.0,
    seed: int = 0,
) -> list[SynthQuery]:
    """Return copies of ``records`` with ``split`` set; the same inputs and seed give the same splits.

    ``unseen_fraction`` of the tool groups (rounded, at least one when positive) put all their queries in
    ``unseen``; the other queries go to ``val``/``test``/``train`` by the given fractions.
    """
    for name, frac in (("val", val_fraction), ("test", test_fraction), ("unseen", unseen_fraction)):
        if not 0.0 <= frac < 1.0:
            raise ValueError(f"{name}_fraction must be in [0, 1), got {frac}")
    if val_fraction + test_fraction >= 1.0:
        raise ValueError("val_fraction + test_fraction must be below 1")
    rng = random.Random(seed)
    groups = sorted({r.group for r in records})
    n_unseen = round(unseen_fraction * len(groups))
    if unseen_fraction > 0 and n_unseen == 0 and len(groups) > 1:
        n_unseen = 1
    unseen = set(rng.sample(groups, n_unseen)) if n_unseen else set()
    seen_idx = [i for i, r in enumerate(records) if r.group not in unseen]
    order = sorted(seen_idx, key=lambda i: records[i].id)  # independent of input order
    rng.shuffle(order)
    n_val = round(val_fraction * len(order))
    n_test = round(test_fraction * len(order))
    split_of = {i: "val" for i in order[:n_val]}
    split_of.update({i: "test" for i in order[n_val : n_val + n_test]})
    out = []
    for i, rec in enumerate(records):
        split = "unseen" if rec.group in unseen else split_of.get(i, "train")
        out.append(replace(rec, split=split))
    return out
