"""``rated index | search | feedback | tools``: output, JSON, exit codes, one-line errors."""

from __future__ import annotations

import json

import pytest
from cli_run import run

from rated.cli import main

CATALOG = [
    {"id": "mail.a", "name": "send_email", "description": "Send an email message", "provider": "mailcorp"},
    {"id": "mail.b", "name": "email_send", "description": "Send an email message"},
    {"id": "weather", "name": "weather_forecast", "description": "Weather forecast for a city"},
]


@pytest.fixture
def db(tmp_path, capsys):
    path = tmp_path / "cat.jsonl"
    path.write_text("\n".join(json.dumps(t) for t in CATALOG) + "\n")
    db = tmp_path / "rated.db"
    assert main(["index", str(path), "--db", str(db), "--encoder", "hash-64", "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["tools"] == 3 and summary["encoder"].startswith("hash-64")
    return db


def test_search_json_and_table(db, capsys):
    code, out, _ = run(capsys, "search", "send an email", "--db", str(db), "-k", "2", "--json")
    assert code == 0
    doc = json.loads(out)
    assert {h["id"] for h in doc["hits"]} == {"mail.a", "mail.b"} and doc["degraded"] is False
    assert set(doc["hits"][0]) >= {"rank", "id", "score", "semantic", "bandit", "prior", "healthy"}
    code, out, _ = run(capsys, "search", "weather in Paris", "--db", str(db), "-k", "1")
    assert code == 0 and "weather" in out


def test_feedback_demotes_and_tools_show_health(db, capsys):
    top = json.loads(run(capsys, "search", "send an email", "--db", str(db), "-k", "1", "--json")[1])["hits"][
        0
    ]
    code, out, _ = run(
        capsys,
        "feedback",
        top["id"],
        "--outcome",
        "tool_error",
        "--query",
        "send an email",
        "--db",
        str(db),
        "--json",
    )
    assert code == 0 and json.loads(out) == {
        "tool_id": top["id"],
        "outcome": "tool_error",
        "retry_after": None,
        "recorded": True,
        "healthy": False,
    }
    new_top = json.loads(run(capsys, "search", "send an email", "--db", str(db), "-k", "1", "--json")[1])
    assert new_top["hits"][0]["id"] != top["id"]
    code, out, _ = run(capsys, "tools", "--db", str(db), "--json")
    rows = {r["id"]: r for r in json.loads(out)}
    assert code == 0 and rows[top["id"]]["healthy"] is False and rows[top["id"]]["failures"] == 1
    code, out, _ = run(capsys, "tools", "--db", str(db), "--unhealthy")
    assert code == 0 and top["id"] in out and "weather" not in out and "1 unhealthy tool in" in out
    code, out, _ = run(
        capsys, "feedback", "weather", "--outcome", "rate_limited", "--retry-after", "30", "--db", str(db)
    )
    assert code == 0 and "recorded" in out


@pytest.mark.parametrize(
    ("extra", "outcome", "retry_after", "demoted"),
    [
        (["--status", "200"], "success", None, False),
        (["--status", "400"], "caller_error", None, False),  # the agent's own arguments: no demotion
        (["--status", "401"], "auth_error", None, True),
        (["--status", "429", "--header", "Retry-After: 30"], "rate_limited", 30.0, True),
        (
            ["--status", "429", "--header", "x-other: 1", "--header", "retry-after:30"],
            "rate_limited",
            30.0,
            True,
        ),
        (["--status", "503"], "tool_error", None, True),
        (["--status", "503", "--header", "Retry-After: 120"], "rate_limited", 120.0, True),
        (["--status", "429", "--header", "Retry-After: 30", "--retry-after", "5"], "rate_limited", 5.0, True),
    ],
)
def test_feedback_takes_the_tools_http_status(db, capsys, extra, outcome, retry_after, demoted):
    from rated.retriever import Retriever

    code, out, err = run(capsys, "feedback", "mail.a", *extra, "--db", str(db), "--json")
    assert code == 0, err
    assert json.loads(out) == {
        "tool_id": "mail.a",
        "outcome": outcome,
        "retry_after": retry_after,
        "recorded": True,
        "healthy": not demoted,
    }
    rows = {r["id"]: r for r in json.loads(run(capsys, "tools", "--db", str(db), "--json")[1])}
    assert rows["mail.a"]["caller_errors"] == (outcome == "caller_error")
    with Retriever.open(db) as r:
        assert [(o.outcome, o.retry_after) for o in r.outcomes()] == [(outcome, retry_after)]


def test_feedback_with_a_status_says_what_it_recorded(db, capsys):
    code, out, _ = run(capsys, "feedback", "weather", "--status", "400", "--db", str(db))
    assert code == 0 and "recorded caller_error (HTTP 400) for weather; now healthy" in out
    code, out, _ = run(
        capsys, "feedback", "weather", "--status", "429", "--header", "Retry-After: 30", "--db", str(db)
    )
    assert code == 0 and "recorded rate_limited (HTTP 429; retry after 30 s) for weather" in out


def test_a_wrong_status_report_records_nothing(db, capsys):
    from rated.retriever import Retriever

    for extra in (["--status", "600"], ["--status", "429", "--header", "Retry-After 5"]):
        assert run(capsys, "feedback", "weather", *extra, "--db", str(db))[0] == 2
    with Retriever.open(db) as r:
        assert r.outcomes() == []


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--outcome", "success", "--status", "200"], "not allowed with argument --outcome"),
        ([], "one of the arguments --outcome --status is required"),
        (["--status", "abc"], "invalid int value"),
    ],
)
def test_feedback_needs_either_outcome_or_status(db, capsys, argv, message):
    with pytest.raises(SystemExit) as exc:
        main(["feedback", "weather", *argv, "--db", str(db)])
    assert exc.value.code == 2 and message in capsys.readouterr().err


