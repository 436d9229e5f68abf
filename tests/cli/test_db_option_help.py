"""``--db`` is required only while ``$RATED_DB`` is unset, and every command's help says so: ``rated tools
--help`` showed ``--db PATH`` as required with no word of the variable that makes it optional. The
variable's value is never shown (a Redis URL may hold a password)."""

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
