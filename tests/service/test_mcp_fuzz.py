"""The MCP tools under generated arguments (hypothesis): arbitrary JSON values, near-valid argument sets
with one argument replaced, NaN and infinities, lone surrogates, huge strings, unknown arguments and tool
names. Every call comes back as a result (never an exception out of the server), an error is a tool error
with a clear message (never an internal error), and the store holds exactly the outcomes reported.
"""

from __future__ import annotations

import json
import logging
import math
from collections import Counter

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("mcp")

from anyio.from_thread import start_blocking_portal  # noqa: E402
from mcp import Client  # noqa: E402
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError  # noqa: E402
from mcp.types import CallToolResult, TextContent, jsonrpc_message_adapter  # noqa: E402
from pydantic import ValidationError  # noqa: E402

from rated import Tool  # noqa: E402
from rated.encode.testing import HashEncoder  # noqa: E402
from rated.outcome import OutcomeKind  # noqa: E402
from rated.retriever import Retriever  # noqa: E402
from rated.service import Settings  # noqa: E402
from rated.service.mcp_server import build_mcp_server  # noqa: E402
from rated.service.mcp_stdio import error_reply  # noqa: E402

IDS = ("mail.a", "mail.b", "weather", "café")
MAX_MESSAGE = 1000
FUZZ = settings.get_profile("fuzz-100")  # tests/conftest.py: a fixed run in CI; FUZZ_N=5000 hunts


ODD = ["", " ", "\x00", "\u200b", "cafe\u0301", " Timeout ", "NaN", "null"]
HINT_NAMES = ["Retry-After", "retry-after-ms", "RateLimit-Reset", "X-RateLimit-Reset"]
FLOATS = st.floats() | st.sampled_from([math.nan, math.inf, -math.inf, -0.0, 1e308])
NUMBERS = st.integers() | st.sampled_from([10**30, -(10**30), 2**63, 2**64 + 1]) | FLOATS


def values(surrogates: bool) -> tuple[st.SearchStrategy, st.SearchStrategy]:
    """(text, JSON value) strategies; with ``surrogates``, lone surrogates too (the SDK's client cannot
    send those: it fails to encode them before anything reaches the server)."""
    chars = st.characters(codec=None if surrogates else "utf-8", categories=None)
    odd = st.sampled_from(ODD + (["\ud800", "a\udfffb"] if surrogates else []))
    long = st.sampled_from(["x", "é"]).map(lambda c: c * 10_001)  # built: a listed one would be in reprs
    text = st.text(max_size=40) | st.text(chars, max_size=20) | odd | long | st.sampled_from(IDS)
    json_value = st.recursive(
        st.none() | st.booleans() | NUMBERS | text,
        lambda inner: st.lists(inner, max_size=4) | st.dictionaries(text, inner, max_size=4),
        max_leaves=12,
    )
    return text, json_value


@st.composite
def arguments(draw: st.DrawFn, tool: str, surrogates: bool) -> dict:
    """The tool's arguments, some dropped or replaced by arbitrary JSON, plus unknown ones at times."""
    text, junk = values(surrogates)
    valid = {
        "find_tools": {
            "query": st.sampled_from(["send an email", "weather in Oslo"]) | text,
            "k": st.integers(1, 3) | NUMBERS,
            "exclude": st.none() | st.lists(st.sampled_from(IDS) | text, max_size=3) | text,
            "only": st.none() | st.lists(st.sampled_from(IDS), max_size=3) | text,
            "auth": st.none() | st.sampled_from(["none", "oauth2", "API_KEY"]) | text,
        },
        "report_outcome": {
            "tool_id": st.sampled_from(IDS) | text,
            "outcome": st.sampled_from([k.value for k in OutcomeKind]) | text,
            "query": st.none() | text,
            "status": st.none() | st.sampled_from([200, 400, 429, 503]) | NUMBERS,
            "headers": st.none()
            | st.dictionaries(st.sampled_from(HINT_NAMES) | text, text | junk, max_size=3),
            "retry_after": st.none() | st.integers(-5, 100) | FLOATS,
        },
    }[tool]
    args = {}
    for name, strategy in valid.items():
        choice = draw(st.sampled_from(["valid", "valid", "valid", "junk", "drop"]))
        if choice != "drop":
            args[name] = draw(strategy if choice == "valid" else junk)
    args.update(draw(st.dictionaries(text, junk, max_size=2)))
    if draw(st.integers(0, 9)) == 0:  # a long unknown name, or hundreds of unknown arguments
        count, width = draw(st.sampled_from([(1, 3000), (300, 1)]))
        args.update({f"{i}".ljust(width, "k"): i for i in range(count)})
    return args


