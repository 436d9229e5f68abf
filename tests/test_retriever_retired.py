"""A retired endpoint through the retriever (``rated.retired``): 404/410 caller errors from different
queries, with no success in between, demote the tool; the outcome log keeps what the agents reported; the
evidence is shared by every retriever on one store, also while they write at once."""

from __future__ import annotations

import threading

import httpx
import pytest

from rated import Tool
from rated.classify import outcome_from_status
from rated.encode.testing import HashEncoder
from rated.errors import ConfigError, IndexFormatError
from rated.outcome import Outcome, OutcomeKind
from rated.retired import RetiredRule, load_run
from rated.retriever import Retriever

QUERY = "weather forecast for a city"
TOOLS = [
    Tool(id="weather", name="weather_forecast", description="Weather forecast for a city"),
    Tool(id="weather.b", name="forecast", description="Weather forecast for a city, daily"),
    Tool(id="mail", name="send_email", description="Send an email message"),
]
MOVED = Tool(id="weather", name="weather_forecast", description="Weather forecast, new endpoint")
REQUEST = httpx.Request("GET", "https://weather.invalid/v1/forecast")
HISTORY = 20  # successes before the 404s: a clean history, so three different queries are enough


def build(db, clock, **config) -> Retriever:
    """Both forecast tools with a clean history; a minute later (a success at the very instant of a failure
    would outweigh it) the tests report their 404s."""
    r = Retriever.from_catalog(TOOLS, db, encoder=HashEncoder(64), clock=clock, **config)
    for i in range(HISTORY):
        for tool_id in ("weather", "weather.b"):
            r.feedback(tool_id, "success", query=f"forecast for town {i}")
    clock.t += 60
    return r


@pytest.fixture
def r(clock):
    retriever = build(None, clock)
    yield retriever
    retriever.close()


def top(r: Retriever) -> str:
    return r.retrieve(QUERY, k=1)[0].id


def gone(status: int = 404) -> Outcome:
    return outcome_from_status(status)


def test_404s_for_three_different_queries_demote_the_tool(r: Retriever) -> None:
    assert top(r) == "weather"
    r.feedback("weather", gone(), query="forecast for Rome")
    r.feedback("weather", gone(), query="forecast for Oslo")
    assert top(r) == "weather" and r.health("weather").healthy  # two: still the caller's mistakes
    r.feedback("weather", gone(), query="forecast for Lima")
    assert top(r) == "weather.b"
    assert not r.health("weather").healthy
    run = load_run(r.store, "weather")
    assert run is not None and len(run.queries) == 3 and run.counted == 1


def test_the_outcome_log_keeps_what_the_agents_reported(r: Retriever) -> None:
    for city in ("Rome", "Oslo", "Lima", "Quito", "Pune"):
        r.feedback("weather", gone(), query=f"forecast for {city}")
    assert not r.health("weather").healthy
    records = r.outcomes("weather", limit=5)
    assert [rec.outcome for rec in records] == ["caller_error"] * 5
    assert all(rec.query_hash is not None for rec in records)
    stats = r.health("weather").stats
    assert (stats.successes, stats.failures, stats.caller_errors) == (HISTORY, 0, 5)
    assert load_run(r.store, "weather").counted == 3  # what the policy learned as failures instead


def test_404s_for_one_repeated_query_do_not(r: Retriever) -> None:
    states = r.store.load_states()
    for _ in range(10):
        r.feedback("weather", gone(), query="forecast for Atlantis")
    assert r.store.load_states() == states  # nothing learned
    assert top(r) == "weather" and r.health("weather").healthy


def test_a_success_in_between_starts_over(clock) -> None:
    with build(None, clock, retired={"false_alarm": 1.0}) as r:  # three queries, whatever the history
        r.feedback("weather", gone(), query="forecast for Rome")
        r.feedback("weather", gone(), query="forecast for Oslo")
        r.feedback("weather", "success", query="forecast for Paris")
        clock.t += 60
        r.feedback("weather", gone(), query="forecast for Lima")
        r.feedback("weather", gone(), query="forecast for Quito")
        assert top(r) == "weather" and r.health("weather").healthy
        r.feedback("weather", gone(), query="forecast for Pune")  # three since the success
        assert top(r) == "weather.b"


