"""``rated.retired``: the rule's settings, how many different queries a tool needs, and how a run of
404/410s grows, counts and ends (``weigh`` on an in-memory store; the retriever's side is in
tests/test_retriever_retired.py)."""

from __future__ import annotations

import logging

import pytest

from rated.errors import ConfigError
from rated.outcome import Outcome, OutcomeKind
from rated.retired import MAX_QUERIES, RetiredRule, RetiredRun, load_run, weigh
from rated.store.base import OutcomeRecord
from rated.store.memory import MemoryStore

PLAIN = RetiredRule(false_alarm=1.0)  # ``after`` alone decides


def log_outcome(store: MemoryStore, outcome: str, tool_id: str = "t", query_hash: str | None = None) -> None:
    store.update_states([], lambda cur: {}, OutcomeRecord(0.0, tool_id, outcome, query_hash))


def report_404(store: MemoryStore, query: str | None, now: float = 0.0, rule: RetiredRule = PLAIN) -> bool:
    """One 404 of tool "t" for ``query``, logged as the retriever logs it after weighing it."""
    counts = weigh(store, rule, "t", query, now).counts
    log_outcome(store, "caller_error", query_hash=query)
    return counts


def test_defaults_and_parse() -> None:
    rule = RetiredRule()
    assert (rule.after, rule.window, rule.false_alarm, rule.enabled) == (3, 86_400.0, 1e-3, True)
    assert RetiredRule.parse(None) == RetiredRule.parse(True) == RetiredRule.parse({}) == rule
    assert RetiredRule.parse(False).enabled is False
    assert RetiredRule.parse({"after": 5, "window": 60}) == RetiredRule(after=5, window=60.0)
    assert RetiredRule.parse(rule) is rule
    assert RetiredRule.parse(rule.to_dict()) == rule  # what the index saves


