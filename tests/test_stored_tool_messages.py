"""A stored record that no longer validates (a database indexed before a rule was added, such as the
refusal of ids starting with ``provider:``) fails with one line: the tool id, then ``field: reason`` for
each problem, without pydantic's multi-line layout or its documentation link; the CLI prints it as one
``error:`` line and exits non-zero."""

from __future__ import annotations

from pathlib import Path

import pytest

from old_provider_db import index_before_the_rule
from rated.errors import IndexFormatError
from rated.stored_tool import parse_record


@pytest.mark.parametrize(
    ("record", "expected"),
    [
        ('{"id": "w"}', "db: stored record of tool 'w' is invalid: name: Field required"),
        (
            '{"id": "w", "name": "x", "bogus": 1, "tags": 3}',
            "db: stored record of tool 'w' is invalid: tags: Input should be a valid array; "
            "bogus: Extra inputs are not permitted",
        ),
        ('{"id": "provider:w", "name": "x"}', "db: stored record of tool 'provider:w' is invalid: id: "),
    ],
)
def test_each_problem_is_field_and_reason_on_one_line(record: str, expected: str) -> None:
    tool_id = "provider:w" if "provider:" in record else "w"
    with pytest.raises(IndexFormatError) as exc:
        parse_record(record, tool_id, "db")
    text = str(exc.value)
    assert text.startswith(expected)
    assert "\n" not in text and "http" not in text and "Value error" not in text


def test_a_record_that_is_not_json_says_so_on_one_line() -> None:
    with pytest.raises(IndexFormatError) as exc:
        parse_record("not json", "w", "db")
    text = str(exc.value)
    assert text.startswith("db: stored record of tool 'w' is invalid: Invalid JSON")
    assert "\n" not in text and "http" not in text


@pytest.fixture
def old_db(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return index_before_the_rule(tmp_path / "old.db", monkeypatch)


@pytest.mark.parametrize("argv", [["tools"], ["search", "acme search"]], ids=["tools", "search"])
def test_the_cli_prints_one_error_line(old_db: Path, argv: list[str], capsys) -> None:
    from rated.cli import main

    code = main([argv[0], "--db", str(old_db), *argv[1:]])
    out, err = capsys.readouterr()
    assert code != 0 and "Traceback" not in out + err
    [line] = err.strip().splitlines()
    assert line.startswith("error: ") and "stored record of tool 'provider:acme' is invalid: id: " in line
    assert "reserved" in line and "http" not in line