@pytest.mark.parametrize(
    ("argv", "code", "message"),
    [
        (["feedback", "weather", "--status", "600", "--db", "{db}"], 2, "from 100 to 599, got 600"),
        (["feedback", "weather", "--status", "99", "--db", "{db}"], 2, "got 99"),
        (
            ["feedback", "weather", "--status", "200", "--header", "x", "--db", "{db}"],
            2,
            "expected 'NAME: VALUE'",
        ),
        (
            ["feedback", "weather", "--status", "200", "--header", ": 5", "--db", "{db}"],
            2,
            "expected 'NAME: VALUE'",
        ),
        (
            [
                "feedback",
                "weather",
                "--outcome",
                "rate_limited",
                "--header",
                "Retry-After: 5",
                "--db",
                "{db}",
            ],
            2,
            "headers are read only with status",
        ),
        (["feedback", "nope", "--status", "500", "--db", "{db}"], 3, "unknown tool id"),
        (["search", "", "--db", "{db}"], 2, "query is empty"),
        (["search", "x", "--db", "{db}", "-k", "0"], 2, "k must be"),
        (["feedback", "nope", "--outcome", "success", "--db", "{db}"], 3, "unknown tool id"),
        (["feedback", "weather", "--outcome", "boom", "--db", "{db}"], 2, "unknown outcome"),
        (
            ["feedback", "weather", "--outcome", "rate_limited", "--retry-after", "-5", "--db", "{db}"],
            2,
            "retry_after",
        ),
        (["search", "x", "--db", "{tmp}/absent.db"], 1, "absent.db: no rated database"),
        (["search", "x", "--db", "{tmp}/no/such/dir/x.db"], 1, "no/such/dir"),
        (
            ["index", "{tmp}/cat.jsonl", "--db", "{tmp}/no/such/dir/x.db", "--encoder", "hash"],
            1,
            "no/such/dir",
        ),
        (["index", "{tmp}/missing.jsonl", "--db", "{tmp}/new.db", "--encoder", "hash"], 4, "not found"),
        (
            ["index", "{tmp}/cat.jsonl", "--db", "{db}", "--encoder", "hash-64"],
            2,
            "already holds an index: `rated sync {tmp}/cat.jsonl` with the same --db updates it",
        ),
        (["index", "{tmp}/cat.jsonl", "--db", "{tmp}/n.db", "--encoder", "hash-x"], 2, "hash-DIM"),
        (["search", "x", "--db", "{tmp}/junk.db"], 1, "junk.db"),
    ],
)
def test_user_errors_are_one_line_and_non_zero(db, capsys, argv, code, message):
    tmp = db.parent
    (tmp / "junk.db").write_bytes(b"not a database at all" * 50)
    argv = [a.format(db=db, tmp=tmp) for a in argv]
    message = message.format(db=db, tmp=tmp)
    got, out, err = run(capsys, *argv)
    assert got == code
    assert message in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1


