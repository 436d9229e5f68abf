"""rated's own options in a Redis URL (``?rated_max_outcomes=``, ``?rated_namespace=``, ``#namespace``),
kept apart from redis-py's query options, checked with errors that name them, never showing a password."""

from __future__ import annotations

import uuid

import pytest

from rated.errors import ConfigError
from rated.store.redis_url import redact_url, split_url


def test_rated_keys_are_taken_out_and_redis_keys_left_exactly_as_written():
    url, options = split_url(
        "redis://:pw@h:6379/2?socket_timeout=2.5&rated_max_outcomes=500&health_check_interval=30"
        "&rated_namespace=prod"
    )
    assert url == "redis://:pw@h:6379/2?socket_timeout=2.5&health_check_interval=30"
    assert options == {"max_outcomes": 500, "namespace": "prod"}
    assert split_url("redis://h/0?rated_max_outcomes=None") == ("redis://h/0", {"max_outcomes": None})
    assert split_url("redis://h/0#ns") == ("redis://h/0", {"namespace": "ns"})
    assert split_url("redis://h/0?rated_namespace=ns#ns") == ("redis://h/0", {"namespace": "ns"})
    assert split_url("unix:///run/redis.sock?db=1") == ("unix:///run/redis.sock?db=1", {})


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("redis://h/0?rated_max_outcomes=0", "rated_max_outcomes='0': expected an integer >= 1"),
        ("redis://h/0?rated_max_outcomes=-5", "rated_max_outcomes='-5': expected an integer >= 1"),
        ("redis://h/0?rated_max_outcomes=1e5", "rated_max_outcomes='1e5'"),
        ("redis://h/0?rated_max_outcomes=", "rated_max_outcomes=''"),
        ("redis://h/0?rated_namespace=a:b", "rated_namespace='a:b': expected a non-empty name without ':'"),
        ("redis://h/0?rated_namespace=", "rated_namespace=''"),
        ("redis://h/0?rated_maxoutcomes=5", "unknown Redis URL option rated_maxoutcomes='5': rated reads"),
        ("redis://h/0?rated_busy_timeout=5", "unknown Redis URL option rated_busy_timeout"),
        ("redis://h/0?rated_max_outcomes=5&rated_max_outcomes=6", "rated_max_outcomes is given twice"),
        ("redis://h/0?rated_namespace=a#b", "two namespaces: rated_namespace='a' and #b"),
        ("redis://h/0#a:b", "namespace #a:b: expected a non-empty name without ':'"),
    ],
)
def test_bad_rated_options_are_config_errors_naming_option_and_value(url, message):
    with pytest.raises(ConfigError) as info:
        split_url(url)
    assert message in str(info.value)


@pytest.mark.parametrize(
    ("url", "message"),
    [
        (
            "redis://127.0.0.1:1/0?bogus=1",
            "invalid Redis URL 'redis://127.0.0.1:1/0?bogus=1': unknown option",
        ),
        ("redis://127.0.0.1:1/0?max_outcomes=5", "prefix rated_: ?rated_max_outcomes=..."),
        ("redis://:s3cret@127.0.0.1:1/0?bogus=1", "'redis://:***@127.0.0.1:1/0?bogus=1'"),
        ("redis://127.0.0.1:1/0?password=s3cret&bogus=1", "'redis://127.0.0.1:1/0?password=***&bogus=1'"),
    ],
)
def test_a_query_key_redis_does_not_know_is_a_config_error_at_open(url, message):
    """redis-py hands unknown query keys to its connection, which raises a TypeError at the first
    command; the store reports it when it opens, naming the key (no server needed: nothing connects)."""
    pytest.importorskip("redis")
    from rated.store.open import open_store

    with pytest.raises(ConfigError) as info:
        open_store(url)
    assert message in str(info.value) and "s3cret" not in str(info.value)


def test_the_password_is_never_shown():
    from rated.retriever_setup import describe_db

    assert redact_url("redis://h/0?password=s3cret&db=1") == "redis://h/0?password=***&db=1"
    assert redact_url("redis://u:s3cret@h/0?rated_max_outcomes=5") == "redis://u:***@h/0?rated_max_outcomes=5"
    assert redact_url("redis://[::1/0?password=s3cret") == "redis://[::1/0?password=***"
    assert redact_url("redis://h/0?") == "redis://h/0?"  # nothing to hide: the URL as written
    assert describe_db("redis://:s3cret@h:6379/0#ns") == "redis://:***@h:6379/0#ns"
    assert describe_db("rediss://h/0?password=s3cret") == "rediss://h/0?password=***"


def test_url_options_reach_the_redis_store_and_cap_its_log(redis_url):
    from rated.store.base import OutcomeRecord
    from rated.store.open import open_store

    ns = f"u{uuid.uuid4().hex[:8]}"
    store = open_store(f"{redis_url}?rated_max_outcomes=3&socket_timeout=5&rated_namespace={ns}")
    assert (store.namespace, store.max_outcomes) == (ns, 3)
    assert "rated_" not in store.url  # the URL redis-py got, and the one messages show
    records = [OutcomeRecord(100.0 + i, "t", "success") for i in range(5)]
    for record in records:
        store.update_states([], lambda cur: {}, record)
    assert store.outcomes(limit=None) == records[-3:]
    assert store.outcome_stats()["t"].successes == 5
    store.close()
    keep_all = open_store(f"{redis_url}?rated_max_outcomes=none#{ns}")
    assert keep_all.max_outcomes is None and keep_all.namespace == ns
    keep_all.close()


def test_retriever_open_takes_the_cap_from_the_url_and_refuses_a_conflicting_option(redis_url):
    from rated import Tool
    from rated.encode.testing import HashEncoder
    from rated.retriever import Retriever

    db = f"{redis_url}?rated_namespace=r{uuid.uuid4().hex[:8]}"
    tools = [Tool(id="a", name="a", description="send mail"), Tool(id="b", name="b", description="weather")]
    Retriever.from_catalog(tools, db=db, encoder=HashEncoder(16)).close()
    with Retriever.open(f"{db}&rated_max_outcomes=2", encoder=HashEncoder(16), max_outcomes=2) as r:
        for outcome in ("success", "tool_error", "timeout"):
            r.feedback("a", outcome)
        assert [o.outcome for o in r.outcomes(limit=None)] == ["tool_error", "timeout"]
        (health,) = [h for h in r.tools() if h.tool.id == "a"]
        assert (health.stats.successes, health.stats.failures) == (1, 2)
    with pytest.raises(
        ConfigError, match=r"max_outcomes is given twice, 2 in the Redis URL and 5 as an option"
    ):
        Retriever.open(f"{db}&rated_max_outcomes=2", encoder=HashEncoder(16), max_outcomes=5)
    with pytest.raises(ConfigError, match="namespace is given twice"):
        Retriever.open(db, encoder=HashEncoder(16), namespace="other")


def test_cli_reports_a_bad_url_option_in_one_line(capsys):
    pytest.importorskip("redis")
    from rated.cli import main

    assert main(["tools", "--db", "redis://:s3cret@127.0.0.1:1/0?rated_max_outcomes=lots"]) != 0
    err = capsys.readouterr().err
    assert "rated_max_outcomes='lots'" in err and "s3cret" not in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1
