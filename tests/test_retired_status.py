"""What the retired-endpoint rule makes of a tool now (``rated.retired.current``, ``status_of``,
``counted_as``): read from the evidence ``weigh`` keeps, never written, and the same judgement ``weigh``
makes of the tool's next 404/410."""

from __future__ import annotations

import pytest

from rated import Tool
from rated.encode.testing import HashEncoder
from rated.outcome import Outcome, OutcomeKind
from rated.retired import (
    RetiredRule,
    RetiredStatus,
    counted_as,
    current,
    load_run,
    status_of,
    weigh,
    with_status,
)
from rated.retriever import Retriever
from rated.store.base import OutcomeRecord
from rated.store.memory import MemoryStore

PLAIN = RetiredRule(false_alarm=1.0)  # ``after`` alone decides: three different queries
GONE = Outcome(OutcomeKind.CALLER_ERROR, status=404)


def log(store: MemoryStore, outcome: str, tool_id: str = "t", now: float = 0.0) -> None:
    store.update_states([], lambda cur: {}, OutcomeRecord(now, tool_id, outcome))


def report_404(
    store: MemoryStore, query: str | None, tool_id: str = "t", now: float = 0.0, rule=PLAIN
) -> bool:
    """One 404 of ``tool_id``, weighed and logged as the retriever does."""
    counts = weigh(store, rule, tool_id, query, now).counts
    log(store, "caller_error", tool_id, now)
    return counts


def test_no_evidence_no_status() -> None:
    store = MemoryStore()
    log(store, "success")
    assert current(store, PLAIN, ["t", "u"], 0.0) == {}


def test_the_status_follows_the_run_and_agrees_with_weigh() -> None:
    store = MemoryStore()
    report_404(store, "q1")
    assert current(store, PLAIN, ["t"], 1.0) == {"t": RetiredStatus(False, 1, 3, 0, 0.0)}
    report_404(store, "q1", now=2.0)  # the same query again: still one
    assert current(store, PLAIN, ["t"], 2.0)["t"].queries == 1
    report_404(store, "q2", now=3.0)
    assert not current(store, PLAIN, ["t"], 3.0)["t"].holds
    assert report_404(store, "q3", now=4.0)  # weigh counts the third
    assert current(store, PLAIN, ["t"], 4.0) == {"t": RetiredStatus(True, 3, 3, 1, 2.0)}
    assert report_404(store, None, now=5.0)  # holding, each further 404 counts: as the status said
    assert current(store, PLAIN, ["t"], 5.0)["t"].counted == 2


def test_a_success_ends_it() -> None:
    store = MemoryStore()
    for q in ("q1", "q2", "q3"):
        report_404(store, q)
    log(store, "success")
    assert load_run(store, "t") is not None  # the evidence is still there, but the run is over
    assert current(store, PLAIN, ["t"], 1.0) == {}
    assert not report_404(store, "q4", now=1.0)  # as weigh judges it


def test_evidence_older_than_the_window_is_not_counted() -> None:
    store = MemoryStore()
    rule = RetiredRule(false_alarm=1.0, window=100.0)
    for t, q in ((0.0, "q1"), (50.0, "q2"), (60.0, "q3")):
        report_404(store, q, now=t, rule=rule)
    assert current(store, rule, ["t"], 60.0)["t"].holds
    status = current(store, rule, ["t"], 120.0)["t"]  # q1 has expired
    assert (status.holds, status.queries, status.since) == (False, 2, 50.0)
    assert current(store, rule, ["t"], 500.0) == {}  # all expired


def test_need_comes_from_the_tools_history() -> None:
    store = MemoryStore()
    report_404(store, "q1", rule=RetiredRule())  # no history: ten different queries
    assert current(store, RetiredRule(), ["t"], 0.0)["t"].need == 10
    assert current(store, RetiredRule(after=100, false_alarm=1e-300), ["t"], 0.0)["t"].need is None


def test_the_rule_off_or_a_store_without_evidence_says_nothing() -> None:
    store = MemoryStore()
    for q in ("q1", "q2", "q3"):
        report_404(store, q)
    assert current(store, RetiredRule(enabled=False), ["t"], 0.0) == {}

    class NoEvidence:  # a store without EvidenceStore's methods
        pass

    assert current(NoEvidence(), PLAIN, ["t"], 0.0) == {}  # type: ignore[arg-type]


def test_counts_given_spare_the_reads_of_tools_that_cannot_have_a_run() -> None:
    store = MemoryStore()
    for q in ("q1", "q2", "q3"):
        report_404(store, q, "t")
        report_404(store, q, "u")
    log(store, "success", "u")
    log(store, "tool_error", "w")
    reads: list[list[str]] = []
    load = store.load_evidence_many

    def counted(keys: list[str]) -> dict[str, bytes]:
        reads.append(list(keys))
        return load(keys)

    store.load_evidence_many = counted  # type: ignore[method-assign]
    stats = store.outcome_stats()
    assert current(store, PLAIN, ["t", "u", "v", "w"], 0.0, stats).keys() == {"t"}  # "u" succeeded since
    assert reads == [["retired:t", "retired:u"]]  # one read; "v" and "w" have no caller error
    reads.clear()
    assert current(store, PLAIN, ["t", "u", "v"], 0.0).keys() == {"t"}  # without counts: every tool read
    assert reads == [["retired:t", "retired:u", "retired:v"]]