class _Unexpected(logging.Handler):
    """Collects what the server (or the SDK around it) logs as an unexpected exception: a bug, answered as
    an internal error."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


TOOLS = ("find_tools", "report_outcome")
REPORT_IDS = st.sampled_from([*IDS, "cafe\u0301"])  # either Unicode form of an id
REPORT_OPTIONAL = {
    "query": st.none() | st.sampled_from(["send an email", "\U0001f4e7 mail"]),
    "retry_after": st.none() | st.integers(0, 10**6) | st.floats(0, 1e308),
}
VALID_REPORT = st.fixed_dictionaries(
    {
        "tool_id": REPORT_IDS,
        "outcome": st.sampled_from([k.value for k in OutcomeKind] + [" Success ", "TIMEOUT"]),
    },
    optional=REPORT_OPTIONAL,
) | st.fixed_dictionaries(
    {"tool_id": REPORT_IDS, "status": st.integers(100, 599)},
    optional={
        **REPORT_OPTIONAL,
        "headers": st.dictionaries(
            st.sampled_from(HINT_NAMES), st.sampled_from(["30", "0", "x"]), max_size=2
        ),
    },
)


def test_mcp_tools_answer_every_argument_set_with_a_result_or_a_clear_tool_error(tmp_path):
    db = tmp_path / "mcp-fuzz.db"
    Retriever.from_catalog(
        [Tool(id=i, name=f"tool_{n}", description=f"tool {i} number {n}") for n, i in enumerate(IDS)],
        db=db,
        encoder=HashEncoder(64),
    ).close()
    expected: Counter[tuple[str, str]] = Counter()
    unexpected = _Unexpected()
    loggers = [logging.getLogger(name) for name in ("rated", "mcp")]  # ours, and the SDK's for its own
    for logger in loggers:
        logger.addHandler(unexpected)

    def answered(tool: str, args: dict, result: CallToolResult) -> None:
        text = result.content[0].text if result.content else ""
        if result.is_error:
            assert text.strip() and "internal error" not in text, (tool, args, text)
            assert len(text) <= MAX_MESSAGE, (tool, text[:500])  # readable, not the arguments echoed
        elif tool == "report_outcome":
            out = result.structured_content
            expected[out["tool_id"], out["outcome"]] += 1
        else:  # empty only when a filter allows no tool (only=[], or an auth kind these four lack)
            filtered = any(args.get(key) is not None for key in ("only", "auth"))
            assert (0 if filtered else 1) <= result.structured_content["count"] <= 3

    try:
        with (
            Retriever.open(db, encoder=HashEncoder(64)) as served,
            start_blocking_portal() as portal,
        ):
            server = build_mcp_server(served, Settings(default_k=2, max_k=3))
            with portal.wrap_async_context_manager(Client(server)) as client:

                @FUZZ
                @given(tool=st.sampled_from(TOOLS), data=st.data())
                def through_the_client(tool: str, data: st.DataObject) -> None:
                    args = data.draw(arguments(tool, surrogates=False))
                    answered(tool, args, portal.call(client.call_tool, tool, args))
                    # and a valid report between the junk: it is recorded, whatever came before
                    valid = data.draw(VALID_REPORT)
                    result = portal.call(client.call_tool, "report_outcome", valid)
                    assert not result.is_error, (valid, result.content)
                    answered("report_outcome", valid, result)

                @FUZZ
                @given(name=values(False)[0], args=st.none() | st.dictionaries(*values(False), max_size=3))
                def unknown_tool(name: str, args: dict | None) -> None:
                    if name not in TOOLS:
                        result = portal.call(client.call_tool, name, args)
                        assert result.is_error and result.content[0].text.strip()

                through_the_client()
                unknown_tool()

            @FUZZ
            @given(tool=st.sampled_from(TOOLS), data=st.data())
            def straight_to_the_server(tool: str, data: st.DataObject) -> None:
                """What a transport hands the server, lone surrogates and NaN included: a result, or the
                SDK's ``ToolError`` (which it sends as a tool error), never anything else."""
                args = data.draw(arguments(tool, surrogates=True))
                try:
                    result = portal.call(server.call_tool, tool, args)
                except ToolError as exc:
                    assert not isinstance(exc, UnexpectedToolError), (tool, args, exc)
                    result = CallToolResult(content=[TextContent(type="text", text=str(exc))], is_error=True)
                answered(tool, args, result)

            straight_to_the_server()
    finally:
        for logger in loggers:
            logger.removeHandler(unexpected)
    assert not unexpected.records, [r.getMessage() for r in unexpected.records]

    with Retriever.open(db, encoder=HashEncoder(64)) as reopened:
        assert [t.tool.id for t in reopened.tools()] == list(IDS)
        assert Counter((r.tool_id, r.outcome) for r in reopened.outcomes(limit=None)) == expected
    assert sum(expected.values()) > 0, "no report was valid: the strategy tests nothing"


