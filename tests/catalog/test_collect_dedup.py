"""Dedup and id rules: exact duplicates dropped, near-duplicates grouped across sources, stable ids."""

from __future__ import annotations

import random

from rated.catalog.collect.base import unique_ids
from rated.catalog.collect.dedup import dedupe
from rated.catalog.schema import Tool


def _t(tool_id: str, source: str, name: str, desc: str, integration: str = "") -> Tool:
    extra = {"integration": integration} if integration else {}
    return Tool(id=tool_id, source=source, name=name, description=desc, extra=extra)


TOOLS = [
    _t("n8n:slack.message.post", "n8n", "slack_message_post", "Send a message in Slack.", "slack"),
    _t("n8n:slack.channel.archive", "n8n", "slack_channel_archive", "Archive a channel in Slack.", "slack"),
    _t(
        "langchain:send_message",
        "langchain",
        "send_message",
        "Use this tool to send a message to Slack.",
        "slack",
    ),
    _t(
        "llamaindex:slack.send_message",
        "llamaindex",
        "send_message",
        "Send a message to a Slack channel.",
        "slack",
    ),
    _t("crewai:weather", "crewai", "weather", "Current weather for a city.", "weather"),
    _t("public_apis:cat_facts", "public_apis", "Cat Facts", "Daily cat facts", "catfacts"),
    _t("langchain:dup_a", "langchain", "clock", "Tell the time"),
    _t("langchain:dup_b", "langchain", "Clock", "tell  the time"),
]


def test_exact_duplicates_removed_and_recorded() -> None:
    res = dedupe(TOOLS)
    ids = [t.id for t in res.tools]
    assert "langchain:dup_b" not in ids and res.removed == 1
    kept = next(t for t in res.tools if t.id == "langchain:dup_a")
    assert kept.extra["duplicates"] == ["langchain:dup_b"]


def test_near_duplicates_grouped_across_sources_only() -> None:
    res = dedupe(TOOLS)
    by_id = {t.id: t for t in res.tools}
    group = by_id["n8n:slack.message.post"].group
    assert group == "group:langchain:send_message"  # named by its smallest member id
    assert by_id["langchain:send_message"].group == group
    assert by_id["llamaindex:slack.send_message"].group == group
    assert by_id["n8n:slack.channel.archive"].group is None  # same source, different action
    assert by_id["crewai:weather"].group is None and by_id["public_apis:cat_facts"].group is None
    assert res.groups == 1 and res.grouped == 3


def test_a_group_never_holds_two_tools_of_one_source() -> None:
    tools = [
        _t("a:1", "a", "send message", "send a message to a channel", "x"),
        _t("b:1", "b", "send message", "send a message to a channel now", "x"),
        _t("a:2", "a", "send message", "send a message to the channel", "x"),
    ]
    groups = [t.group for t in dedupe(tools).tools]
    assert groups.count(None) == 1


def test_dedupe_is_order_independent_for_groups() -> None:
    shuffled = TOOLS[:6]
    random.Random(3).shuffle(shuffled)
    a = {t.id: t.group for t in dedupe(TOOLS[:6]).tools}
    b = {t.id: t.group for t in dedupe(shuffled).tools}
    assert a == b


def test_unique_ids_are_stable_and_unique() -> None:
    keys = ["search", "search", "send", "search"]
    ids = unique_ids("x", keys, ["a", "b", "c", "a"])
    assert ids[2] == "x:send" and len(set(ids)) == 4
    assert ids[0] == "x:search~a" and ids[1] == "x:search~b" and ids[3] == "x:search~a~2"
    # an id does not move when another tool is added elsewhere
    assert unique_ids("x", [*keys, "new"], ["a", "b", "c", "a", "z"])[:4] == ids