def test_a_store_without_the_batch_read_is_read_key_by_key() -> None:
    inner = MemoryStore()
    for q in ("q1", "q2", "q3"):
        report_404(inner, q, "t")

    class OneByOne:  # an EvidenceStore of its own: load_evidence_many is optional
        reads: list[str] = []

        def load_evidence(self, key: str) -> bytes | None:
            self.reads.append(key)
            return inner.load_evidence(key)

        def update_evidence(self, key, update) -> None:
            inner.update_evidence(key, update)

        def outcome_stats(self, tool_ids=None):
            return inner.outcome_stats(tool_ids)

    store = OneByOne()
    assert current(store, PLAIN, ["t", "v"], 0.0) == {"t": RetiredStatus(True, 3, 3, 1, 0.0)}  # type: ignore[arg-type]
    assert store.reads == ["retired:t", "retired:v"]


def test_a_clock_gone_back_past_the_last_success_keeps_the_run_in_view() -> None:
    """The store's last outcome is the latest by time: logged at 2000, a success stays the last outcome
    while a clock stepped back to 1000 logs a run of 404s, which the rule counts all the same."""
    store = MemoryStore()
    for i in range(20):
        log(store, "success", now=2000.0 + i)
    assert [report_404(store, q, now=1000.0) for q in ("q1", "q2", "q3")] == [False, False, True]
    stats = store.outcome_stats()
    assert stats["t"].last_outcome == "success"
    assert current(store, PLAIN, ["t"], 1000.0, stats) == current(store, PLAIN, ["t"], 1000.0)
    assert current(store, PLAIN, ["t"], 1000.0, stats)["t"].holds


def test_counted_as() -> None:
    holding, short = RetiredStatus(True, 3, 3, 1, 0.0), RetiredStatus(False, 2, 3, 0, 0.0)
    assert counted_as(GONE, holding) is OutcomeKind.TOOL_ERROR
    assert counted_as(Outcome(OutcomeKind.CALLER_ERROR, status=410), holding) is OutcomeKind.TOOL_ERROR
    assert counted_as(GONE, short) is None and counted_as(GONE, None) is None
    assert counted_as(Outcome(OutcomeKind.CALLER_ERROR, status=400), holding) is None
    assert counted_as(Outcome(OutcomeKind.CALLER_ERROR), holding) is None  # no status: never evidence
    assert counted_as(Outcome(OutcomeKind.SUCCESS), holding) is None


def test_describe_and_to_dict() -> None:
    holding = RetiredStatus(True, 3, 3, 1, 5.0)
    assert holding.describe() == (
        "404/410 from 3 different queries since the last success: counted as tool_error (a retired endpoint?)"
    )
    assert RetiredStatus(False, 1, 3, 0, 5.0).describe() == (
        "404/410 from 1 different query since the last success (3 count as a retired endpoint)"
    )
    assert "err too often" in RetiredStatus(False, 4, None, 0, 5.0).describe()
    assert holding.to_dict() == {
        "holds": True,
        "queries": 3,
        "need": 3,
        "counted": 1,
        "since": 5.0,
        "summary": holding.describe(),
    }


TOOLS = [
    Tool(id="weather", name="weather_forecast", description="Weather forecast for a city"),
    Tool(id="mail", name="send_email", description="Send an email message"),
]


@pytest.mark.parametrize("own_rule", [None, {"after": 2, "false_alarm": 1.0}, False])
def test_status_of_a_retriever_uses_its_rule_and_clock(tmp_path, clock, own_rule) -> None:
    path = tmp_path / "rated.db"
    Retriever.from_catalog(TOOLS, path, encoder=HashEncoder(64), retired={"false_alarm": 1.0}).close()
    with Retriever.open(path, clock=clock, retired=own_rule) as r:
        r.feedback("weather", GONE, query="forecast for Rome")
        r.feedback("weather", GONE, query="forecast for Oslo")
        found = status_of(r, ["weather", "mail"])
        if own_rule is False:
            assert found == {}
        else:
            assert found.keys() == {"weather"} and found["weather"].queries == 2
            assert found["weather"].holds is (own_rule is not None)  # two are enough for its own rule
            assert found["weather"].since == clock.t
        clock.t += 2 * 86_400  # the retriever's clock, not the wall clock, ages the evidence
        assert status_of(r, ["weather"]) == {}


def test_with_status_fills_in_tool_health(clock) -> None:
    with Retriever.from_catalog(
        TOOLS, encoder=HashEncoder(64), clock=clock, retired={"false_alarm": 1.0}
    ) as r:
        for city in ("Rome", "Oslo", "Lima"):
            r.feedback("weather", GONE, query=f"forecast for {city}")
        for counted in (True, False):
            health = with_status(r, r.tools(stats=counted), counted=counted)
            found = {h.tool.id: h.retired for h in health}
            assert found["mail"] is None and found["weather"] == RetiredStatus(True, 3, 3, 1, clock.t)
        (one,) = with_status(r, [r.health("weather")])
        assert one.to_dict()["retired"] == RetiredStatus(True, 3, 3, 1, clock.t).to_dict()
        assert "retired" not in r.health("mail").to_dict()  # no run: as before the rule (no null)
        # health read without counts, passed as counted: nothing to go on, so no tool is read
        assert all(h.retired is None for h in with_status(r, r.tools(stats=False)))
