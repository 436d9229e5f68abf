"""``Retriever.from_catalog`` and ``Retriever.open`` take an encoder by name as ``rated index --encoder``
does (``rated.encode.encoder_from_spec``): the index built with ``"hash-64"`` reopens with that name or
with none, a different name is refused as a different encoder, and a bad name is refused by name before
the database is touched."""

from __future__ import annotations

import pytest

import rated.encode
from rated import Tool
from rated.encode.testing import HashEncoder
from rated.errors import ConfigError
from rated.retriever import Retriever

QUERY = "send an email message"


def catalog() -> list[Tool]:
    return [
        Tool(id="mail", name="send_email", description="Send an email message"),
        Tool(id="weather", name="weather_forecast", description="Weather forecast for a city"),
        Tool(id="search", name="web_search", description="Search the web for pages about a topic"),
    ]


def ids(r: Retriever) -> list[str]:
    return [h.id for h in r.retrieve(QUERY, k=3)]


def test_an_index_built_with_a_hash_name_reopens_with_that_name_or_none(tmp_path):
    db = tmp_path / "named.db"
    with Retriever.from_catalog(catalog(), db=db, encoder="hash-64") as built:
        assert built.encoder.name == "hash-64-s0"
        ranked = ids(built)
        built.feedback("mail", "tool_error", query=QUERY)
    for encoder in ("hash-64", None, HashEncoder(64)):
        with Retriever.open(db, encoder=encoder) as r:
            assert r.encoder.name == "hash-64-s0"
            assert sorted(ids(r)) == sorted(ranked)
            assert r.health("mail").stats.failures == 1  # the same index, its learned state kept


def test_reopening_with_another_hash_name_is_refused_as_another_encoder(tmp_path):
    db = tmp_path / "named.db"
    Retriever.from_catalog(catalog(), db=db, encoder="hash-64").close()
    with pytest.raises(ConfigError, match=r"indexed with encoder hash-64-s0.*not hash-32-s0"):
        Retriever.open(db, encoder="hash-32")


@pytest.mark.parametrize("name", ["nosuch", "hash-x"])
def test_a_bad_name_is_refused_by_name_and_creates_no_database(tmp_path, name):
    db = tmp_path / "never.db"
    with pytest.raises(ConfigError, match=f"encoder {name!r}"):
        Retriever.from_catalog(catalog(), db=db, encoder=name)
    assert not db.exists()


def test_opening_with_a_bad_name_is_refused_by_name(tmp_path):
    db = tmp_path / "named.db"
    Retriever.from_catalog(catalog(), db=db, encoder="hash-64").close()
    with pytest.raises(ConfigError, match="encoder 'hash-0'"):
        Retriever.open(db, encoder="hash-0")


def test_a_model_folder_that_does_not_exist_is_refused_by_its_path(tmp_path):
    db = tmp_path / "named.db"
    Retriever.from_catalog(catalog(), db=db, encoder="hash-64").close()
    missing = str(tmp_path / "models" / "mine")
    refused = f"encoder {missing!r}: .*existing ONNX model folder"
    with pytest.raises(ConfigError, match=refused):
        Retriever.from_catalog(catalog(), encoder=missing)
    with pytest.raises(ConfigError, match=refused):
        Retriever.open(db, encoder=missing)


@pytest.mark.parametrize("progress", [True, False])
def test_default_by_name_is_prepared_with_the_calls_progress(monkeypatch, progress):
    asked = []

    def default_encoder(**kwargs):
        asked.append(kwargs["progress"])
        return HashEncoder(16)  # a stand-in: the real model is not loaded

    monkeypatch.setattr(rated.encode, "default_encoder", default_encoder)
    Retriever.from_catalog(catalog(), encoder="default", progress=progress).close()
    assert asked == [progress]