def test_410_counts_as_404_does(r: Retriever) -> None:
    for city in ("Rome", "Oslo", "Lima"):
        r.feedback("weather", gone(410), query=f"forecast for {city}")
    assert top(r) == "weather.b"


@pytest.mark.parametrize("status", [400, 405, 409, 413, 415, 422])
def test_other_4xx_never_count(r: Retriever, status: int) -> None:
    states = r.store.load_states()
    for i in range(30):
        r.feedback("weather", outcome_from_status(status), query=f"forecast for city {i}")
    assert r.store.load_states() == states
    assert top(r) == "weather" and load_run(r.store, "weather") is None


def test_caller_errors_without_a_status_never_count(r: Retriever) -> None:
    states = r.store.load_states()
    for i in range(30):
        r.feedback("weather", "caller_error", query=f"forecast for city {i}")
    assert r.store.load_states() == states and load_run(r.store, "weather") is None


def test_track_and_call_report_the_status_that_is_weighed(r: Retriever) -> None:
    def fetch(city: str) -> None:
        response = httpx.Response(404, request=REQUEST)
        raise httpx.HTTPStatusError("404 Not Found", request=REQUEST, response=response)

    with pytest.raises(httpx.HTTPStatusError), r.track("weather", query="forecast for Rome"):
        fetch("Rome")
    with r.track("weather", query="forecast for Oslo") as call:
        call.report_status(404)  # a client that returns error responses instead of raising them
    with pytest.raises(httpx.HTTPStatusError):
        r.call("weather", fetch, {"city": "Lima"}, query="forecast for Lima")
    assert top(r) == "weather.b"
    assert [rec.outcome for rec in r.outcomes("weather", limit=3)] == ["caller_error"] * 3


def test_feedback_keeps_the_status_with_a_retry_after(r: Retriever) -> None:
    for city in ("Rome", "Oslo", "Lima"):  # a retry_after given beside an Outcome keeps its status
        r.feedback("weather", gone(), query=f"forecast for {city}", retry_after=5)
    assert top(r) == "weather.b"


def test_demoted_tool_recovers_with_time_and_a_success_ends_the_run(r: Retriever, clock) -> None:
    for city in ("Rome", "Oslo", "Lima"):
        r.feedback("weather", gone(), query=f"forecast for {city}")
    assert top(r) == "weather.b"
    clock.t += 3600  # the belief relaxes: the tool is tried again
    assert top(r) == "weather"
    r.feedback("weather", gone(), query="forecast for Rome")  # still gone: out again at once
    assert top(r) == "weather.b"
    clock.t += 7 * 24 * 3600
    r.feedback("weather", "success", query="forecast for Rome")  # fixed (or moved back)
    r.feedback("weather", gone(), query="forecast for Oslo")
    assert top(r) == "weather" and r.health("weather").healthy


def test_a_probe_does_not_end_the_run(r: Retriever, clock) -> None:
    for city in ("Rome", "Oslo", "Lima"):
        r.feedback("weather", gone(), query=f"forecast for {city}")
    clock.t += 60
    r.feedback("weather", "success", probe=True)  # the server answers its health check
    assert r.health("weather").healthy
    clock.t += 60
    r.feedback("weather", gone(), query="forecast for Rome")  # the endpoint does not
    assert not r.health("weather").healthy


def test_switched_off_never_counts(clock) -> None:
    with build(None, clock, retired=False) as r:
        for i in range(10):
            r.feedback("weather", gone(), query=f"forecast for city {i}")
        assert top(r) == "weather" and load_run(r.store, "weather") is None
        assert r.meta.retired == {"after": 3, "window": 86_400.0, "false_alarm": 1e-3, "enabled": False}


def test_the_rule_is_saved_with_the_index_and_open_may_replace_it(tmp_path, clock) -> None:
    path = tmp_path / "rated.db"
    build(path, clock, retired={"after": 4, "false_alarm": 1.0}).close()
    with Retriever.open(path, clock=clock) as r:  # the saved rule: four different queries
        for city in ("Rome", "Oslo", "Lima"):
            r.feedback("weather", gone(), query=f"forecast for {city}")
        assert top(r) == "weather"
        r.feedback("weather", gone(), query="forecast for Pune")
        assert top(r) == "weather.b"
    with Retriever.open(path, clock=clock, retired=False) as r:  # off in this process only
        for i in range(5):
            r.feedback("weather.b", gone(), query=f"forecast for city {i}")
        assert load_run(r.store, "weather.b") is None and r.health("weather.b").healthy
        assert r.reopen()._retired_rule().enabled is False
        assert r.meta.retired["after"] == 4  # the saved rule is unchanged