@pytest.mark.parametrize(
    ("value", "match"),
    [
        ({"after": 0}, "retired.after"),
        ({"after": MAX_QUERIES + 1}, "retired.after"),
        ({"after": 2.5}, "retired.after"),
        ({"after": True}, "retired.after"),
        ({"window": 0}, "retired.window"),
        ({"window": float("inf")}, "retired.window"),
        ({"window": "1h"}, "retired.window"),
        ({"false_alarm": 0}, "retired.false_alarm"),
        ({"false_alarm": 1.5}, "retired.false_alarm"),
        ({"enabled": "yes"}, "retired.enabled"),
        ({"afterr": 3}, "unknown retired option.*afterr"),
        (3, "retired must be"),
        ("off", "retired must be"),
    ],
)
def test_bad_settings_name_the_problem(value: object, match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        RetiredRule.parse(value)  # type: ignore[arg-type]


def test_only_404_and_410_caller_errors_are_evidence() -> None:
    rule = RetiredRule()
    assert rule.applies(Outcome(OutcomeKind.CALLER_ERROR, status=404))
    assert rule.applies(Outcome(OutcomeKind.CALLER_ERROR, status=410))
    for status in (400, 405, 409, 422):
        assert not rule.applies(Outcome(OutcomeKind.CALLER_ERROR, status=status))
    assert not rule.applies(Outcome(OutcomeKind.CALLER_ERROR))  # no status known: a name, a schema error
    assert not rule.applies(Outcome(OutcomeKind.TOOL_ERROR, status=404))
    assert not RetiredRule(enabled=False).applies(Outcome(OutcomeKind.CALLER_ERROR, status=404))


@pytest.mark.parametrize(
    ("successes", "caller_errors", "need"),
    [
        (0, 0, 10),  # no history: p = 1/2, 2**-10 <= 0.001
        (98, 0, 3),  # p = 1/100: after decides
        (18, 0, 3),  # p = 1/20: 1/8000
        (8, 0, 3),  # p = 1/10: exactly 0.001, not rounded up
        (70, 30, 6),  # a tool whose callers err 30% of the time: 0.304**6 = 0.0008
        (50, 50, 10),
        (1, 1000, None),  # callers err nearly always: no run could tell
    ],
)
def test_need_rises_with_the_tools_own_caller_error_rate(successes: int, caller_errors: int, need) -> None:
    assert RetiredRule().need(successes, caller_errors) == need


def test_need_with_false_alarm_1_is_after_alone() -> None:
    assert RetiredRule(after=4, false_alarm=1.0).need(0, 500) == 4


def test_a_run_counts_from_the_nth_different_query_on() -> None:
    store = MemoryStore()
    assert [report_404(store, q) for q in ("a", "b")] == [False, False]
    assert report_404(store, "c") is True
    assert report_404(store, "a") is True  # the run holds three already: a repeat counts too
    assert report_404(store, None) is True  # as does a 404 reported without a query
    run = load_run(store, "t")
    assert run is not None and set(run.queries) == {"a", "b", "c"} and run.counted == 3


def test_one_query_repeated_is_one_piece_of_evidence() -> None:
    store = MemoryStore()
    assert not any(report_404(store, "a", now=float(i)) for i in range(20))
    run = load_run(store, "t")
    assert run is not None and run.queries == {"a": 19.0} and run.counted == 0


def test_reports_without_a_query_start_no_run() -> None:
    store = MemoryStore()
    assert not any(report_404(store, None) for _ in range(10))
    assert load_run(store, "t") is None


def test_a_logged_success_ends_the_run() -> None:
    store = MemoryStore()
    report_404(store, "a"), report_404(store, "b")
    log_outcome(store, "success")
    assert report_404(store, "c") is False
    run = load_run(store, "t")
    assert run is not None and set(run.queries) == {"c"} and run.successes == 1
    report_404(store, "d")
    assert report_404(store, "e") is True


def test_a_report_that_read_the_counts_before_a_newer_runs_success_joins_that_run() -> None:
    store = MemoryStore()
    log_outcome(store, "success")
    weigh(store, PLAIN, "t", "a", 0.0)  # the run began after one success
    stale = MemoryStore()  # what a writer that read the counts before that success saw: none
    store_stats = store.outcome_stats

    store.outcome_stats = stale.outcome_stats  # type: ignore[method-assign]
    weigh(store, PLAIN, "t", "b", 0.0)
    store.outcome_stats = store_stats  # type: ignore[method-assign]
    run = load_run(store, "t")
    assert run is not None and set(run.queries) == {"a", "b"} and run.successes == 1


def test_other_outcomes_neither_add_nor_end_a_run() -> None:
    store = MemoryStore()
    report_404(store, "a"), report_404(store, "b")
    for outcome in ("tool_error", "timeout", "caller_error", "auth_error"):
        log_outcome(store, outcome)
    assert report_404(store, "c") is True


def test_evidence_older_than_the_window_is_dropped() -> None:
    store, rule = MemoryStore(), RetiredRule(window=100, false_alarm=1.0)
    report_404(store, "a", now=0.0, rule=rule)
    report_404(store, "b", now=50.0, rule=rule)
    assert report_404(store, "c", now=120.0, rule=rule) is False  # "a" is 120 s old
    run = load_run(store, "t")
    assert run is not None and set(run.queries) == {"b", "c"} and run.since == 50.0
    assert report_404(store, "d", now=149.0, rule=rule) is True
    assert report_404(store, "e", now=1000.0, rule=rule) is False  # all of it expired: a new run
    run = load_run(store, "t")
    assert run is not None and run.queries == {"e": 1000.0} and run.counted == 0 and run.since == 1000.0


def test_an_error_prone_tool_needs_a_longer_run() -> None:
    store = MemoryStore()
    for _ in range(70):
        log_outcome(store, "success")
    for i in range(30):
        log_outcome(store, "caller_error", query_hash=f"old{i}")
    counted = [report_404(store, f"q{i}", rule=RetiredRule()) for i in range(7)]
    assert counted == [False] * 5 + [True] * 2  # need 6 at a 30% caller-error rate, not 3


def test_a_run_remembers_at_most_max_queries() -> None:
    store = MemoryStore()
    for i in range(MAX_QUERIES + 5):
        report_404(store, f"q{i}", now=float(i))
    run = load_run(store, "t")
    assert run is not None and len(run.queries) == MAX_QUERIES and "q0" not in run.queries


def test_the_first_count_of_a_run_is_logged_once(caplog) -> None:
    store = MemoryStore()
    with caplog.at_level(logging.WARNING, logger="rated.retired"):
        for q in ("a", "b", "c", "d"):
            report_404(store, q, now=1_700_000_000.0)
    [record] = caplog.records
    assert "'t'" in record.getMessage() and "3 different queries" in record.getMessage()
    assert "2023-11-14T22:13:20+00:00" in record.getMessage()


def test_a_damaged_run_starts_over() -> None:
    store = MemoryStore()
    store.update_evidence("retired:t", lambda blob: b"not json")
    assert load_run(store, "t") is None
    assert report_404(store, "a") is False
    run = load_run(store, "t")
    assert run is not None and set(run.queries) == {"a"}


def test_run_round_trip() -> None:
    run = RetiredRun(5, 2, 10.0, {"a": 10.0, "b": 11.5}, 1)
    assert RetiredRun.from_bytes(run.to_bytes()) == run
    assert RetiredRun.from_bytes(b'{"v": 2}') is None


def test_a_store_without_evidence_never_counts() -> None:
    class Bare:
        def outcome_stats(self, tool_ids=None):  # pragma: no cover - never asked
            return {}

    assert weigh(Bare(), PLAIN, "t", "a", 0.0).counts is False  # type: ignore[arg-type]
    assert load_run(Bare(), "t") is None  # type: ignore[arg-type]


def test_weigh_with_the_rule_off_touches_nothing() -> None:
    store = MemoryStore()
    for q in ("a", "b", "c", "d"):
        assert weigh(store, RetiredRule(enabled=False), "t", q, 0.0).counts is False
    assert load_run(store, "t") is None


@pytest.mark.parametrize(
    "blob",
    [
        b'{"v":1,"s":Infinity,"c":0,"since":0,"q":{"a":0},"n":0}',  # int(inf): OverflowError
        b'{"v":1,"s":1e400,"c":0,"since":0,"q":{"a":0},"n":0}',
        b'{"v":1,"s":0,"c":0,"since":NaN,"q":{"a":0},"n":0}',
        b'{"v":1,"s":0,"c":0,"since":0,"q":{"a":NaN},"n":0}',
        b'{"v":1,"s":0,"c":0,"since":0,"q":{"a":-Infinity},"n":0}',
        b'{"v":1,"s":-1,"c":0,"since":0,"q":{"a":0},"n":0}',
        b"[1, 2]",
        b"\xff\xfe",
    ],
)
def test_a_run_with_damaged_numbers_starts_over(blob: bytes) -> None:
    store = MemoryStore()
    store.update_evidence("retired:t", lambda old: blob)
    assert load_run(store, "t") is None
    assert report_404(store, "b") is False  # a new run, not a crash at every 404 of the tool
    run = load_run(store, "t")
    assert run is not None and run.queries == {"b": 0.0} and run.counted == 0


def test_a_clock_gone_backwards_keeps_evidence_no_longer_than_a_window() -> None:
    store, rule = MemoryStore(), RetiredRule(window=100, false_alarm=1.0)
    report_404(store, "a", now=10_000.0, rule=rule)
    report_404(store, "b", now=10_001.0, rule=rule)
    # the clock is set back by far more than a window: the "future" evidence is not kept for ever
    assert report_404(store, "c", now=500.0, rule=rule) is False
    run = load_run(store, "t")
    assert run is not None and run.queries == {"c": 500.0} and run.since == 500.0
    # a small step back (another process's clock a little behind) keeps the run, at times no later
    # than now, so that it expires a window after now at the latest
    report_404(store, "d", now=505.0, rule=rule)
    assert report_404(store, "e", now=503.0, rule=rule) is True
    run = load_run(store, "t")
    assert run is not None and max(run.queries.values()) <= 503.0 + 2
    assert report_404(store, "f", now=700.0, rule=rule) is False  # all older than a window now
