"""``Toolbox(objects, db=..., encoder=NAME)``: an encoder by name, as ``rated index --encoder`` takes it,
builds the index and reopens it (nothing re-encoded, what was learned kept); a bad name is refused by name
before the database is created."""

from __future__ import annotations

import pytest

from rated.errors import ConfigError
from rated.toolbox import Toolbox

QUERY = "weather forecast for a city"


def get_weather(city: str) -> str:
    """Weather forecast for a city."""
    return f"sunny in {city}"


def send_email(to: str, body: str) -> str:
    """Send an email message."""
    return "sent"


def test_a_toolbox_built_with_a_hash_name_reopens_the_same_index(tmp_path):
    db = tmp_path / "box.db"
    with Toolbox([get_weather, send_email], db=db, encoder="hash-64") as box:
        assert box.synced is None  # built anew
        assert box.retriever.encoder.name == "hash-64-s0"
        [best] = box.select(QUERY, k=1)
        assert best.run({"city": "Oslo"}) == "sunny in Oslo"
    with Toolbox([get_weather, send_email], db=db, encoder="hash-64") as box:
        assert box.synced is not None and not box.synced.changed
        assert sorted(box.synced.unchanged) == ["get_weather", "send_email"]
        assert box.retriever.health("get_weather").stats.successes == 1
        assert [s.id for s in box.select(QUERY, k=1)] == ["get_weather"]


def test_reopening_with_another_hash_name_is_refused(tmp_path):
    db = tmp_path / "box.db"
    Toolbox([get_weather], db=db, encoder="hash-64").close()
    with pytest.raises(ConfigError, match=r"indexed with encoder hash-64-s0.*not hash-32-s0"):
        Toolbox([get_weather], db=db, encoder="hash-32")


@pytest.mark.parametrize("name", ["nosuch", "hash-1"])
def test_a_bad_name_is_refused_by_name_before_the_database_is_created(tmp_path, name):
    db = tmp_path / "never.db"
    with pytest.raises(ConfigError, match=f"encoder {name!r}"):
        Toolbox([get_weather], db=db, encoder=name)
    assert not db.exists()


def test_a_model_folder_that_does_not_exist_is_refused_by_its_path(tmp_path):
    missing = str(tmp_path / "models" / "mine")
    with pytest.raises(ConfigError, match=f"encoder {missing!r}: .*existing ONNX model folder"):
        Toolbox([get_weather], encoder=missing)
