"""``rated index | search | feedback | tools``: output, JSON, exit codes, one-line errors."""

from __future__ import annotations

import json

import pytest

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


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


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
        "recorded": True,
        "healthy": False,
    }
    new_top = json.loads(run(capsys, "search", "send an email", "--db", str(db), "-k", "1", "--json")[1])
    assert new_top["hits"][0]["id"] != top["id"]
    code, out, _ = run(capsys, "tools", "--db", str(db), "--json")
    rows = {r["id"]: r for r in json.loads(out)}
    assert code == 0 and rows[top["id"]]["healthy"] is False and rows[top["id"]]["failures"] == 1
    code, out, _ = run(capsys, "tools", "--db", str(db), "--unhealthy")
    assert code == 0 and top["id"] in out and "weather" not in out and "1 unhealthy tools in" in out
    code, out, _ = run(
        capsys, "feedback", "weather", "--outcome", "rate_limited", "--retry-after", "30", "--db", str(db)
    )
    assert code == 0 and "recorded" in out


@pytest.mark.parametrize(
    ("argv", "code", "message"),
    [
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
        (["index", "{tmp}/cat.jsonl", "--db", "{db}", "--encoder", "hash-64"], 2, "already holds an index"),
        (["index", "{tmp}/cat.jsonl", "--db", "{tmp}/n.db", "--encoder", "hash-x"], 2, "hash-DIM"),
        (["search", "x", "--db", "{tmp}/junk.db"], 1, "junk.db"),
    ],
)
def test_user_errors_are_one_line_and_non_zero(db, capsys, argv, code, message):
    tmp = db.parent
    (tmp / "junk.db").write_bytes(b"not a database at all" * 50)
    argv = [a.format(db=db, tmp=tmp) for a in argv]
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
