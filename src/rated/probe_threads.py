"""A capped set of reused daemon threads for probe work that may block for as long as something outside
rated decides: a user's check (``rated.probing.probe``), a lookup in the system's resolver.

Python cannot stop a thread, so work that hangs holds its thread until it returns; a fresh thread for each
check or lookup left one more thread behind at every probe round of a tool whose check hangs, or of a name
the resolver does not answer (until it gives up: seconds to minutes). A ``Pool`` bounds them:

- at most ``size`` threads, started on demand and reused: one that has done its job takes the next, and
  ends after ``idle`` seconds without one;
- work asked for while a job with the same ``key`` is queued or running (a lookup of the same host, a check
  of the same tool that has not returned) is that job, not another: callers share its answer;
- work beyond ``size`` threads waits its turn; a job that no caller waits for any more (``leave``) is
  dropped if it has not started;
- what a job raises, ``KeyboardInterrupt`` or ``SystemExit`` too, is raised again to its callers, and what
  a callback raises is logged: neither ends the thread, which would stay counted with nothing to run work.

Daemon threads: a job still running when the interpreter exits does not hold the exit (a
``concurrent.futures`` executor's threads would be joined). A process forked from one whose pools hold
threads starts with empty pools (none of those threads exists in it): its pools would otherwise count
them, and work there would wait for ever for a thread to be free.
"""

from __future__ import annotations

import collections
import logging
import os
import threading
import time
import weakref
from collections.abc import Callable, Hashable
from typing import Any

__all__ = ["Job", "NoThread", "Pool", "start"]

log = logging.getLogger(__name__)


class NoThread(RuntimeError):
    """A thread of rated's probes did not start: this process may start no more (``Thread.start`` raised
    ``RuntimeError``). The probing host's failure, not the tool's: a probe meeting it records nothing. Its
    own class, so that a ``RuntimeError`` a user's check raises itself is still that check's answer."""


def start(thread: threading.Thread) -> None:
    """``thread.start()``, ``NoThread`` when it did not start."""
    try:
        thread.start()
    except RuntimeError as exc:
        raise NoThread(str(exc)) from exc


class Job:
    """Work given to a ``Pool``: ``started`` once a thread took it, ``done`` once it returned or raised."""

    def __init__(self, key: Hashable | None, fn: Callable[[], Any]) -> None:
        self.key = key
        self.started = threading.Event()
        self.done = threading.Event()
        self._fn: Callable[[], Any] | None = fn
        self._result: tuple[bool, Any] = (False, None)
        self._callbacks: list[Callable[[], None]] = []
        self._lock = threading.Lock()
        self._waiters = 0  # callers waiting for it (guarded by its pool's lock)

    def wait(self, deadline: float) -> bool:
        """Whether it is done by ``deadline`` (``time.monotonic()`` seconds)."""
        return self.done.wait(max(deadline - time.monotonic(), 0.0))

    def result(self) -> Any:
        """What the work returned; what it raised is raised again. Only once ``done``."""
        ok, value = self._result
        if not ok:
            raise value
        return value

    def on_done(self, callback: Callable[[], None]) -> None:
        """Call ``callback()`` once it is done: from its thread then, or now if it is done already."""
        with self._lock:
            if not self.done.is_set():
                self._callbacks.append(callback)
                return
        callback()

    def _run(self) -> None:
        fn, self._fn = self._fn, None  # nothing it referenced is held once it is over
        try:
            self._result = (True, fn() if fn is not None else None)
        except BaseException as exc:  # raised again in each caller's thread, which decides
            self._result = (False, exc)
        with self._lock:
            self.done.set()
            callbacks, self._callbacks = self._callbacks, []
        for callback in callbacks:
            try:
                callback()
            except BaseException:  # KeyboardInterrupt, SystemExit too: ending the pool's thread would leave
                # it counted (work queued for ever), its key held by this job and the other callbacks uncalled
                log.exception("a probe job's callback failed")


class Pool:
    """At most ``size`` daemon threads called ``name``, each ending after ``idle`` seconds without work."""

    def __init__(self, name: str, size: int, idle: float = 60.0) -> None:
        self.name, self.size, self.idle = name, size, idle
        self._empty()
        _pools.add(self)

    def _empty(self) -> None:
        self._cond = threading.Condition(threading.Lock())
        self._pending: collections.deque[Job] = collections.deque()
        self._keyed: dict[Hashable, Job] = {}  # queued or running jobs by key
        self._threads = 0
        self._idle = 0  # threads waiting for work

    def run(self, key: Hashable | None, fn: Callable[[], Any]) -> Job:
        """The job doing ``fn()``: the one queued or running under ``key`` if any (None: never shared),
        else a new one, handed to an idle thread, a new thread, or queued while all ``size`` are busy. The
        caller waits for it as long as it likes, then calls ``leave``. ``NoThread`` when the new thread it
        needs does not start."""
        with self._cond:
            job = self._keyed.get(key) if key is not None else None
            if job is None:
                job = Job(key, fn)
                if key is not None:
                    self._keyed[key] = job
                self._pending.append(job)
                if self._idle >= len(self._pending):
                    self._cond.notify()
                elif self._threads < self.size:
                    self._start(job)
            job._waiters += 1
            return job

    def _start(self, job: Job) -> None:
        """Start a thread for ``job``, just queued (under the lock). One that fails to start (no more
        threads in this process) is not counted, and the job is dropped: no caller holds it, and counted it
        would leave the pool waiting for a thread that never ran, every later job queued for ever. Raises
        ``NoThread``."""
        self._threads += 1
        try:
            start(threading.Thread(target=self._work, name=self.name, daemon=True))
        except NoThread:  # not started (an interrupt while start waits for it may come after it did)
            self._threads -= 1
            self._pending.remove(job)
            self._forget(job)
            raise

    def leave(self, job: Job) -> None:
        """A caller of ``run`` waits for ``job`` no more: once none does, a job not started is dropped."""
        with self._cond:
            job._waiters -= 1
            if job._waiters == 0 and not job.started.is_set() and job in self._pending:
                self._pending.remove(job)
                self._forget(job)

    def threads(self) -> int:
        """The pool's threads now, busy or idle."""
        with self._cond:
            return self._threads

    def _work(self) -> None:
        job: Job | None = None
        while True:
            with self._cond:
                if job is not None:
                    self._forget(job)
                job = self._next()
                if job is None:
                    self._threads -= 1
                    return
            job._run()

    def _next(self) -> Job | None:
        """The next job, waiting up to ``idle`` seconds for one (under the lock); None: the thread ends."""
        end = time.monotonic() + self.idle
        self._idle += 1
        try:
            while not self._pending:
                left = end - time.monotonic()
                if left <= 0:
                    return None
                self._cond.wait(left)
        finally:
            self._idle -= 1
        job = self._pending.popleft()
        job.started.set()
        return job

    def _forget(self, job: Job) -> None:
        if job.key is not None and self._keyed.get(job.key) is job:
            del self._keyed[job.key]


_pools: weakref.WeakSet[Pool] = weakref.WeakSet()


def _after_fork() -> None:
    """In a forked child: only the forking thread exists, so every pool starts empty (its lock too, which
    another thread may have held at the fork)."""
    for pool in list(_pools):
        pool._empty()


os.register_at_fork(after_in_child=_after_fork)