def test_bad_rules_are_refused_before_anything_is_built(tmp_path, clock) -> None:
    with pytest.raises(ConfigError, match="retired.after"):
        Retriever.from_catalog(TOOLS, tmp_path / "x.db", encoder=HashEncoder(64), retired={"after": 0})
    assert not (tmp_path / "x.db").exists()  # refused before the store was opened
    with pytest.raises(ConfigError, match="unknown retired option"):
        Retriever.from_catalog(TOOLS, encoder=HashEncoder(64), retired={"after_queries": 3})
    build(tmp_path / "y.db", clock).close()
    with pytest.raises(ConfigError, match="retired must be"):
        Retriever.open(tmp_path / "y.db", retired="off")


def test_a_damaged_saved_rule_is_named_when_opened(tmp_path, clock) -> None:
    path = tmp_path / "rated.db"
    build(path, clock).close()
    with Retriever.open(path) as r:
        r.store.set_meta({**r.store.get_meta(), "retired": {"after": -1}})
    with pytest.raises(IndexFormatError, match="rule for retired endpoints is damaged.*retired.after"):
        Retriever.open(path)


def test_a_saved_rule_of_null_is_the_default_rule(tmp_path, clock) -> None:
    path = tmp_path / "rated.db"
    build(path, clock, retired={"after": 5, "false_alarm": 1.0}).close()
    with Retriever.open(path) as r:
        r.store.set_meta({**r.store.get_meta(), "retired": None})  # as a hand edit or another writer left it
    with Retriever.open(path, clock=clock) as r:
        assert r.meta.retired == {} and r._retired_rule() == RetiredRule()
        for city in ("Rome", "Oslo", "Lima"):
            r.feedback("weather", gone(), query=f"forecast for {city}")
        assert top(r) == "weather.b"  # the default rule: three different queries


def _three_404s_then(r: Retriever) -> None:
    for city in ("Rome", "Oslo", "Lima"):
        r.feedback("weather", gone(), query=f"forecast for {city}")
    assert not r.health("weather").healthy and load_run(r.store, "weather") is not None


@pytest.mark.parametrize("db", [None, "rated.db"])
def test_a_tool_removed_and_added_again_starts_without_evidence(tmp_path, clock, db) -> None:
    with build(db and tmp_path / db, clock, retired={"false_alarm": 1.0}) as r:
        _three_404s_then(r)
        r.remove_tools(["weather"])
        assert load_run(r.store, "weather") is None
        r.add_tools([MOVED])
        r.feedback("weather", gone(), query="forecast for Pune")  # its first call: the caller's mistake
        run = load_run(r.store, "weather")
        assert run is not None and len(run.queries) == 1 and run.counted == 0
        assert r.health("weather").healthy


def _removed_first(monkeypatch, a: Retriever, b: Retriever, write: str) -> None:
    """``b`` removes "weather" right before ``a``'s next ``write`` to the store: ``a``'s feedback found the
    tool and writes what it learned after another process removed it (the race, made deterministic)."""
    original = getattr(a.store, write)

    def removal_first(*args, **kwargs):
        monkeypatch.setattr(a.store, write, original)
        b.remove_tools(["weather"])
        return original(*args, **kwargs)

    monkeypatch.setattr(a.store, write, removal_first)


@pytest.fixture
def two(tmp_path, clock):
    """Two retrievers on one SQLite file, as two processes (the plain rule: three different queries)."""
    path = tmp_path / "rated.db"
    build(path, clock, retired={"false_alarm": 1.0}).close()
    with Retriever.open(path, clock=clock) as a, Retriever.open(path, clock=clock) as b:
        yield a, b