def test_force_replaces_an_index(db, capsys):
    code, out, _ = run(
        capsys, "index", str(db.parent / "cat.jsonl"), "--db", str(db), "--encoder", "hash-64", "--force"
    )
    assert code == 0 and "indexed 3 tools" in out


def test_db_is_required_without_rated_db(monkeypatch, capsys):
    monkeypatch.delenv("RATED_DB", raising=False)
    with pytest.raises(SystemExit) as exc:
        main(["search", "x"])
    assert exc.value.code == 2 and "--db" in capsys.readouterr().err


def test_markup_in_ids_and_queries_is_printed_literally(tmp_path, capsys):
    """Catalog ids and queries are data: "[/]" or "[red]" must neither crash rich nor restyle output."""
    path = tmp_path / "cat.jsonl"
    tools = [
        {"id": "x[/]", "name": "send_email", "description": "Send an email message"},
        {"id": "[red]y", "name": "weather", "description": "Weather forecast [/bold]"},
    ]
    path.write_text("\n".join(json.dumps(t) for t in tools) + "\n")
    db = str(tmp_path / "m.db")
    assert run(capsys, "index", str(path), "--db", db, "--encoder", "hash-64")[0] == 0
    code, out, _ = run(capsys, "search", "[/bold] send an email", "--db", db, "-k", "2")
    assert code == 0 and "x[/]" in out and "[red]y" in out and "[/bold]" in out
    code, out, _ = run(capsys, "feedback", "x[/]", "--outcome", "SUCCESS", "--db", db)
    assert code == 0 and "recorded success for x[/]" in out
    code, out, _ = run(capsys, "feedback", "x[/]", "--outcome", "Tool_Error", "--db", db, "--json")
    assert code == 0 and json.loads(out)["outcome"] == "tool_error"  # as stored, not as typed
    code, out, _ = run(capsys, "tools", "--db", db)
    assert code == 0 and "x[/]" in out and "[red]y" in out


def test_index_chooses_the_dense_index(tmp_path, capsys):
    """--dense / --hnsw-threshold reach the stored settings (an HNSW graph for a catalog of any size), and
    a bad threshold is one line and exit 2 with nothing stored."""
    from rated.retriever import Retriever

    path = tmp_path / "cat.jsonl"
    path.write_text("\n".join(json.dumps(t) for t in CATALOG) + "\n")
    db = tmp_path / "h.db"
    code, _, _ = run(capsys, "index", str(path), "--db", str(db), "--encoder", "hash-64", "--json",
                     "--dense", "auto", "--hnsw-threshold", "2")  # fmt: skip
    assert code == 0
    with Retriever.open(db) as r:
        assert r.meta.semantic["dense_kind"] == "auto" and r.meta.semantic["hnsw_threshold"] == 2
        assert r.index.dense.kind == "hnsw"  # 3 tools > 2
        assert r.retrieve("weather in Paris", k=1)[0].id == "weather"
    code, _, err = run(capsys, "index", str(path), "--db", str(tmp_path / "bad.db"), "--encoder", "hash-64",
                       "--hnsw-threshold", "-1")  # fmt: skip
    assert code == 2 and "hnsw_threshold" in err and "Traceback" not in err
    assert not (tmp_path / "bad.db").exists()
