"""Prometheus metrics of one app instance (its own registry, so several apps can live in one process).

Counters and the latency histogram are updated as requests run; the catalog gauges (``rated_tools``,
``rated_unhealthy_tools``) are read from the served retriever when Prometheus scrapes, so an alert on
failing tools needs no request traffic to stay current.

Several worker processes (``rated serve --workers N``) report together through prometheus_client's
multiprocess mode: with ``multiprocess=True`` the counters and the histogram live in files under
``$PROMETHEUS_MULTIPROC_DIR`` (which must be set before prometheus_client is imported, as a spawned
worker inherits it), and a scrape, whichever worker answers it, sums every worker's files. The catalog
gauges are not summed: they are read at the scrape from the answering worker's retriever, and every
worker serves the same store.

Each worker writes files of its own (``counter_PID.db``, ``histogram_PID.db``). Once one has exited, the
supervisor calls ``retire_process``: prometheus_client's ``mark_process_dead`` (which removes its live
gauges' files), and its counts merged into one file per kind (``counter_retired.db``, ...), so that the
sums stay what they were and a service whose workers are replaced keeps a few files, not two for every
worker it ever ran.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable, Iterator

from prometheus_client import CollectorRegistry, Counter, Histogram
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.mmap_dict import MmapedDict
from prometheus_client.multiprocess import MultiProcessCollector, mark_process_dead

from rated.errors import ConfigError

try:
    import fcntl
except ImportError:  # not POSIX: no advisory locks (scrapes and merges are not kept apart)
    fcntl = None  # type: ignore[assignment]

__all__ = ["MERGE_LOCK", "MULTIPROC_DIR_ENV", "Metrics", "retire_process"]

MULTIPROC_DIR_ENV = "PROMETHEUS_MULTIPROC_DIR"
#: in the multiprocess folder: shared by each scrape, held alone while a dead worker's files are merged
MERGE_LOCK = "merge.lock"
_ADDITIVE = ("counter", "histogram", "summary")  # kinds whose samples add up across processes
_RETIRED = "retired"  # ``{kind}_retired.db``: the sums of the exited workers' files of that kind
_MERGE_WAIT_S = 5.0  # how long a merge waits for the scrapes reading the folder (else it is left for now)

_LATENCY_BUCKETS = (0.0005, 0.001, 0.002, 0.003, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0, 5.0)


class Metrics:
    """``registry`` is what ``/metrics`` exposes: this instance's metrics, or with ``multiprocess`` the sum
    over every process writing to ``$PROMETHEUS_MULTIPROC_DIR``, plus the catalog gauges."""

    def __init__(self, *, multiprocess: bool = False) -> None:
        _check_folder(required=multiprocess)
        own = CollectorRegistry()  # where the metrics register; exposed itself unless multiprocess
        self.registry = _summed_registry() if multiprocess else own
        self.requests = Counter(
            "rated_http_requests_total",
            "HTTP requests by route and status",
            ["route", "status"],
            registry=own,
        )
        self.latency = Histogram(
            "rated_http_request_seconds",
            "HTTP request latency by route",
            ["route"],
            buckets=_LATENCY_BUCKETS,
            registry=own,
        )
        self.feedback = Counter(
            "rated_feedback_total", "Outcomes reported, by kind", ["outcome"], registry=own
        )
        self.degraded = Counter(
            "rated_degraded_rankings_total",
            "Rankings in which no candidate looked healthy (fail open)",
            registry=own,
        )
        self.errors = Counter(
            "rated_errors_total",
            "Requests that ended in a rated error, by class",
            ["error"],
            registry=own,
        )
        self.reopens = Counter(
            "rated_index_reopens_total",
            "Times the index was rebuilt under the service with another encoder or policy and reopened",
            registry=own,
        )
        self.catalog_changes = Counter(
            "rated_catalog_changes_total",
            "Tools added (POST /tools, PUT /tools), updated in place (PUT /tools) or removed (DELETE "
            "/tools/{id}, PUT /tools with prune) through this service, by change",
            ["change"],
            registry=own,
        )
        self.probes = Counter(
            "rated_probes_total",
            "Health probes of suspected tools (RATED_PROBE_EVERY), by outcome ('unchecked': nothing to ask "
            "(no http(s) endpoint, a stdio MCP server) or the probing host's own failure (untrusted "
            "certificate, DNS, proxy); 'not_recorded': the tool removed or the store busy meanwhile)",
            ["outcome"],
            registry=own,
        )
        for change in (
            "added",
            "updated",
            "removed",
        ):  # exposed at 0 from the start: rate() sees the first change
            self.catalog_changes.labels(change)
        self._catalog = _CatalogGauges()
        self.registry.register(self._catalog)
        if multiprocess:
            _check_file_backed()

    def watch_catalog(self, count: Callable[[], tuple[int, int] | None]) -> None:
        """Read ``(tools, unhealthy tools)`` from ``count`` at each scrape (NaN when it fails: the
        store may be gone, which /health reports; a scrape must not fail with it; and NaN for None: an
        index rebuilt under the service, which a scrape does not reopen)."""
        self._catalog.count = count


class _CatalogGauges:
    """``rated_tools`` and ``rated_unhealthy_tools``, read once per scrape (0 before ``watch_catalog``).

    A collector rather than two ``Gauge.set_function``: in multiprocess mode a ``Gauge`` is file-backed
    and the files would expose a stale 0 per process; this answers from the scraped process alone."""

    def __init__(self) -> None:
        self.count: Callable[[], tuple[int, int] | None] | None = None

    def describe(self) -> list[Metric]:
        return list(self._families(0.0, 0.0))

    def collect(self) -> Iterator[Metric]:
        tools = unhealthy = 0.0
        if self.count is not None:
            try:
                counts = self.count()
                tools, unhealthy = (float("nan"),) * 2 if counts is None else map(float, counts)
            except Exception:
                tools = unhealthy = float("nan")
        return self._families(tools, unhealthy)

    @staticmethod
    def _families(tools: float, unhealthy: float) -> Iterator[Metric]:
        yield GaugeMetricFamily("rated_tools", "Tools in the served catalog", value=tools)
        yield GaugeMetricFamily(
            "rated_unhealthy_tools",
            "Tools the policy currently considers unhealthy (ranked last, or priced down)",
            value=unhealthy,
        )


def _check_folder(*, required: bool) -> None:
    """``$PROMETHEUS_MULTIPROC_DIR``, where set, is a folder: prometheus_client writes every metric of a
    process that started with it set there, multiprocess or not (a user's own variable, missing, made
    ``rated serve`` fail with a traceback at its first counter; an empty one wrote to the working folder)."""
    path = os.environ.get(MULTIPROC_DIR_ENV)
    if path is None and required:
        raise ConfigError(
            f"multiprocess metrics need {MULTIPROC_DIR_ENV} set to an existing folder before the process "
            "starts"
        )
    if path is not None and not (path and os.path.isdir(path)):
        raise ConfigError(
            f"{MULTIPROC_DIR_ENV} is {path!r}, which is not a folder: prometheus_client keeps this "
            "process's metrics there (create it, or unset the variable)"
        )


def _summed_registry() -> CollectorRegistry:
    """A registry exposing the sum over the processes writing to ``$PROMETHEUS_MULTIPROC_DIR``."""
    registry = CollectorRegistry()
    _Summed(registry, path=os.environ[MULTIPROC_DIR_ENV])
    return registry


class _Summed(MultiProcessCollector):
    """prometheus_client's collector, reading the folder under a shared ``MERGE_LOCK``: a scrape never
    sees a dead worker's counts both in its own file and merged (a counter jumping up, then back: a reset
    to Prometheus), nor a file removed between listing the folder and reading it (an error)."""

    def collect(self) -> Iterator[Metric]:
        with _locked(self._path, shared=True):
            return iter(list(super().collect()))  # read in full while the lock is held


def retire_process(path: str, pid: int) -> bool:
    """The bookkeeping for process ``pid``, which wrote metrics to the multiprocess folder ``path`` and
    has exited (a replaced ``rated serve`` worker): ``mark_process_dead`` (its live gauges go), and its
    counters', histograms' and summaries' files merged into ``{kind}_retired.db`` and removed, under
    ``MERGE_LOCK``: scrapes sum the same before and after. False when scrapes kept the folder for
    ``_MERGE_WAIT_S``: its files are left as they are, and every scrape still sums them (no count lost
    or late; another call merges them). Call it once the process is gone: a process still writing would
    lose what it writes after."""
    mark_process_dead(pid, path)
    with _locked(path, shared=False, wait=_MERGE_WAIT_S) as held:
        if not held:
            return False
        for kind in _ADDITIVE:
            dead = os.path.join(path, f"{kind}_{pid}.db")
            if not os.path.exists(dead):
                continue
            retired = os.path.join(path, f"{kind}_{_RETIRED}.db")
            sums: dict[str, float] = {}
            for name in (retired, dead):
                if os.path.exists(name):
                    for key, value, _, _ in MmapedDict.read_all_values_from_file(name):
                        sums[key] = sums.get(key, 0.0) + value
            making = retired + ".new"  # not *.db: no scrape reads it
            with contextlib.suppress(FileNotFoundError):
                os.remove(making)  # left by a merge that was interrupted
            merged = MmapedDict(making)
            try:
                for key, value in sums.items():
                    merged.write_value(key, value, 0.0)
            finally:
                merged.close()
            os.replace(making, retired)
            os.remove(dead)
    return True


@contextlib.contextmanager
def _locked(path: str, *, shared: bool, wait: float | None = None) -> Iterator[bool]:
    """``MERGE_LOCK`` of the folder ``path`` held (shared or alone) for the block, which gets True; False
    when it was not free within ``wait`` seconds (None: waits as long as it takes). Without ``fcntl``,
    nothing is locked (True)."""
    if fcntl is None:
        yield True
        return
    fd = os.open(os.path.join(path, MERGE_LOCK), os.O_RDWR | os.O_CREAT, 0o600)
    try:
        mode = fcntl.LOCK_SH if shared else fcntl.LOCK_EX
        if wait is None:
            fcntl.flock(fd, mode)
        else:
            deadline = time.monotonic() + wait
            while True:
                try:
                    fcntl.flock(fd, mode | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() >= deadline:
                        yield False
                        return
                    time.sleep(0.01)
        yield True
    finally:
        os.close(fd)  # releases the lock


def _check_file_backed() -> None:
    """The metrics just made write to the folder: else each worker would count alone and every scrape
    would show zeros (prometheus_client picks its storage once, when it is first imported)."""
    path = os.environ[MULTIPROC_DIR_ENV]
    if not os.path.exists(os.path.join(path, f"counter_{os.getpid()}.db")):
        raise ConfigError(
            f"{MULTIPROC_DIR_ENV} was set after prometheus_client was imported: this process's metrics "
            "are not shared (set it before the process starts)"
        )
