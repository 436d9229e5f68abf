"""``rated serve`` start-up, without serving (uvicorn.run is replaced; the port check is real only in the
test of a taken port)."""

from __future__ import annotations

import pytest

pytest.importorskip("uvicorn")

import socket  # noqa: E402

import uvicorn  # noqa: E402

import rated.cli.serve_cmds as serve_cmds  # noqa: E402
from rated import Tool  # noqa: E402
from rated.cli import main  # noqa: E402
from rated.encode.testing import HashEncoder  # noqa: E402
from rated.retriever import Retriever  # noqa: E402
from rated.store.memory import MemoryStore  # noqa: E402

_REAL_CHECK = serve_cmds._check_can_listen


@pytest.fixture(autouse=True)
def any_port(request, monkeypatch):
    """The other tests must not depend on which ports this machine has free."""
    if "taken" not in request.node.name:
        monkeypatch.setattr(serve_cmds, "_check_can_listen", lambda host, port: None)


def test_serve_on_a_taken_port_says_so_in_one_line_before_opening_anything(monkeypatch, capsys):
    opened = []
    monkeypatch.setattr(Retriever, "open", lambda *a, **kw: opened.append(a))
    monkeypatch.setattr(uvicorn, "run", lambda app, **kw: pytest.fail("uvicorn started"))
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        code = main(["serve", "--db", "x.db", "--port", str(port)])
    err = capsys.readouterr().err
    assert code != 0 and f"127.0.0.1:{port} is already in use" in err and "--port" in err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1 and not opened


def test_serve_names_the_database_as_its_store_does_never_with_a_password(monkeypatch, capsys):
    store = MemoryStore()
    tools = [
        Tool(id="a", name="send_email", description="Send an email"),
        Tool(id="b", name="b", description="x"),
    ]
    Retriever.from_catalog(tools, db=store, encoder=HashEncoder(32)).close()
    store.url = "redis://:***@cache:6379/0"  # what RedisStore.url holds for a URL with a password
    real_open = Retriever.open
    monkeypatch.setattr(Retriever, "open", lambda db, **kw: real_open(store, encoder=HashEncoder(32), **kw))
    ran = {}
    monkeypatch.setattr(uvicorn, "run", lambda app, **kw: ran.update(kw))
    assert main(["serve", "--db", "redis://:hunter2@cache:6379/0", "--port", "8123"]) == 0
    err = capsys.readouterr().err
    assert "hunter2" not in err and "redis://:***@cache:6379/0" in err and "2 tools" in err
    assert "starting on http://127.0.0.1:8123" in err and ran["port"] == 8123


@pytest.mark.parametrize(
    ("host", "key", "warned"), [("0.0.0.0", None, True), ("0.0.0.0", "k", False), ("::1", None, False)]
)
def test_serve_warns_when_it_listens_beyond_loopback_without_a_key(
    tmp_path, monkeypatch, capsys, host, key, warned
):
    tools = [
        Tool(id="a", name="send_email", description="Send an email"),
        Tool(id="b", name="b", description="x"),
    ]
    db = tmp_path / "r.db"
    Retriever.from_catalog(tools, db=db, encoder=HashEncoder(32)).close()
    real_open = Retriever.open
    monkeypatch.setattr(Retriever, "open", lambda path, **kw: real_open(path, encoder=HashEncoder(32), **kw))
    monkeypatch.setattr(uvicorn, "run", lambda app, **kw: None)
    if key:
        monkeypatch.setenv("RATED_API_KEY", key)
    else:
        monkeypatch.delenv("RATED_API_KEY", raising=False)
    assert main(["serve", "--db", str(db), "--host", host]) == 0
    assert ("without an API key" in capsys.readouterr().err) is warned


def _ipv6_loopback() -> bool:
    try:
        with socket.socket(socket.AF_INET6) as s:
            s.bind(("::1", 0))
    except OSError:
        return False
    return True


