"""The prompt carries the paper's rules and the tool's metadata; the parser survives LLM answer shapes."""

from __future__ import annotations

import pytest

from rated.catalog.schema import Tool
from rated.synth.prompt import build_messages, parse_queries

TOOL = Tool(
    id="gmail.send",
    name="sendGmailMessage",
    description="Send an email message from the user's Gmail account.",
    parameters={"properties": {"to_address": {"description": "recipient"}, "subject": {}}},
    tags=("email", "google"),
    provider="google",
    source="langchain",
)


def test_messages_hold_tool_fields_and_rules():
    msgs = build_messages(TOOL, 12)
    assert [m["role"] for m in msgs] == ["system", "user"]
    user = msgs[1]["content"]
    for needle in (
        "sendGmailMessage",
        "send Gmail Message",
        "Send an email message",
        "to address (recipient)",
        "email, google",
        "Write 12 different requests",
        "between 5 and 120 words",
        "Do not copy",
        "Mix intents",
    ):
        assert needle in user, needle


def test_messages_reject_zero_queries():
    with pytest.raises(ValueError):
        build_messages(TOOL, 0)


@pytest.mark.parametrize(
    "answer",
    [
        "Here are the requests:\n1. Email my boss that I am late today\n2. Send Anna the slides please\n"
        '3) "Can you mail the invoice to Bob?"\nI hope this helps!',
        "- Email my boss that I am late today\n* Send Anna the slides please\n"
        "\u2022 Can you mail the invoice to Bob?",
        '["Email my boss that I am late today", "Send Anna the slides please",'
        ' "Can you mail the invoice to Bob?"]',
        '```json\n{"queries": [{"query": "Email my boss that I am late today"},'
        ' "Send Anna the slides please", "Can you mail the invoice to Bob?"]}\n```',
        "Query 1: Email my boss that I am late today\nQuery 2: Send Anna the slides please\n"
        "Query 3: Can you mail the invoice to Bob?",
        "1. **Email my boss that I am late today**\n2. Send Anna the slides please\n"
        "3. Can you mail the invoice to Bob?\n2. Send Anna the slides please",
    ],
)
def test_parse_shapes(answer):
    assert parse_queries(answer) == [
        "Email my boss that I am late today",
        "Send Anna the slides please",
        "Can you mail the invoice to Bob?",
    ]


def test_parse_plain_lines_without_list_markers():
    assert parse_queries("Email my boss now\n\nSend Anna the slides\n") == [
        "Email my boss now",
        "Send Anna the slides",
    ]


def test_parse_empty():
    assert parse_queries("") == []
    assert parse_queries("Sure:") == []


def test_numbered_items_win_over_nested_bullets():
    answer = (
        "1. Plan a hiking trip with clean air for my kids\n"
        "- Home improvement; 2) Indoor air\n"
        "2. Is the air safe for running outside today?"
    )
    assert parse_queries(answer) == [
        "Plan a hiking trip with clean air for my kids",
        "Is the air safe for running outside today?",
    ]
