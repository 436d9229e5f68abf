"""The dashboard's pieces on their own: failure streaks, the read cap, row cap, labels, chart modes."""

from __future__ import annotations

import time

import pytest

from rated import Tool
from rated.encode.testing import HashEncoder
from rated.retriever import Retriever
from rated.service.dashboard import outcomes_png, render_page, take_snapshot
from rated.service.dashboard import snapshot as snapshot_module
from rated.service.dashboard.page import ago
from rated.service.dashboard.snapshot import bar_components, failing_since, store_label
from rated.store.base import OutcomeRecord

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def rec(t: float, tool: str, outcome: str) -> OutcomeRecord:
    return OutcomeRecord(t, tool, outcome)


def tools(n: int) -> list[Tool]:
    return [Tool(id=f"t{i}", name=f"t{i}", description=f"tool number {i} does thing {i}") for i in range(n)]


def test_failing_since_is_the_start_of_the_current_streak():
    log = [
        rec(1, "a", "tool_error"),
        rec(2, "a", "success"),  # ends a's first streak
        rec(3, "a", "timeout"),  # a's current streak starts here
        rec(4, "a", "caller_error"),  # not the tool's fault: neither ends nor starts a streak
        rec(5, "a", "rate_limited"),
        rec(6, "b", "tool_error"),
        rec(7, "b", "success"),  # b recovered
        rec(8, "c", "caller_error"),  # c never failed itself
    ]
    assert failing_since(log, capped=False) == {"a": (3, True)}
    # a capped read: a streak that starts at a tool's oldest record read may have started earlier
    cut = [rec(1, "a", "tool_error"), rec(2, "a", "timeout")]
    assert failing_since(cut, capped=True) == {"a": (1, False)}
    assert failing_since([rec(0, "a", "success"), *cut], capped=True) == {"a": (1, True)}
    # a caller error read before says nothing about when the tool's streak began
    assert failing_since([rec(0, "a", "caller_error"), *cut], capped=True) == {"a": (1, False)}


def test_outcomes_stamped_ahead_of_the_clock_are_drawn_as_the_page_counts_them(monkeypatch):
    import numpy as np

    import rated.service.dashboard.chart as chart

    drawn: list[float] = []
    real = np.histogram

    def histogram(times, bins):
        drawn.extend(times)
        return real(times, bins=bins)

    monkeypatch.setattr(chart.np, "histogram", histogram)
    outcomes_png([rec(990.0, "a", "success"), rec(1005.0, "a", "tool_error")], now=1000.0, minutes=1)
    assert sorted(drawn) == [990.0, 1000.0]  # 5 s ahead (another replica's clock): in the last bar


def test_the_read_cap_bounds_the_work_and_the_page_says_so():
    r = Retriever.from_catalog(tools(3), encoder=HashEncoder(32))
    for outcome in ("tool_error", "tool_error", "timeout", "tool_error", "success"):
        r.feedback("t0", outcome)
    r.feedback("t1", "tool_error")
    now = time.time()
    snap = take_snapshot(r, now, max_outcomes=3, recent=2)
    assert snap.records_read == 3 and snap.capped and not snap.window_complete
    assert [o.outcome for o in snap.recent] == ["tool_error", "success"]  # newest first
    assert snap.window_outcomes == 3 and snap.window_failures == 2
    row = {row.id: row for row in snap.rows}
    assert row["t0"].stats.successes == 1 and row["t0"].stats.failures == 1  # counts of the records read
    # t1's streak starts at its oldest record read, and the log holds more: "at least since"
    assert row["t1"].failing_since is not None and not row["t1"].since_exact
    page = render_page(snap, refresh=10, chart_url="x.png")
    assert "<b>3+</b> outcomes in the last 60 min" in page and "(the log holds more)" in page
    assert page.count("&ge; ") == 1
    assert all(h.stats is None for h in r.tools(stats=False))  # health without the log scan
    assert {h.tool.id: h.stats.failures for h in r.tools() if h.stats} == {"t0": 4, "t1": 1}
    full = take_snapshot(r, now)
    assert not full.capped and full.window_complete and full.records_read == 6
    assert {row.id: row for row in full.rows}["t0"].failing_since is None  # its last outcome: success


def test_tool_rows_are_capped_unhealthy_first(monkeypatch):
    r = Retriever.from_catalog(tools(6), encoder=HashEncoder(32))
    for i in range(5):
        r.feedback(f"t{i}", "success")
    r.feedback("t5", "tool_error")  # most recent too, but ordered first because unhealthy
    monkeypatch.setattr(snapshot_module, "MAX_TOOL_ROWS", 2)
    snap = take_snapshot(r, time.time())
    assert [row.id for row in snap.rows] == ["t5", "t4"] and snap.hidden_rows == 4
    assert "4 more tools with state not shown" in render_page(snap, refresh=0, chart_url="x.png")


@pytest.mark.parametrize(
    ("policy", "bars"),
    [("rated", ("availability", "reliability")), ("global_mab", ("mab",)), ("static", ())],
)
def test_bars_follow_what_the_policy_reports(policy, bars):
    r = Retriever.from_catalog(tools(2), encoder=HashEncoder(32), policy=policy)
    r.feedback("t0", "tool_error")
    assert bar_components(r.tools(stats=False)) == bars
    page = render_page(take_snapshot(r, time.time()), refresh=10, chart_url="x.png")
    assert "t0" in page and f"policy <b>{policy}</b>" in page


def test_store_label_names_the_database_without_secrets(tmp_path):
    assert store_label(Retriever.from_catalog(tools(2), encoder=HashEncoder(32)).store) == "in memory"
    db = tmp_path / "rated.db"
    with Retriever.from_catalog(tools(2), db, encoder=HashEncoder(32)) as r:
        assert store_label(r.store) == str(db)
    pytest.importorskip("redis")
    from rated.store.redis import RedisStore

    class Client:  # just enough of a redis client for the constructor (a store that exists)
        def get(self, key):
            return b"1"

        def register_script(self, script):
            return None

        def exists(self, key):  # the per-tool outcome counters: present, nothing to count on open
            return 1

    store = RedisStore("redis://bob:s3cret@cache.internal:6379/0", client=Client())
    assert store_label(store) == "redis://bob:***@cache.internal:6379/0"


def test_ago():
    assert [ago(s) for s in (-5, 0, 59.9, 60, 3599, 3600, 7260, 90_000)] == [
        "0 s",
        "0 s",
        "59 s",
        "1 min",
        "59 min",
        "1 h 0 min",
        "2 h 1 min",
        "1 d 1 h",
    ]
    assert ago(float("nan")) == "0 s"


def test_chart_modes_all_give_a_png():
    now = 1_700_000_000.0
    empty = outcomes_png([], now, 60)
    recent = outcomes_png([rec(now - 30, "a", "success"), rec(now - 90, "a", "tool_error")], now, 60)
    old = [rec(now - 7200 + i, "a", k) for i, k in enumerate(["success", "timeout", "not_a_kind_any_more"])]
    quiet = outcomes_png(old, now, 60, capped=True)  # nothing in the window: the span of the records
    long_window = outcomes_png([rec(now - 3 * 86_400, "a", "success")], now, 1440)
    for png in (empty, recent, quiet, long_window):
        assert png[:8] == PNG_MAGIC
    assert len({empty, recent, quiet, long_window}) == 4
