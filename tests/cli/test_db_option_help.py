"""``--db`` is required only while ``$RATED_DB`` is unset, and every command's help and error say so:
``rated tools --help`` showed ``--db PATH`` as required with no word of the variable that makes it
optional. The variable's value is never shown (a Redis URL may hold a password)."""

from __future__ import annotations

import argparse

import pytest

from rated.cli import build_parser, main

SECRET = "redis://:hunter2@cache:6379/0"


def db_options() -> dict[str, argparse.Action]:
    """Each command's ``--db`` option, nested groups (``bench dynamic``) included."""
    found: dict[str, argparse.Action] = {}
    stack = [("rated", build_parser())]
    while stack:
        name, parser = stack.pop()
        for action in parser._actions:
            if "--db" in action.option_strings:
                found[name] = action
            if isinstance(action, argparse._SubParsersAction):
                stack.extend((f"{name} {sub}", p) for sub, p in action.choices.items())
    return found


def test_without_the_variable_each_db_option_is_required_and_says_how_to_default_it(monkeypatch) -> None:
    monkeypatch.delenv("RATED_DB", raising=False)
    options = db_options()
    assert {"rated tools", "rated search", "rated remove", "rated serve"} <= set(options)
    for name, action in options.items():
        assert action.required, name
        assert "required unless $RATED_DB is set" in (action.help or ""), name


def test_with_the_variable_each_db_option_defaults_to_it_without_showing_it(monkeypatch) -> None:
    monkeypatch.setenv("RATED_DB", SECRET)
    for name, action in db_options().items():
        assert not action.required and action.default == SECRET, name
        assert "(default: $RATED_DB)" in (action.help or "") and "hunter2" not in (action.help or ""), name


def test_rated_tools_help_says_it(monkeypatch, capsys) -> None:
    monkeypatch.delenv("RATED_DB", raising=False)
    with pytest.raises(SystemExit):
        main(["tools", "--help"])
    text = " ".join(capsys.readouterr().out.split())  # argparse wraps to the terminal's width
    assert "--db PATH SQLite file or redis:// URL; required unless $RATED_DB is set" in text


def error_line(capsys) -> str:
    lines = capsys.readouterr().err.splitlines()
    assert len([line for line in lines if ": error: " in line]) == 1, lines
    return lines[-1]


def test_a_missing_db_says_how_to_do_without_it(monkeypatch, capsys) -> None:
    """argparse said only "the following arguments are required: --db", no word of the variable."""
    monkeypatch.delenv("RATED_DB", raising=False)
    with pytest.raises(SystemExit) as exc:
        main(["tools"])
    assert exc.value.code == 2
    assert error_line(capsys) == "rated tools: error: --db PATH is required (or set RATED_DB)"


def test_every_command_names_the_variable_with_its_other_missing_arguments(monkeypatch, capsys) -> None:
    monkeypatch.delenv("RATED_DB", raising=False)
    for name in db_options():
        with pytest.raises(SystemExit) as exc:
            main(name.split()[1:])
        line = error_line(capsys)
        assert exc.value.code == 2 and line.startswith(f"{name}: error: "), line
        assert "--db PATH" in line and "(or set RATED_DB)" in line, line
    with pytest.raises(SystemExit):
        main(["search"])
    assert error_line(capsys).endswith("required: QUERY, --db PATH (or set RATED_DB)")


def test_other_errors_are_argparse_s(monkeypatch, capsys) -> None:
    monkeypatch.setenv("RATED_DB", SECRET)
    with pytest.raises(SystemExit) as exc:
        main(["search"])
    assert exc.value.code == 2
    assert error_line(capsys) == "rated search: error: the following arguments are required: QUERY"
