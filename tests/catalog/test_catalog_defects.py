"""Metadata defect codes: each rule fires when it should and stays quiet otherwise."""

from __future__ import annotations

import numpy as np
import pytest

from rated.catalog.defects import Defect, endpoint_is_valid, find_defects, tool_defects
from rated.catalog.schema import Tool
from rated.errors import ConfigError


def test_clean_tool_has_no_defect() -> None:
    t = Tool(
        id="a",
        name="weather",
        description="Current weather for a city",
        endpoint="https://api.weather.example.com/v1",
        auth={"type": "api_key", "credential": "WEATHER_KEY"},
    )
    assert tool_defects(t, r_cons=0.7) == ()


def test_local_tool_needs_no_endpoint_or_auth() -> None:
    assert tool_defects(Tool(id="a", name="calc", description="Evaluate arithmetic")) == ()


@pytest.mark.parametrize(
    ("kwargs", "expected"),
    [
        ({"description": ""}, Defect.MISSING_DESCRIPTION),
        ({"description": "Send  Email"}, Defect.MISSING_DESCRIPTION),
        ({"endpoint": "https://api.x.com"}, Defect.MISSING_AUTH),
        ({"auth": {"credential": "X_TOKEN"}}, Defect.MISSING_AUTH),
        ({"parameters": {"properties": {"api_key": {}}}}, Defect.MISSING_AUTH),
        ({"description": "Needs an API key to post"}, Defect.MISSING_AUTH),
        ({"auth": {"type": "oauth2"}}, Defect.MISSING_ENDPOINT),
        ({"endpoint": "not a url"}, Defect.MALFORMED_ENDPOINT),
        ({"endpoint": "ftp://files.example.com"}, Defect.MALFORMED_ENDPOINT),
        ({"endpoint": "https://"}, Defect.MALFORMED_ENDPOINT),
    ],
)
def test_each_rule(kwargs: dict, expected: Defect) -> None:
    base = {"id": "t", "name": "send email", "description": "Deliver a message to an inbox"}
    assert expected.value in tool_defects(Tool(**{**base, **kwargs}))


def test_mismatch_needs_r_cons_and_a_description() -> None:
    tools = [Tool(id="a", name="x", description="y z"), Tool(id="b", name="x", description="")]
    out = find_defects(tools, np.array([0.05, 0.0], dtype=np.float32))
    assert Defect.NAME_MISMATCH.value in out[0]
    assert Defect.NAME_MISMATCH.value not in out[1]
    assert find_defects(tools)[0] == ()
    with pytest.raises(ConfigError):
        find_defects(tools, np.zeros(3))


@pytest.mark.parametrize(
    ("url", "ok"),
    [
        ("https://api.example.com/v1", True),
        ("http://localhost:8080", True),
        ("https://{subdomain}.zendesk.com/api/v2", True),
        ("https://{{$credentials.domain}}", True),
        ("wss://stream.example.org", True),
        ("example.com", False),
        ("https://exa mple.com", False),
        ("https://example", False),
        ("https://example.com:port", False),
        ("mailto:a@b.com", False),
    ],
)
def test_endpoint_validation(url: str, ok: bool) -> None:
    assert endpoint_is_valid(url) is ok


def test_self_hosted_endpoint_template_is_not_missing() -> None:
    t = Tool(id="a", name="ping", description="Ping the server", auth={"type": "api_key", "credential": "k"})
    assert Defect.MISSING_ENDPOINT.value in tool_defects(t)
    hosted = t.model_copy(update={"extra": {"endpoint_template": "{url}/api"}})
    assert Defect.MISSING_ENDPOINT.value not in tool_defects(hosted)
