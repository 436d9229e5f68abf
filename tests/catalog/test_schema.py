import pytest
from pydantic import ValidationError

from rated import AuthType, Tool


def test_blank_id_and_name_are_rejected() -> None:
    with pytest.raises(ValidationError, match="id"):
        Tool(id="  ", name="x")
    with pytest.raises(ValidationError, match="name"):
        Tool(id="x", name="")


def test_unknown_fields_are_rejected_not_silently_dropped() -> None:
    with pytest.raises(ValidationError, match="colour"):
        Tool.model_validate({"id": "a", "name": "a", "colour": "red"})


def test_defaults_and_provider_key() -> None:
    t = Tool(id="weather.get", name="get_weather", tags="weather")
    assert t.tags == ("weather",)
    assert t.auth.type is AuthType.UNKNOWN
    assert t.provider_key == "weather.get"
    assert Tool(id="a", name="a", provider="api.example.org").provider_key == "api.example.org"


def test_tools_are_immutable() -> None:
    t = Tool(id="a", name="a")
    with pytest.raises(ValidationError):
        t.name = "b"  # type: ignore[misc]