@pytest.mark.skipif(not _ipv6_loopback(), reason="no IPv6 loopback here")
def test_serve_listens_on_an_ipv6_host_as_uvicorn_does_and_names_it_in_brackets(
    tmp_path, monkeypatch, capsys
):
    """The port check bound every host as IPv4: --host :: or ::1 failed with 'Address family for
    hostname not supported', though uvicorn listens on them."""
    monkeypatch.setattr(serve_cmds, "_check_can_listen", _REAL_CHECK)
    db = tmp_path / "r.db"
    Retriever.from_catalog([Tool(id="a", name="a", description="x")], db=db, encoder=HashEncoder(32)).close()
    real_open = Retriever.open
    monkeypatch.setattr(Retriever, "open", lambda path, **kw: real_open(path, encoder=HashEncoder(32), **kw))
    ran = {}
    monkeypatch.setattr(uvicorn, "run", lambda app, **kw: ran.update(kw))
    with socket.socket(socket.AF_INET6) as s:
        s.bind(("::1", 0))
        port = s.getsockname()[1]
    assert main(["serve", "--db", str(db), "--host", "::1", "--port", str(port)]) == 0
    assert ran["host"] == "::1" and f"http://[::1]:{port}" in capsys.readouterr().err
    with socket.socket(socket.AF_INET6) as busy:
        busy.bind(("::1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        assert main(["serve", "--db", str(db), "--host", "::1", "--port", str(port)]) != 0
    assert f"[::1]:{port} is already in use" in capsys.readouterr().err


def one_tool_index(monkeypatch) -> None:
    """``Retriever.open`` of any db gives a one-tool in-memory index: options are tested, not the store."""
    store = MemoryStore()
    Retriever.from_catalog(
        [Tool(id="a", name="a", description="x")], db=store, encoder=HashEncoder(32)
    ).close()
    real_open = Retriever.open
    monkeypatch.setattr(Retriever, "open", lambda db, **kw: real_open(store, encoder=HashEncoder(32), **kw))


def test_serve_passes_its_probe_options_to_the_app_and_refuses_a_bad_interval(monkeypatch, capsys):
    one_tool_index(monkeypatch)
    apps = []
    monkeypatch.setattr(uvicorn, "run", lambda app, **kw: apps.append(app))
    assert main(["serve", "--db", "m", "--probe-every", "15", "--probe-budget", "2"]) == 0
    settings = apps[0].state.settings
    assert (settings.probe_every, settings.probe_budget) == (15.0, 2)
    code = main(["serve", "--db", "m", "--probe-every", "0"])
    err = capsys.readouterr().err
    assert code != 0 and "probe_every" in err and "Traceback" not in err


def test_mcp_takes_the_probe_options_too(monkeypatch, capsys):
    import rated.service.mcp_server as mcp_server
    import rated.service.mcp_stdio as mcp_stdio

    one_tool_index(monkeypatch)
    given = []
    monkeypatch.setattr(mcp_server, "build_mcp_server", lambda r, settings: given.append(settings))
    monkeypatch.setattr(mcp_stdio, "run_stdio", lambda server: None)
    assert main(["mcp", "--db", "m", "--probe-every", "15", "--probe-budget", "2"]) == 0
    assert (given[0].probe_every, given[0].probe_budget) == (15.0, 2)
    code = main(["mcp", "--db", "m", "--probe-budget", "0"])
    err = capsys.readouterr().err
    assert code != 0 and "probe_budget" in err and "Traceback" not in err


@pytest.mark.parametrize("command", ["serve", "mcp"])
@pytest.mark.parametrize("every", ["0.5", "inf", "nan"])
def test_serve_and_mcp_refuse_a_probe_interval_below_a_second_in_one_line(
    monkeypatch, capsys, command, every
):
    import rated.service.mcp_stdio as mcp_stdio

    one_tool_index(monkeypatch)
    monkeypatch.setattr(uvicorn, "run", lambda app, **kw: pytest.fail("uvicorn started"))
    monkeypatch.setattr(mcp_stdio, "run_stdio", lambda server: pytest.fail("the MCP server started"))
    code = main([command, "--db", "m", "--probe-every", every])
    err = capsys.readouterr().err.strip()
    assert code != 0 and "\n" not in err and "Traceback" not in err
    assert "probe_every" in err and "must be 1 to 86400 seconds" in err


def test_one_indexed_tool_is_counted_in_the_singular(monkeypatch, capsys):
    """The start-up line counts as people read: an index of one tool is ``1 tool``."""
    one_tool_index(monkeypatch)
    monkeypatch.setattr(uvicorn, "run", lambda app, **kw: None)
    assert main(["serve", "--db", "one.db", "--port", "8123"]) == 0
    err = " ".join(capsys.readouterr().err.split())  # the console wraps long lines
    assert "rated: 1 tool from " in err and "1 tools" not in err