@pytest.mark.parametrize("adder", ["racing", "remover"])
def test_a_404_racing_the_removal_is_no_evidence_against_the_tool_added_again(
    two, monkeypatch, adder
) -> None:
    a, b = two
    b.feedback("weather.b", gone(), query="forecast for Rome")  # evidence of a tool that stays
    _removed_first(monkeypatch, a, b, "update_evidence")
    a.feedback("weather", gone(), query="forecast for Rome")
    (a if adder == "racing" else b).add_tools([MOVED])
    assert load_run(a.store, "weather") is None
    for city in ("Oslo", "Lima"):  # two different queries: the rule needs three
        a.feedback("weather", gone(), query=f"forecast for {city}")
    assert a.health("weather").healthy and b.health("weather").healthy
    assert len(load_run(b.store, "weather.b").queries) == 1  # kept


@pytest.mark.parametrize("adder", ["racing", "remover"])
@pytest.mark.parametrize("add", ["add_tools", "sync_tools"])
def test_what_a_feedback_racing_the_removal_learned_is_not_the_tool_added_again(
    two, monkeypatch, clock, adder, add
) -> None:
    a, b = two
    _removed_first(monkeypatch, a, b, "update_states")
    a.feedback("weather", "tool_error", query="forecast for Rome")
    getattr(a if adder == "racing" else b, add)([MOVED])
    assert a.store.load_states(["weather"]) == {}
    with Retriever.open(a.store.path, clock=clock) as fresh:  # as any process opening the store sees it
        expected = fresh.health("weather").components
        assert a.health("weather").components == expected and b.health("weather").components == expected
    assert a.store.load_states(["weather.b"])  # the other tools keep what they learned


@pytest.mark.parametrize("adder", ["same", "other"])
@pytest.mark.parametrize("add", ["add_tools", "sync_tools"])
def test_a_tool_added_to_a_provider_leaves_the_providers_learned_state(tmp_path, clock, adder, add):
    """A guard: the change that adds a tool drops what is held under its own id only; the provider's
    shared state (``provider:ACME``), which its other tools' feedback wrote, stays in the store and in
    every retriever, as a process opening the store sees it."""
    acme = [Tool(id=f"acme.{n}", name=n, description=f"Weather {n}", provider="acme") for n in "ab"]
    path = tmp_path / "rated.db"
    Retriever.from_catalog([acme[0], TOOLS[2]], path, encoder=HashEncoder(64), clock=clock).close()
    with Retriever.open(path, clock=clock) as a, Retriever.open(path, clock=clock) as b:
        for i in range(3):
            a.feedback("acme.a", "tool_error", query=f"forecast for town {i}")
        learned = a.store.load_states(["provider:acme", "acme.a"])
        assert set(learned) == {"provider:acme", "acme.a"}
        adding = a if adder == "same" else b
        if add == "add_tools":
            adding.add_tools([acme[1]])
        else:
            adding.sync_tools([*acme, TOOLS[2]])
        assert a.store.load_states(["provider:acme", "acme.a"]) == learned
        with Retriever.open(path, clock=clock) as fresh:
            for tool_id in ("acme.a", "acme.b"):
                expected = fresh.health(tool_id).components
                assert a.health(tool_id).components == expected == b.health(tool_id).components


def test_a_rebuilt_index_starts_without_evidence(tmp_path, clock) -> None:
    path = tmp_path / "rated.db"
    with build(path, clock, retired={"false_alarm": 1.0}) as r:
        _three_404s_then(r)
    with Retriever.from_catalog(
        TOOLS, path, encoder=HashEncoder(64), clock=clock, overwrite=True, retired={"false_alarm": 1.0}
    ) as r:
        assert load_run(r.store, "weather") is None
        r.feedback("weather", gone(), query="forecast for Pune")
        assert load_run(r.store, "weather").counted == 0 and r.health("weather").healthy


def test_two_retrievers_on_one_sqlite_file_share_the_evidence(tmp_path, clock) -> None:
    path = tmp_path / "rated.db"
    build(path, clock).close()
    with Retriever.open(path, clock=clock) as a, Retriever.open(path, clock=clock) as b:
        a.feedback("weather", gone(), query="forecast for Rome")
        b.feedback("weather", gone(), query="forecast for Oslo")
        a.feedback("weather", gone(), query="forecast for Lima")  # the third, across processes' writes
        assert top(a) == "weather.b" and top(b) == "weather.b"
        b.feedback("weather", "success", query="forecast for Paris")  # b's success ends a's run too
        a.feedback("weather", gone(), query="forecast for Quito")
        run = load_run(a.store, "weather")
        assert run is not None and len(run.queries) == 1 and run.successes == HISTORY + 1


