"""The capped pool of daemon threads that probe work which may never return runs in (a user's check, a
lookup in the system's resolver): threads reused, at most ``size`` of them, work of one key shared, work
nobody waits for any more dropped before it starts. Joins and waits carry generous bounds that only keep a
broken test from hanging: nothing here asserts how long anything took."""

from __future__ import annotations

import logging
import os
import threading
import time

import pytest

from rated.probe_threads import Pool

BOUND = 10.0  # seconds: a hung test fails instead of hanging; never a speed assertion


def later() -> float:
    return time.monotonic() + BOUND


def blocker() -> tuple[threading.Event, list[threading.Thread], object]:
    """An event holding jobs, the threads they ran in, and the work: waits for the event."""
    release, ran_in = threading.Event(), []

    def work() -> str:
        ran_in.append(threading.current_thread())
        assert release.wait(BOUND)
        return "done"

    return release, ran_in, work


def test_a_thread_is_reused_for_the_next_job():
    pool = Pool("test-pool", 2)
    first = pool.run(None, threading.current_thread)
    assert first.wait(later())
    second = pool.run(None, threading.current_thread)
    assert second.wait(later())
    assert first.result() is second.result() and pool.threads() == 1
    pool.leave(first)
    pool.leave(second)


def test_work_beyond_the_cap_waits_for_a_thread_and_runs_in_one_of_them():
    pool = Pool("test-pool", 2)
    release, ran_in, work = blocker()
    held = [pool.run(None, work) for _ in range(2)]
    queued = pool.run(None, threading.current_thread)
    assert not queued.wait(time.monotonic() + 0.05)  # both threads are held: it has not started
    assert not queued.started.is_set() and pool.threads() == 2
    release.set()
    assert queued.wait(later()) and all(job.wait(later()) for job in held)
    assert queued.result() in ran_in and pool.threads() == 2
    for job in [*held, queued]:
        pool.leave(job)


def test_work_of_a_key_in_flight_is_that_job_and_its_answer_is_shared():
    pool = Pool("test-pool", 4)
    release, ran_in, work = blocker()
    first = pool.run("tools.test", work)
    again = pool.run("tools.test", work)
    assert again is first
    release.set()
    assert first.wait(later()) and first.result() == "done" and len(ran_in) == 1
    pool.leave(first)
    pool.leave(again)
    assert pool.run("tools.test", lambda: "anew").wait(later())  # over: the next one is a new job


def test_a_job_nobody_waits_for_is_dropped_unless_it_started():
    pool = Pool("test-pool", 1)
    release, _, work = blocker()
    running = pool.run(None, work)
    assert running.started.wait(BOUND)
    calls: list[str] = []
    queued = pool.run("k", lambda: calls.append("ran"))
    shared = pool.run("k", lambda: calls.append("ran"))
    pool.leave(queued)  # one caller still waits for it: kept
    pool.leave(shared)  # nobody does: dropped before it starts
    pool.leave(running)  # started: runs to its end
    release.set()
    assert running.wait(later()) and running.result() == "done"
    after = pool.run("k", lambda: calls.append("ran"))  # the key is free again
    assert after is not queued and after.wait(later())
    assert calls == ["ran"]  # the dropped one never ran
    pool.leave(after)


def test_what_the_work_raises_is_raised_to_each_caller_and_the_thread_goes_on():
    pool = Pool("test-pool", 1)

    def fails() -> None:
        raise ConnectionRefusedError("refused")

    job = pool.run(None, fails)
    assert job.wait(later())
    with pytest.raises(ConnectionRefusedError):
        job.result()
    assert pool.run(None, lambda: 1).wait(later()) and pool.threads() == 1


def test_callbacks_run_once_done_or_at_once_when_done_already():
    pool = Pool("test-pool", 1)
    release, _, work = blocker()
    seen: list[str] = []
    job = pool.run(None, work)
    job.on_done(lambda: seen.append("from the thread"))
    release.set()
    assert job.wait(later())
    job.on_done(lambda: seen.append("at once"))
    deadline = later()
    while len(seen) < 2 and time.monotonic() < deadline:  # the first is called just after done is set
        time.sleep(0.01)
    assert sorted(seen) == ["at once", "from the thread"]


