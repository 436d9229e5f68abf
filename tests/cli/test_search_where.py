"""``rated search --only/--exclude/--source/--tag/--provider/--auth``: the library's filtered answer, errors
as one line naming the option, and a clear line (``[]`` hits with --json) when no tool matches."""

from __future__ import annotations

import json

import pytest
from cli_run import run

from rated.cli import main
from rated.encode.testing import HashEncoder
from rated.retriever import Retriever

QUERY = "send an email message"


@pytest.fixture
def db(tmp_path, capsys, filter_catalog):
    path = tmp_path / "cat.jsonl"
    path.write_text("".join(t.model_dump_json() + "\n" for t in filter_catalog))
    db = tmp_path / "rated.db"
    assert main(["index", str(path), "--db", str(db), "--encoder", "hash-64", "--json"]) == 0
    capsys.readouterr()
    return db


def search(capsys, db, *extra: str) -> tuple[int, str, str]:
    return run(capsys, "search", QUERY, "--db", db, *extra)


def ranked(hits) -> list[tuple[str, float]]:
    return [(h["id"], h["score"]) if isinstance(h, dict) else (h.id, h.score) for h in hits]


@pytest.mark.parametrize(
    ("options", "where"),
    [
        (["--exclude", "gmail.send"], {"exclude": ["gmail.send"]}),
        (
            ["--only", "weather", "--only", "slack.post", "--only", "smtp.send"],
            {"tools": ["weather", "slack.post", "smtp.send"]},
        ),
        (["--source", "N8N"], {"source": "n8n"}),
        (["--tag", "office", "--tag", "chat"], {"tags": ["office", "chat"]}),
        (["--provider", "smtp.send"], {"provider": "smtp.send"}),
        (
            ["--auth", "oauth2", "--auth", "API_KEY", "--exclude", "outlook.send"],
            {"auth": ["oauth2", "api_key"], "exclude": "outlook.send"},
        ),
    ],
)
def test_the_filtered_answer_is_the_librarys(db, capsys, options, where):
    code, out, err = search(capsys, db, "-k", "3", "--json", *options)
    assert code == 0 and err == ""
    with Retriever.open(db, encoder=HashEncoder(64)) as r:
        expected, unfiltered = r.retrieve(QUERY, k=3, where=where), r.retrieve(QUERY, k=3)
    assert expected and ranked(json.loads(out)["hits"]) == ranked(expected)
    assert ranked(expected) != ranked(unfiltered)
    code, table, _ = search(capsys, db, "-k", "3", *options)  # the table lists the same tools
    assert code == 0 and all(h.id in table for h in expected)
    hidden = {h.id for h in unfiltered} - {h.id for h in expected}
    assert hidden and not hidden & set(table.split())


def test_format_takes_the_filter_too(db, capsys):
    code, out, _ = search(capsys, db, "-k", "2", "--format", "mcp", "--exclude", "gmail.send")
    assert code == 0 and "gmail.send" not in json.loads(out)["tool_ids"]
    assert len(json.loads(out)["tools"]) == 2


@pytest.mark.parametrize(
    "options",
    [
        ["--source", "crewai"],
        ["--tag", "chat", "--auth", "none"],
        ["--only", "weather", "--exclude", "weather"],
    ],
)
def test_a_filter_that_allows_no_tool_says_so_and_exits_0(db, capsys, options):
    code, out, err = search(capsys, db, *options)
    assert code == 0 and err == ""
    assert out.startswith("no tool matches the filter (") and "top " not in out
    assert all(o.casefold() in out for o in options)  # the filter, as the options that make it
    code, out, _ = search(capsys, db, "--json", *options)
    assert code == 0 and json.loads(out)["hits"] == []
    code, out, _ = search(capsys, db, "--format", "openai", *options)
    assert code == 0 and json.loads(out)["tools"] == [] and json.loads(out)["tool_ids"] == {}


@pytest.mark.parametrize(
    ("options", "exit_code", "line"),
    [
        (["--only", "nope"], 3, "error: --only: unknown tool id: 'nope'"),
        (["--only", "weather", "--only", "nope"], 3, "error: --only: unknown tool id: 'nope'"),
        (["--auth", "token"], 2, "error: --auth: unknown auth kind(s) ['token']; expected any of api_key, "
         "basic, none, oauth2, other, unknown"),
    ],
)  # fmt: skip
def test_bad_filters_are_one_line_and_a_non_zero_exit(db, capsys, options, exit_code, line):
    code, out, err = search(capsys, db, "--json", *options)
    assert code == exit_code and out == ""
    assert err.splitlines() == [line]


def test_a_bad_auth_kind_is_refused_before_the_database_is_opened(tmp_path, capsys):
    code, _, err = search(capsys, tmp_path / "missing.db", "--auth", "token")
    assert code == 2 and "--auth: unknown auth kind" in err
    assert not (tmp_path / "missing.db").exists()


def test_a_filter_option_without_a_value_is_a_usage_error(db, capsys):
    with pytest.raises(SystemExit) as exited:
        main(["search", QUERY, "--db", str(db), "--exclude"])
    assert exited.value.code == 2 and "--exclude: expected one argument" in capsys.readouterr().err
