"""Stopping a prober in the middle of a round: the round's other targets are not checked, and the answer of
the check in flight is not recorded (a service closes its store right after stopping the prober)."""

import threading

import pytest

from rated import Tool
from rated.encode.testing import HashEncoder
from rated.probing import Prober, probe
from rated.retriever import Retriever

pytestmark = pytest.mark.usefixtures("fast_probes")  # rounds every few ms

IDS = ("t0", "t1", "t2")


def suspected(clock) -> Retriever:
    tools = [Tool(id=i, name=f"tool_{i}", description=f"tool {i}", endpoint="http://x.invalid") for i in IDS]
    r = Retriever.from_catalog(tools, encoder=HashEncoder(32), clock=clock)
    for tool_id in IDS:
        r.feedback(tool_id, "tool_error")
    clock.t += 5
    assert sorted(r.probe_targets(3)) == sorted(IDS)
    return r


def test_a_prober_stopped_during_a_check_records_nothing_more_nor_checks_the_rest(clock):
    with suspected(clock) as r:
        started, release, checked, recorded = threading.Event(), threading.Event(), [], []

        def hangs(tool):
            checked.append(tool.id)
            started.set()
            release.wait(10)
            return True

        real = r.feedback
        r.feedback = lambda *a, **kw: recorded.append(a[0]) or real(*a, **kw)
        prober = Prober(r, hangs, every=0.01, budget=3).start()
        assert started.wait(5)
        assert prober.stop(timeout=0.05) is False  # still in its check
        release.set()
        assert prober.stop(timeout=5) is True
        # before: the round went on, checked the other two and recorded all three after stop
        assert len(checked) == 1 and recorded == []
        assert all(not r.health(i).healthy for i in IDS)


def test_probe_without_stop_or_with_it_unset_checks_and_records_every_target(clock):
    with suspected(clock) as r:
        assert len(probe(r, lambda tool: True, 3, stop=threading.Event())) == 3
        assert all(r.health(i).healthy for i in IDS)


def test_a_prober_stopped_without_waiting_for_its_check_drops_the_answer_and_ends_after_it(clock):
    """``stop(wait_check=False)`` (a service shutting down) returns while the check is in flight rather than
    up to the check's timeout later; the thread records nothing more and ends once the check returns."""
    with suspected(clock) as r:
        started, release, checked, recorded = threading.Event(), threading.Event(), [], []

        def hangs(tool):
            checked.append(tool.id)
            started.set()
            release.wait(30)
            return True

        real = r.feedback
        r.feedback = lambda *a, **kw: recorded.append(a[0]) or real(*a, **kw)
        prober = Prober(r, hangs, every=0.01, budget=3).start()
        assert started.wait(5)
        assert prober.stop(timeout=30, wait_check=False) is True  # before the check returned
        assert prober._thread.is_alive() and not release.is_set()
        release.set()
        prober._thread.join(5)
        assert not prober._thread.is_alive() and len(checked) == 1 and recorded == []


def test_a_prober_stopped_without_waiting_for_its_check_still_waits_for_a_recording(clock):
    """What the store's owner may not close under: an answer being recorded (or the targets being read)."""
    with suspected(clock) as r:
        recording, release = threading.Event(), threading.Event()
        real = r.feedback

        def slow_feedback(*a, **kw):
            recording.set()
            release.wait(30)
            return real(*a, **kw)

        r.feedback = slow_feedback
        prober = Prober(r, lambda tool: True, every=0.01, budget=1).start()
        assert recording.wait(5)
        assert prober.stop(timeout=0.05, wait_check=False) is False  # still writing to the store
        release.set()
        assert prober.stop(timeout=5, wait_check=False) is True
        assert not prober._thread.is_alive()  # no check was in flight: it ended
        assert sum(r.health(i).healthy for i in IDS) == 1  # the one recording finished, no other began
