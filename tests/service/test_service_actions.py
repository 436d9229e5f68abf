"""The actions the HTTP routes and MCP tools share."""

from __future__ import annotations

import pytest

from rated import Tool
from rated.encode.testing import HashEncoder
from rated.errors import StoreError, UnknownToolError
from rated.retriever import Retriever
from rated.service.actions import record_feedback


@pytest.mark.parametrize("error", [UnknownToolError("mail"), StoreError("/x.db was re-indexed ...")])
def test_a_recorded_outcome_is_answered_as_recorded_when_the_health_lookup_fails(monkeypatch, error):
    """The index can change between the write and the health read; an error then would make the caller
    report the outcome again, and it would be counted twice."""

    def fail(*args, **kwargs):
        raise error

    tools = [Tool(id="mail", name="send_email", description="Send an email message")]
    with Retriever.from_catalog(tools, encoder=HashEncoder(32)) as retriever:
        monkeypatch.setattr(retriever, "health", fail)
        out = record_feedback(retriever, "mail", None, outcome="tool_error")
        assert (out.recorded, out.tool_id, out.outcome, out.healthy) == (True, "mail", "tool_error", None)
        assert [o.outcome for o in retriever.outcomes()] == ["tool_error"]
