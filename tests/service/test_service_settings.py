"""Service settings errors name where the bad value came from (argument or environment variable)."""

import pytest

from rated.errors import ConfigError
from rated.service import Settings


def test_an_argument_is_named_as_an_argument_and_an_env_value_by_its_variable():
    with pytest.raises(ConfigError, match=r"port 99999: Input should be less than or equal to 65535") as exc:
        Settings.from_env({"RATED_PORT": "8080"}, port=99999)
    assert "RATED_PORT" not in str(exc.value)
    with pytest.raises(ConfigError, match=r"RATED_PORT: Input should be a valid integer"):
        Settings.from_env({"RATED_PORT": "eighty"})


def test_cross_field_error_names_both_variables_without_pydantic_prefix():
    with pytest.raises(ConfigError) as exc:
        Settings.from_env({"RATED_MAX_K": "3"})
    text = str(exc.value)
    assert "RATED_DEFAULT_K" in text and "RATED_MAX_K" in text and "Value error" not in text


def test_an_api_key_given_as_an_argument_is_never_echoed_by_its_error():
    for key in [" my-secret-key ", "s\u00e9cret-key"]:
        with pytest.raises(ConfigError, match="api_key") as exc:
            Settings.from_env({}, api_key=key)
        assert key.strip() not in str(exc.value) and "printable ASCII" in str(exc.value)