def test_an_idle_thread_ends():
    pool = Pool("test-pool-idle", 2, idle=0.01)
    assert pool.run(None, lambda: None).wait(later())
    deadline = later()
    while pool.threads() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert pool.threads() == 0
    assert pool.run(None, lambda: 2).wait(later())  # and a new one starts for the next job


def test_a_forked_process_starts_with_an_empty_pool():
    """The child has none of its parent's threads: a pool still counting them (all busy here) would queue
    the child's work for ever."""
    pool = Pool("test-pool", 1)
    release, _, work = blocker()
    held = pool.run(None, work)
    assert held.started.wait(BOUND)
    pid = os.fork()
    if pid == 0:  # the child: exit at once, whatever happens
        try:
            os._exit(0 if pool.run(None, lambda: 1).wait(later()) else 1)
        finally:
            os._exit(2)
    release.set()
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert held.wait(later())


def test_a_thread_that_fails_to_start_is_not_counted_nor_its_job_kept(monkeypatch):
    """``Thread.start`` fails when the process may start no more threads (RuntimeError): the pool must not
    count a thread that never ran, nor keep a job no thread will take, or once that happened ``size``
    times (a burst of probes at a thread limit) every later job would be queued for ever."""
    pool = Pool("test-pool", 1)

    def cannot_start(self: threading.Thread) -> None:
        raise RuntimeError("can't start new thread")

    with monkeypatch.context() as patched:
        patched.setattr(threading.Thread, "start", cannot_start)
        with pytest.raises(RuntimeError):
            pool.run("k", lambda: "never")
    assert pool.threads() == 0
    job = pool.run("k", lambda: "ran")  # a new job, not the one no thread took
    assert job.wait(later()) and job.result() == "ran"
    pool.leave(job)


INTERRUPTS = [KeyboardInterrupt, SystemExit, GeneratorExit]  # BaseException, not Exception, from user code


@pytest.mark.parametrize("interrupt", INTERRUPTS)
def test_work_raising_an_interrupt_raises_it_to_the_caller_and_the_thread_goes_on(interrupt):
    pool = Pool("test-pool", 1)

    def interrupted() -> None:
        raise interrupt()

    job = pool.run("k", interrupted)
    assert job.wait(later())
    with pytest.raises(interrupt):
        job.result()
    pool.leave(job)
    after = pool.run(None, threading.current_thread)  # the one thread, still there to take it
    assert after.wait(later()) and pool.threads() == 1
    again = pool.run("k", lambda: "anew")  # the key is free: a new job
    assert again is not job and again.wait(later()) and again.result() == "anew"


@pytest.mark.parametrize("interrupt", INTERRUPTS)
def test_a_callback_raising_an_interrupt_is_logged_and_ends_neither_the_thread_nor_the_others(
    interrupt, caplog
):
    """A callback raising KeyboardInterrupt or SystemExit ended the pool's one thread, which stayed counted:
    the other callbacks were never called, later work was queued for ever, and the job's key kept naming
    the finished job."""
    pool = Pool("test-pool", 1)
    release, _, work = blocker()
    called = threading.Event()

    def interrupting() -> None:
        raise interrupt()

    job = pool.run("k", work)
    job.on_done(interrupting)
    job.on_done(called.set)
    with caplog.at_level(logging.ERROR, logger="rated.probe_threads"):
        release.set()
        assert job.wait(later()) and called.wait(BOUND)
    assert job.result() == "done"
    assert any(r.exc_info and r.exc_info[0] is interrupt for r in caplog.records)
    pool.leave(job)
    after = pool.run(None, lambda: "next")  # taken by the same thread once it is past the job
    assert after.wait(later()) and after.result() == "next" and pool.threads() == 1
    again = pool.run("k", lambda: "anew")
    assert again is not job and again.wait(later()) and again.result() == "anew"
