"""Replicas sharing one store (``rated serve`` workers, hosts): each prober's waits are jittered and its
targets drawn among the policy's top few, so replicas drift apart and check different tools; and what one
replica's probe found goes through the store, so the others stop checking that tool at their next round."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from rated import Tool
from rated.encode.testing import HashEncoder
from rated.probing import SPREAD, Prober, _spread, probe
from rated.retriever import Retriever

IDS = tuple(f"t{i}" for i in range(9))


def tools() -> list[Tool]:
    return [Tool(id=i, name=f"tool_{i}", description=f"tool number {i}") for i in IDS]


def fail_in_order(r: Retriever, clock) -> None:
    """Every tool fails once, t0 first: the longer ago, the more demand missed, so t0 ranks first."""
    for tool_id in IDS:
        r.feedback(tool_id, "tool_error")
        clock.t += 1
    clock.t += 5


@pytest.fixture
def suspects(clock):
    with Retriever.from_catalog(tools(), encoder=HashEncoder(32), clock=clock) as r:
        fail_in_order(r, clock)
        assert r.probe_targets(9) == list(IDS)
        yield r


def checked(r: Retriever, budget: int, rng: random.Random | None) -> list[str]:
    """The tools one round checks (the check answers None: nothing recorded, the suspects stay)."""
    return [result.tool_id for result in probe(r, lambda tool: None, budget, rng=rng)]


def test_without_a_generator_a_round_checks_the_policys_top_targets(suspects):
    assert checked(suspects, 2, None) == ["t0", "t1"]
    assert checked(suspects, 2, None) == ["t0", "t1"]  # every round, every replica


def test_with_one_the_targets_are_drawn_among_the_top_few_weighted_to_the_top(suspects):
    rng = random.Random(7)
    rounds = [checked(suspects, 2, rng) for _ in range(300)]
    counts = Counter(tool_id for chosen in rounds for tool_id in chosen)
    pool = IDS[: SPREAD * 2]
    assert set(counts) == set(pool)  # each of the top 6 gets its turn, none below them
    assert all(len(set(chosen)) == 2 for chosen in rounds)
    assert [counts[t] for t in pool] == sorted((counts[t] for t in pool), reverse=True)  # top most often
    assert all(chosen == sorted(chosen, key=IDS.index) for chosen in rounds)  # most useful checked first


def test_two_replicas_mostly_check_different_tools(suspects):
    a, b = random.Random(1), random.Random(2)
    same = sum(checked(suspects, 2, a) == checked(suspects, 2, b) for _ in range(200))
    assert same < 100  # without the draw: 200 of 200


def test_the_draw_checks_every_candidate_when_there_are_no_more_than_the_budget():
    assert _spread(["a", "b"], 3, random.Random(0)) == ["a", "b"]
    assert _spread([], 3, random.Random(0)) == []


def test_a_tool_one_replica_found_up_is_no_target_for_another_from_its_next_round(tmp_path, clock):
    db = tmp_path / "shared.db"
    with (
        Retriever.from_catalog(tools(), db=db, encoder=HashEncoder(32), clock=clock) as a,
        Retriever.open(db, clock=clock) as b,
    ):
        fail_in_order(a, clock)
        assert b.probe_targets(9) == list(IDS)  # b read the failures from the store
        found = [r.tool_id for r in probe(a, lambda tool: True, 3, rng=random.Random(0)) if r.outcome]
        assert len(found) == 3
        left = [t for t in IDS if t not in found]
        assert b.probe_targets(9) == left  # its next poll of the store: the tools a found up are cleared
        seen: list[str] = []
        probe(b, lambda tool: seen.append(tool.id) or "tool_error", 9, rng=random.Random(1))
        assert seen == left  # b's round checks only the tools still suspected
        assert a.probe_targets(9) == left  # and its failures keep them suspects for a


def test_a_probers_waits_are_jittered_within_its_bounds(suspects):
    prober = Prober(suspects, lambda tool: None, every=10, jitter=0.2, seed=3)
    waits = [prober._wait() for _ in range(2000)]
    assert 8.0 <= min(waits) < 8.2 and 11.8 < max(waits) <= 12.0
    assert {Prober(suspects, lambda tool: None, every=10, jitter=0)._wait() for _ in range(5)} == {10.0}


def test_replicas_draw_apart_even_when_forked_from_one_parent(suspects):
    """A seedless prober draws fresh entropy when it starts: a generator copied into forked workers would
    otherwise make them wait and pick alike."""
    a = Prober(suspects, lambda tool: None, every=30)
    b = Prober(suspects, lambda tool: None, every=30)
    b._rng.setstate(a._rng.getstate())  # what a fork leaves: the same state in both
    a.start().stop(timeout=5)
    b.start().stop(timeout=5)
    assert [a._wait() for _ in range(3)] != [b._wait() for _ in range(3)]
    seeded = [Prober(suspects, lambda tool: None, every=30, seed=5) for _ in range(2)]
    for prober in seeded:
        prober.start().stop(timeout=5)
    assert seeded[0]._wait() == seeded[1]._wait()  # a seed is kept: reproducible