# ---- rated mcp's stdio lines -----------------------------------------------------------------------------
@st.composite
def request_lines(draw: st.DrawFn) -> tuple[int | str, str]:
    """A tools/call request line with an id, whose arguments hold what a strict JSON parser may refuse:
    lone surrogate escapes, NaN, deep nesting, numbers out of any float's range."""
    rid = draw(st.integers(-(2**53), 2**53) | st.text(max_size=10))
    value = json.dumps(draw(arguments("find_tools", surrogates=True)), allow_nan=True)
    depth = draw(st.integers(0, 300))
    value = "[" * depth + value + "]" * depth
    if draw(st.booleans()):
        value = f'{{"k": {"9" * draw(st.integers(1, 5000))}, "query": {value}}}'
    params = f'{{"name": "find_tools", "arguments": {value}}}'
    line = f'{{"jsonrpc": "2.0", "id": {json.dumps(rid)}, "method": "tools/call", "params": {params}}}'
    return rid, line


@FUZZ
@given(request_lines())
def test_a_request_line_is_parsed_or_answered_under_its_own_id(request):
    rid, line = request
    try:
        message = jsonrpc_message_adapter.validate_json(line, by_name=False)
    except ValidationError as exc:
        reply = error_reply(exc)
        assert reply is not None and reply.id == rid, (line[:300], reply)
        assert reply.error.message.startswith("Parse error") and "JSON" in reply.error.message
        json.loads(reply.model_dump_json())  # what the transport writes
    else:
        assert message.id == rid


@FUZZ
@given(
    st.text(st.characters(codec=None, categories=None), max_size=60)
    | request_lines().map(lambda r: r[1][:40])
)
def test_any_line_the_sdk_cannot_read_gets_a_writable_json_rpc_error(line):
    try:
        jsonrpc_message_adapter.validate_json(line, by_name=False)
    except ValidationError as exc:
        reply = error_reply(exc)
        if reply is None:
            assert not line.strip()
        else:
            assert reply.error.message and json.loads(reply.model_dump_json())["jsonrpc"] == "2.0"


# ---- what the fuzzing found, pinned ----------------------------------------------------------------------
@pytest.mark.parametrize(
    "arguments",
    [
        '{"query": "\\ud800"}',  # a lone surrogate escape
        '{"query": ' + "[" * 300 + "]" * 300 + "}",  # nesting deeper than the SDK's parser goes
        '{"query": "x", "k": ' + "9" * 5000 + "}",  # a number out of its range
    ],
)
def test_a_request_only_the_sdks_parser_refuses_is_answered_under_its_id(arguments):
    line = '{"jsonrpc": "2.0", "id": 42, "method": "tools/call", "params": {"name": "find_tools", '
    line += f'"arguments": {arguments}}}}}'
    with pytest.raises(ValidationError) as exc:
        jsonrpc_message_adapter.validate_json(line, by_name=False)
    reply = error_reply(exc.value)
    assert reply is not None and reply.id == 42  # was null: the client's call waited forever
    assert reply.error.message.startswith("Parse error: ") and "the line is JSON" in reply.error.message


def test_an_id_no_reply_could_carry_stays_null():
    line = '{"jsonrpc": "2.0", "id": "\\udc00", "method": "tools/list"}'
    with pytest.raises(ValidationError) as exc:
        jsonrpc_message_adapter.validate_json(line, by_name=False)
    reply = error_reply(exc.value)
    assert reply is not None and reply.id is None
    json.loads(reply.model_dump_json())


def test_unknown_arguments_get_one_short_error_naming_them():
    retriever = Retriever.from_catalog(
        [Tool(id="mail", name="send_email", description="Send an email")], encoder=HashEncoder(64)
    )

    async def calls() -> list[str]:
        async with Client(build_mcp_server(retriever)) as client:
            texts = []
            for args in (
                {"query": "mail", "k" * 3000: 1},
                {"query": "mail", **{f"a{i}": i for i in range(300)}},
            ):
                result = await client.call_tool("find_tools", args)
                assert result.is_error
                texts.append(result.content[0].text)
            return texts

    with retriever:
        long_name, many = anyio.run(calls)
    assert (
        "unknown argument(s) 'kkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkk...'; this tool takes query, k"
        in long_name
    )
    assert "unknown argument(s) 'a0', 'a1', 'a2', 'a3', 'a4' and 295 more; this tool takes query, k" in many
    assert len(long_name) < 400 and len(many) < 400  # were 3,217 and 43,768 characters
