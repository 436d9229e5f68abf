"""What ``rated index | search | tools`` print about the database and the tools: no Redis password, and
tool ids whole even on a narrow terminal (people copy them into ``rated feedback``)."""

from __future__ import annotations

import json

import pytest
from rich.console import Console

from rated.cli import index_cmds, main
from rated.retriever import Retriever

LONG_IDS = [
    "outlook.send_message_to_many_recipients",
    "calendar.create_recurring_event_with_attendees",
    "weather.now",
]
URL = "redis://:s3cret-pw@127.0.0.1:6379/0"


@pytest.fixture
def catalog(tmp_path):
    path = tmp_path / "cat.jsonl"
    rows = [{"id": i, "name": i.split(".")[1], "description": i.replace("_", " ")} for i in LONG_IDS]
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    return path


@pytest.fixture
def redis_goes_to_sqlite(tmp_path, monkeypatch):
    """Any --db reaches one local SQLite file, so what is printed for a redis:// URL is tested without a
    server."""
    local = tmp_path / "local.db"
    from_catalog, open_ = Retriever.from_catalog.__func__, Retriever.open.__func__

    def fake_from_catalog(cls, source, db=None, encoder=None, **config):
        return from_catalog(cls, source, local, encoder, **config)

    def fake_open(cls, db, *args, **kwargs):
        return open_(cls, local, *args, **kwargs)

    monkeypatch.setattr(Retriever, "from_catalog", classmethod(fake_from_catalog))
    monkeypatch.setattr(Retriever, "open", classmethod(fake_open))


def test_a_redis_password_is_never_printed(catalog, redis_goes_to_sqlite, capsys):
    assert main(["index", str(catalog), "--db", URL, "--encoder", "hash-64", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["db"] == "redis://:***@127.0.0.1:6379/0"
    assert main(["index", str(catalog), "--db", URL, "--encoder", "hash-64", "--force"]) == 0
    assert main(["tools", "--db", URL]) == 0
    out = capsys.readouterr().out
    assert "s3cret" not in out and out.count("redis://:***@127.0.0.1:6379/0") == 2


def tool_column(out: str, column: int, healthy: int) -> list[str]:
    """The tool ids of a rich table, joining the lines a wrapped id takes (a row starts where its
    'healthy' cell is filled)."""
    ids: list[str] = []
    for line in out.splitlines():
        cells = line.split("│")[1:-1]
        if len(cells) <= healthy or cells[healthy].strip() == "healthy":
            continue
        fragment = cells[column].strip()
        if cells[healthy].strip():
            ids.append(fragment)
        elif fragment:
            ids[-1] += fragment
    return ids


@pytest.mark.parametrize("width", [60, 80])
def test_tool_ids_are_printed_whole_on_a_narrow_terminal(catalog, tmp_path, capsys, monkeypatch, width):
    db = tmp_path / "r.db"
    assert main(["index", str(catalog), "--db", str(db), "--encoder", "hash-64", "--json"]) == 0
    capsys.readouterr()
    monkeypatch.setattr(index_cmds, "console", Console(width=width))
    assert main(["tools", "--db", str(db)]) == 0
    out = capsys.readouterr().out
    assert sorted(tool_column(out, 0, healthy=3)) == sorted(LONG_IDS)
    assert main(["search", "send a message", "--db", str(db), "-k", "3"]) == 0
    out = capsys.readouterr().out
    assert sorted(tool_column(out, 1, healthy=6)) == sorted(LONG_IDS)
