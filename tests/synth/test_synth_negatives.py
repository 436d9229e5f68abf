"""Hard negatives are high-ranked non-duplicates; random negatives avoid the group; splits are stable."""

from __future__ import annotations

import numpy as np
import pytest

from rated.catalog.schema import Tool
from rated.encode.testing import HashEncoder
from rated.synth.negatives import mine_hard_negatives, sample_random_negatives
from rated.synth.records import SynthQuery
from rated.synth.splits import assign_splits


class TableEncoder:
    """Fixed vectors per text, so rankings are known exactly."""

    name, dim = "table", 3

    def __init__(self, table):
        self.table = table

    def encode_queries(self, texts, *, batch_size=64, progress=False):
        return np.array([self.table[t] for t in texts], dtype=np.float32)

    encode_tools = encode_queries


def _pool():
    return [
        Tool(id="pos", name="pos", description="p"),
        Tool(id="dup", name="dup", description="d", group="pos"),  # same integration, other platform
        Tool(id="near", name="near", description="n"),  # scores almost as high as the positive
        Tool(id="hard", name="hard", description="h"),
        Tool(id="far", name="far", description="f"),
    ]


def _encoder():
    from rated.catalog.text import tool_text

    tools = _pool()
    vec = {
        "pos": [1.0, 0.0, 0.0],
        "dup": [1.0, 0.0, 0.0],
        "near": [0.99, 0.141, 0.0],
        "hard": [0.8, 0.6, 0.0],
        "far": [0.0, 0.0, 1.0],
    }
    table = {tool_text(t): np.array(vec[t.id]) for t in tools}
    table["q"] = np.array([1.0, 0.0, 0.0])
    return TableEncoder(table)


def test_hard_negatives_skip_group_and_near_duplicates():
    tools, enc = _pool(), _encoder()
    # group member "dup" is never a negative; "near" (0.99 > 0.95 * 1.0) is skipped as a likely duplicate
    assert mine_hard_negatives(["q"], ["pos"], tools, enc, n=2) == [("hard", "far")]
    # without the margin guard, "near" is the hardest
    assert mine_hard_negatives(["q"], ["pos"], tools, enc, n=1, margin=0) == [("near",)]
    # the positive's own listing under the other id treats "pos" as its group too
    assert mine_hard_negatives(["q"], ["dup"], tools, enc, n=1, margin=0) == [("near",)]
    # only the top-2 are candidates: pos and dup, both excluded
    assert mine_hard_negatives(["q"], ["pos"], tools, enc, n=1, top=2) == [()]
    assert mine_hard_negatives(["q"], ["pos"], tools, enc, n=0) == [()]


def test_random_negatives_avoid_group_and_exclusions_and_are_seeded():
    tools = _pool()
    a = sample_random_negatives(["pos"] * 20, tools, n=2, exclude=[("hard",)] * 20, seed=3)
    b = sample_random_negatives(["pos"] * 20, tools, n=2, exclude=[("hard",)] * 20, seed=3)
    assert a == b
    assert all(len(x) == 2 and not {"pos", "dup", "hard"} & set(x) for x in a)
    assert {x for pair in a for x in pair} == {"near", "far"}


def test_hash_encoder_mining_runs_on_a_real_pool():
    tools = [
        Tool(id=f"t{i}", name=f"tool {i}", description=f"does thing {i} with widgets") for i in range(30)
    ]
    out = mine_hard_negatives(["thing 3 widgets"], ["t3"], tools, HashEncoder(dim=128), n=3)
    assert len(out[0]) == 3 and "t3" not in out[0]


def _records(n_tools=10, per_tool=10):
    return [
        SynthQuery(id=f"t{t}#{k}", text=f"q{k}", tool_id=f"t{t}", group=f"t{t}")
        for t in range(n_tools)
        for k in range(per_tool)
    ]


def test_splits_are_seeded_and_order_independent():
    recs = _records()
    a = assign_splits(recs, val_fraction=0.2, test_fraction=0.1, seed=1)
    b = assign_splits(list(reversed(recs)), val_fraction=0.2, test_fraction=0.1, seed=1)
    assert {r.id: r.split for r in a} == {r.id: r.split for r in b}
    counts = {s: sum(r.split == s for r in a) for s in ("train", "val", "test")}
    assert counts == {"train": 70, "val": 20, "test": 10}
    c = assign_splits(recs, val_fraction=0.2, test_fraction=0.1, seed=2)
    assert {r.id: r.split for r in a} != {r.id: r.split for r in c}


def test_unseen_tools_hold_every_query_of_their_group():
    out = assign_splits(_records(), val_fraction=0.1, unseen_fraction=0.3, seed=0)
    unseen = {r.group for r in out if r.split == "unseen"}
    assert len(unseen) == 3
    assert all(r.split == "unseen" for r in out if r.group in unseen)
    assert not any(r.split == "unseen" for r in out if r.group not in unseen)


@pytest.mark.parametrize("kw", [{"val_fraction": 1.0}, {"val_fraction": 0.6, "test_fraction": 0.5}])
def test_splits_reject_bad_fractions(kw):
    with pytest.raises(ValueError):
        assign_splits(_records(), **kw)
