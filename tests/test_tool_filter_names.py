"""named_as: a filter's errors name the option the caller gave (--only, argument 'only'), nothing else."""

import pytest

from rated import Tool
from rated.encode.testing import HashEncoder
from rated.errors import QueryError, UnknownToolError
from rated.retriever import Retriever
from rated.tool_filter import ToolFilter
from rated.tool_filter_names import named_as

NAMES = {"tools": "--only", "exclude": "--exclude", "auth": "--auth"}


@pytest.fixture(scope="module")
def retriever():
    tools = [Tool(id=f"t{i}", name=f"tool_{i}", description=f"send email variant {i}") for i in range(3)]
    with Retriever.from_catalog(tools, encoder=HashEncoder(32)) as r:
        yield r


@pytest.mark.parametrize(
    ("where", "message"),
    [
        ({"tools": ["nope"]}, "--only: unknown tool id: 'nope'"),
        ({"tools": ["nope", "zzz"]}, "--only (and 1 more): unknown tool id: 'nope'"),
    ],
)
def test_unknown_ids_name_the_option(retriever, where, message):
    with pytest.raises(UnknownToolError) as caught, named_as(NAMES):
        retriever.retrieve("send email", where=where)
    assert str(caught.value) == message and caught.value.tool_id == "nope"
    assert type(caught.value) is UnknownToolError


def test_a_bad_auth_kind_names_the_option():
    with pytest.raises(QueryError, match=r"^--auth: unknown auth kind\(s\) \['token'\]; expected any of"):
        with named_as(NAMES):
            ToolFilter.parse({"auth": "token"})


def test_other_errors_and_keys_without_a_name_go_through_unchanged(retriever):
    with pytest.raises(QueryError, match="^query is empty"), named_as(NAMES):
        retriever.retrieve("  ", where={"exclude": "t0"})
    with pytest.raises(UnknownToolError, match="^unknown tool id: 'nope'"), named_as(NAMES):
        retriever.feedback("nope", "success")
    with pytest.raises(QueryError, match="^filter 'source' must hold strings"), named_as(NAMES):
        ToolFilter.parse({"source": [1]})
