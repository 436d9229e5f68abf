"""The retired-endpoint rule made visible in the CLI: ``rated feedback`` says when a 404/410 was counted as
``tool_error`` and how far the tool's run has got, ``rated tools`` shows each tool's run (rich and
``--json``). The catalog and its clean history: ``retired_catalog`` (the ``db`` fixture of
``conftest.py``)."""

from __future__ import annotations

import json

from cli_run import run


def feedback(capsys, db, *argv: object) -> tuple[int, str, str]:
    return run(capsys, "feedback", "mail.a", *argv, "--db", db)


def test_feedback_json_says_when_a_404_counted(db, capsys):
    answers = []
    for who in ("Ada", "Bob", "Cy"):
        code, out, err = feedback(capsys, db, "--status", "404", "--query", f"email {who}", "--json")
        assert code == 0, err
        answers.append(json.loads(out))
    assert [a["outcome"] for a in answers] == ["caller_error"] * 3
    assert [a.get("counted_as") for a in answers] == [None, None, "tool_error"]
    assert [(a["retired"]["queries"], a["retired"]["holds"]) for a in answers] == [
        (1, False),
        (2, False),
        (3, True),
    ]
    assert answers[2]["retired"]["need"] == 3 and answers[2]["retired"]["counted"] == 1
    assert "counted as tool_error" in answers[2]["retired"]["summary"]
    code, out, _ = feedback(capsys, db, "--status", "400", "--query", "email Dee", "--json")
    assert code == 0 and not {"counted_as", "retired"} & set(json.loads(out))  # no evidence: as before


def test_feedback_says_it_in_words(db, capsys):
    code, out, _ = feedback(capsys, db, "--status", "404", "--query", "email Ada")
    assert code == 0 and "recorded caller_error (HTTP 404)" in out
    assert "retired-endpoint rule: 404/410 from 1 different query since the last success (3 count" in out
    feedback(capsys, db, "--status", "404", "--query", "email Bob")
    code, out, _ = feedback(capsys, db, "--status", "410", "--query", "email Cy")
    assert code == 0
    assert "404/410 from 3 different queries since the last success: counted as tool_error" in out
    assert "the outcome log keeps caller_error" in out
    code, out, _ = feedback(capsys, db, "--status", "400", "--query", "email Dee")
    assert code == 0 and "retired-endpoint rule" not in out


def test_tools_show_each_tools_run(db, capsys):
    code, out, _ = run(capsys, "tools", "--db", db)
    assert code == 0 and "404/410" not in out  # no run yet: no note
    for who in ("Ada", "Bob", "Cy"):
        feedback(capsys, db, "--status", "404", "--query", f"email {who}")
    run(capsys, "feedback", "mail.b", "--status", "404", "--query", "email Eve", "--db", db)
    code, out, _ = run(capsys, "tools", "--db", db, "--json")
    rows = {row["id"]: row for row in json.loads(out)}
    assert code == 0 and rows["mail.a"]["retired"]["holds"] is True
    assert rows["mail.a"]["retired"]["queries"] == 3
    assert rows["mail.b"]["retired"]["holds"] is False and rows["mail.b"]["retired"]["need"] == 10
    code, out, _ = run(capsys, "tools", "--db", db)
    table, note = out.rsplit("\n", 2)[:2]
    # the column (a narrow terminal wraps a cell: "yes" above "3/3"); the note says what it means
    assert code == 0 and "3/3" in table and "1/10" in table
    assert note.startswith("retired: different queries answered 404/410 since the tool's last success")
    feedback(capsys, db, "--outcome", "success", "--query", "email Fay")
    rows = {row["id"]: row for row in json.loads(run(capsys, "tools", "--db", db, "--json")[1])}
    assert "retired" not in rows["mail.a"]  # a success ends the run (no null: as GET /tools lists it)
