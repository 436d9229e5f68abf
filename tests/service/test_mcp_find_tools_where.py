"""MCP find_tools' filter arguments (exclude, only, source, tags, provider, auth): the library's filtered
answer, described for the model, errors naming the argument, nothing allowed an empty result."""

from __future__ import annotations

import anyio
import pytest

pytest.importorskip("mcp")

from mcp import Client  # noqa: E402

from rated.encode.testing import HashEncoder  # noqa: E402
from rated.retriever import Retriever  # noqa: E402
from rated.service.mcp_server import build_mcp_server  # noqa: E402

QUERY = "send an email message"
FILTER_ARGUMENTS = ["exclude", "only", "source", "tags", "provider", "auth"]


@pytest.fixture(scope="module")
def retriever(filter_catalog):
    with Retriever.from_catalog(filter_catalog, encoder=HashEncoder(64), clock=lambda: 1000.0) as r:
        yield r


def calls(retriever, *arguments: dict) -> list:
    """The results of find_tools for each argument set, in one session."""

    async def session() -> list:
        async with Client(build_mcp_server(retriever)) as client:
            return [await client.call_tool("find_tools", {"query": QUERY, **a}) for a in arguments]

    return anyio.run(session)


def ranked(hits) -> list[tuple[str, float]]:
    return [(h["id"], h["score"]) if isinstance(h, dict) else (h.id, h.score) for h in hits]


def test_the_filter_arguments_are_described_for_the_model(retriever):
    async def session():
        async with Client(build_mcp_server(retriever)) as client:
            return {t.name: t for t in (await client.list_tools()).tools}["find_tools"]

    find = anyio.run(session)
    props = find.input_schema["properties"]
    assert list(props) == ["query", "k", "format", *FILTER_ARGUMENTS]
    assert find.input_schema["required"] == ["query"] and find.input_schema["additionalProperties"] is False
    for name in FILTER_ARGUMENTS:
        assert props[name]["default"] is None and "list of strings" in props[name]["description"]
        assert {"type": "array", "items": {"type": "string"}} in props[name]["anyOf"]
    assert "just failed" in props["exclude"]["description"] and "api_key" in props["auth"]["description"]
    assert "exclude (ids not to return" in find.description and "No hits means" in find.description
    # exclude is lenient, only is not (9d64749): the model must know a misspelt exclude is silently ignored
    assert "an id of no tool excludes nothing" in find.description
    assert "only (the ids you may call; an id of no tool is an error)" in find.description


@pytest.mark.parametrize(
    ("arguments", "where"),
    [
        ({"exclude": ["gmail.send"]}, {"exclude": ["gmail.send"]}),
        ({"exclude": "gmail.send"}, {"exclude": ["gmail.send"]}),  # one string
        ({"exclude": '["gmail.send", "outlook.send"]'}, {"exclude": ["gmail.send", "outlook.send"]}),
        ({"only": ["weather", "slack.post", "smtp.send"]}, {"tools": ["weather", "slack.post", "smtp.send"]}),
        ({"source": "N8N", "k": 5}, {"source": "n8n"}),
        ({"tags": ["office", "chat"]}, {"tags": ["office", "chat"]}),
        ({"provider": "smtp.send"}, {"provider": "smtp.send"}),
        (
            {"auth": ["oauth2", "api_key"], "exclude": "outlook.send"},
            {"auth": ["oauth2", "api_key"]} | {"exclude": "outlook.send"},
        ),
    ],
)
def test_the_filtered_answer_is_the_librarys(retriever, arguments, where):
    (result,) = calls(retriever, arguments)
    assert not result.is_error, result.content[0].text
    expected = retriever.retrieve(QUERY, k=arguments.get("k", 5), where=where)
    assert expected and ranked(result.structured_content["hits"]) == ranked(expected)
    assert ranked(expected) != ranked(retriever.retrieve(QUERY, k=arguments.get("k", 5)))


def test_excluding_the_tool_that_failed_gives_the_next_best(retriever):
    (first,) = calls(retriever, {"k": 4})
    top = [h["id"] for h in first.structured_content["hits"]]
    (again,) = calls(retriever, {"k": 3, "exclude": [top[0]]})
    assert [h["id"] for h in again.structured_content["hits"]] == top[1:4]


def test_a_filter_that_allows_no_tool_is_an_empty_result_not_an_error(retriever):
    for result in calls(
        retriever, {"only": []}, {"source": "crewai"}, {"tags": "chat", "auth": "none", "format": "openai"}
    ):
        assert not result.is_error
        assert result.structured_content["hits"] == [] and result.structured_content["count"] == 0


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"only": ["weather", "nope"]}, "argument 'only': unknown tool id: 'nope'"),
        ({"only": "nope"}, "argument 'only': unknown tool id: 'nope'"),
        ({"auth": "token"}, "argument 'auth': unknown auth kind(s) ['token']; expected any of api_key,"),
        ({"exclude": [1]}, "exclude\n  must be a string or a list of strings; item 0 is a number"),
        ({"auth": ["none", None]}, "auth\n  must be a string or a list of strings; item 1 is null"),
        ({"source": {"n8n": True}}, "source\n  must be a string or a list of strings, got an object"),
        (
            {"where": {"exclude": "gmail.send"}},
            "unknown argument(s) 'where'; this tool takes query, k, format, exclude, only, source, tags, "
            "provider, auth",
        ),
    ],
)
def test_bad_filters_are_tool_errors_naming_the_argument(retriever, arguments, message):
    (result,) = calls(retriever, arguments)
    assert result.is_error and message in result.content[0].text
    assert result.content[0].text.count("\n") <= 2  # one problem, said once