def test_concurrent_writers_count_each_report_once(tmp_path, clock) -> None:
    path = tmp_path / "rated.db"
    build(path, clock).close()
    retrievers = [Retriever.open(path, clock=clock, busy_timeout=30) for _ in range(3)]
    start = threading.Barrier(len(retrievers))
    errors: list[BaseException] = []

    def report(i: int, r: Retriever) -> None:
        try:
            start.wait()
            for j in range(4):
                r.feedback("weather", gone(), query=f"forecast for city {i}-{j}")
        except BaseException as exc:  # pragma: no cover - shown by the assertion
            errors.append(exc)

    threads = [threading.Thread(target=report, args=(i, r)) for i, r in enumerate(retrievers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    try:
        assert errors == []
        run = load_run(retrievers[0].store, "weather")
        # twelve different queries, no update lost: all but the first two counted
        assert run is not None and len(run.queries) == 12 and run.counted == 10
        assert retrievers[0].health("weather").stats.caller_errors == 12
        assert not retrievers[1].health("weather").healthy
    finally:
        for r in retrievers:
            r.close()


def test_a_tool_whose_callers_often_get_404s_is_not_demoted_by_them(clock) -> None:
    """A lookup tool whose agents often name records that do not exist: 30% of its calls are 404s."""
    with build(None, clock) as r:
        for i in range(200):
            if i % 10 in (1, 4, 7):  # three 404s in every ten calls, from different queries
                r.feedback("weather", gone(), query=f"forecast for record {i}")
            else:
                r.feedback("weather", "success", query=f"forecast for town {i}")
            clock.t += 1
        assert load_run(r.store, "weather").counted == 0
        assert top(r) == "weather" and r.health("weather").healthy


def test_the_same_tool_once_retired_needs_more_queries_than_the_plain_rule(clock) -> None:
    with build(None, clock) as r:  # 30 caller errors among 100 calls before the endpoint went
        for i in range(30):
            r.feedback("weather", "caller_error", query=f"forecast for record {i}")
        for i in range(50):
            r.feedback("weather", "success", query=f"forecast for town {i}")
        clock.t += 60
        for i in range(5):
            r.feedback("weather", gone(), query=f"forecast for city {i}")
        assert top(r) == "weather"  # five in a row: once in about 400 runs at its 30% rate
        r.feedback("weather", gone(), query="forecast for city 5")
        assert top(r) == "weather.b"


def test_probe_reports_are_not_weighed(r: Retriever) -> None:
    for _ in range(5):
        r.feedback("weather", Outcome(OutcomeKind.CALLER_ERROR, status=404), probe=True)
    assert load_run(r.store, "weather") is None


def test_a_rule_object_is_accepted(clock) -> None:
    with build(None, clock, retired=RetiredRule(after=2, false_alarm=1.0)) as r:
        r.feedback("weather", gone(), query="forecast for Rome")
        r.feedback("weather", gone(), query="forecast for Oslo")
        assert top(r) == "weather.b"


def test_feedback_returns_what_the_policy_learned(r: Retriever) -> None:
    assert r.feedback("weather", "success", query="forecast for Bern").kind is OutcomeKind.SUCCESS
    kinds = [r.feedback("weather", gone(), query=f"forecast for {c}").kind for c in ("Rome", "Oslo", "Lima")]
    assert kinds == [OutcomeKind.CALLER_ERROR, OutcomeKind.CALLER_ERROR, OutcomeKind.TOOL_ERROR]
    learned = r.feedback("weather", gone(410), query="forecast for Quito")
    assert learned.kind is OutcomeKind.TOOL_ERROR and learned.status == 410
    assert r.feedback("mail", gone(), query="send a message").kind is OutcomeKind.CALLER_ERROR


def test_retired_rule_and_now_are_public(r: Retriever, clock) -> None:
    assert r.retired_rule == r._retired_rule() and isinstance(r.retired_rule, RetiredRule)
    assert r.now() == float(clock.t)
