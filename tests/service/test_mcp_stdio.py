"""``rated mcp`` answers every line it cannot read with a JSON-RPC error, and serves on after it."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

pytest.importorskip("mcp")

import mcp_types  # noqa: E402

from rated import Tool  # noqa: E402
from rated.encode.testing import HashEncoder  # noqa: E402
from rated.retriever import Retriever  # noqa: E402
from rated.service.mcp_stdio import error_reply  # noqa: E402

PARSE_ERROR, INVALID_REQUEST = -32700, -32600


def _reply(line: str) -> dict | None:
    """What ``error_reply`` sends for ``line``, as it goes on the wire."""
    try:
        mcp_types.jsonrpc_message_adapter.validate_json(line, by_name=False)
    except Exception as exc:  # noqa: BLE001 - the transport hands over whatever parsing raised
        reply = error_reply(exc)
        return None if reply is None else json.loads(reply.model_dump_json(by_alias=True, exclude_unset=True))
    raise AssertionError(f"{line!r} parsed")


@pytest.mark.parametrize(
    ("line", "code", "rid"),
    [
        ("garbage", PARSE_ERROR, None),
        ('{"jsonrpc": "2.0", "id": 4, "method": "tools/list"', PARSE_ERROR, None),  # cut short
        ("\ufffd\ufffd", PARSE_ERROR, None),  # what the transport makes of bytes that are not UTF-8
        ("[]", INVALID_REQUEST, None),  # a batch: MCP has none
        ("42", INVALID_REQUEST, None),
        ('{"hello": "world"}', INVALID_REQUEST, None),
        # a request with a usable id: answered under it, so the client's call ends
        ('{"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": 5}', INVALID_REQUEST, 7),
        ('{"jsonrpc": "2.0", "id": "q", "method": 3}', INVALID_REQUEST, "q"),
        ('{"jsonrpc": "2.0", "id": true, "method": "x", "params": 5}', INVALID_REQUEST, None),  # not an id
        # a malformed response: its id is one of the client's own calls, which this must not resolve
        ('{"jsonrpc": "2.0", "id": 1, "result": 5}', INVALID_REQUEST, None),
    ],
)
def test_each_unreadable_line_gets_the_json_rpc_error_for_it(line, code, rid):
    reply = _reply(line + "\n")
    assert reply is not None and reply["id"] == rid and reply["error"]["code"] == code
    assert reply["error"]["message"].startswith("Parse error" if code == PARSE_ERROR else "Invalid Request")
    assert "garbage" not in reply["error"]["message"] and "world" not in reply["error"]["message"]


def test_a_blank_line_is_no_message_and_gets_no_answer():
    assert _reply("\n") is None and _reply("  \r\n") is None


def test_rated_mcp_answers_garbage_on_stdin_and_serves_the_next_request(tmp_path, mcp_handshake):
    db = tmp_path / "mcp.db"
    Retriever.from_catalog(
        [Tool(id="mail", name="send_email", description="Send an email message")],
        db=db,
        encoder=HashEncoder(32),
    ).close()
    lines = [
        "this is not json",
        "",
        '{"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": "oops"}',
        *(json.dumps(m) for m in mcp_handshake),
        "[1, 2]",
        json.dumps(
            {
                "jsonrpc": "2.0",
                "id": 2,
                "method": "tools/call",
                "params": {"name": "find_tools", "arguments": {"query": "send an email", "k": 1}},
            }
        ),
    ]
    proc = subprocess.Popen(
        [sys.executable, "-m", "rated.cli", "mcp", "--db", str(db)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "RATED_DB": ""},
    )
    replies: list[dict] = []
    try:
        assert proc.stdin and proc.stdout
        proc.stdin.write("".join(line + "\n" for line in lines))
        proc.stdin.flush()
        while not any(r.get("id") == 2 for r in replies):  # the last request's answer ends the wait
            line = proc.stdout.readline()
            assert line, f"stdout closed early; stderr: {proc.stderr.read() if proc.stderr else ''}"
            replies.append(json.loads(line))
    finally:
        proc.stdin.close()
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)
    assert proc.returncode == 0
    errors = [(r["id"], r["error"]["code"]) for r in replies if "error" in r]
    assert errors == [(None, PARSE_ERROR), (9, INVALID_REQUEST), (None, INVALID_REQUEST)], replies
    results = {r["id"]: r["result"] for r in replies if "result" in r}
    assert results[1]["serverInfo"]["name"] == "rated"
    assert results[2].get("isError") is not True
    assert results[2]["structuredContent"]["hits"][0]["id"] == "mail"
