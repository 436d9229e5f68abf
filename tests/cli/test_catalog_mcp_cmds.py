"""``rated catalog mcp``: rated's own MCP server and a tiny one listed into a catalog that ``rated index``
loads; every failure one line and a non-zero exit, with nothing written."""

from __future__ import annotations

import json
import shlex
import socket
import sys
import textwrap

import pytest

pytest.importorskip("mcp")

from rated import Tool  # noqa: E402
from rated.cli import main  # noqa: E402
from rated.encode.testing import HashEncoder  # noqa: E402
from rated.retriever import Retriever  # noqa: E402

TIMEOUT = "60"  # seconds a server that works gets: two shared cores may be busy
MAIL_SERVER = textwrap.dedent(
    """
    import sys
    from mcp.server.mcpserver import MCPServer

    app = MCPServer("mail")
    if sys.argv[1:] != ["--empty"]:

        @app.tool()
        def send_email(to: str, body: str) -> str:
            '''Send an email message to someone.'''
            return "sent"

        @app.tool()
        def read_inbox() -> str:
            '''Read the newest messages of the inbox.'''
            return ""

    app.run()
    """
)


@pytest.fixture
def mail_server(tmp_path) -> str:
    path = tmp_path / "mail_server.py"
    path.write_text(MAIL_SERVER)
    return shlex.join([sys.executable, str(path)])


def test_two_servers_make_a_catalog_that_rated_index_loads(tmp_path, capsys, mail_server):
    served = tmp_path / "served.db"  # what rated's own MCP server serves: its two tools are listed
    Retriever.from_catalog(
        [Tool(id="w", name="weather", description="Weather forecast")], db=served, encoder=HashEncoder(64)
    ).close()
    rated_server = shlex.join([sys.executable, "-m", "rated.cli", "mcp", "--db", str(served)])
    out = tmp_path / "tools.jsonl"
    argv = ["catalog", "mcp", "--stdio", rated_server, "--stdio", mail_server, "--name", "inbox"]
    assert main([*argv, "--out", str(out), "--timeout", TIMEOUT, "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["tools"] == 4 and report["out"] == str(out)
    assert [(s["name"], s["tools"], s["transport"]) for s in report["servers"]] == [
        ("rated", 2, "stdio"),
        ("inbox", 2, "stdio"),
    ]
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["id"] for r in records] == [
        "rated.find_tools", "rated.report_outcome", "inbox.send_email", "inbox.read_inbox"
    ]  # fmt: skip
    assert {r["provider"] for r in records[2:]} == {"inbox"} and {r["source"] for r in records} == {"mcp"}
    assert records[2]["provenance"] == {"package": "mail", "path": mail_server}
    assert set(records[2]["parameters"]["properties"]) == {"to", "body"}

    db = tmp_path / "index.db"
    assert main(["index", str(out), "--db", str(db), "--encoder", "hash", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["tools"] == 4
    assert main(["search", "send an email message", "--db", str(db), "-k", "1", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["hits"][0]["id"] == "inbox.send_email"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize(
    ("servers", "message"),
    [
        (["--stdio", "no-such-mcp-server --flag"], "cannot start it: command not found"),
        (
            ["--stdio", f"{shlex.quote(sys.executable)} -c 'import sys; sys.stdin.read()'"],
            "no answer within 1 s",
        ),
        (["--stdio", "{mail} --empty"], "lists no tools"),
        (["--stdio", "{mail}", "--url", "http://127.0.0.1:{port}/mcp"], "cannot reach it"),
    ],
)
def test_a_server_that_fails_is_one_line_and_nothing_is_written(
    tmp_path, capsys, mail_server, servers, message
):
    out = tmp_path / "tools.jsonl"
    argv = [s.format(mail=mail_server, port=_free_port()) for s in servers]
    timeout = "1" if "stdin.read" in servers[-1] else TIMEOUT
    assert main(["catalog", "mcp", *argv, "--out", str(out), "--timeout", timeout]) == 4
    err = capsys.readouterr().err
    assert message in err and err.startswith("error: MCP server ")
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert not out.exists()  # all or nothing: a good server's tools are not written alone


def test_options_that_name_no_server_are_usage_errors(tmp_path, capsys):
    out = ["--out", str(tmp_path / "t.jsonl")]
    assert main(["catalog", "mcp", *out]) == 2
    assert "give at least one MCP server" in capsys.readouterr().err
    for argv, message in [
        (
            ["--name", "x", "--stdio", "srv"],
            "give a server (--stdio, --url, --sse or --config) before --name",
        ),
        (["--url", "http://h/mcp", "--env", "A=1"], "--env does not apply to a server given by --url"),
        (["--stdio", "srv", "--header", "A: 1"], "--header does not apply to a server given by --stdio"),
        (["--stdio", "srv", "--env", "novalue"], "expected KEY=VALUE"),
        (["--stdio", "srv", "--name", "a", "--name", "b"], "given twice for one server"),
    ]:
        with pytest.raises(SystemExit) as exit_:
            main(["catalog", "mcp", *argv, *out])
        assert exit_.value.code == 2
        assert message in capsys.readouterr().err
