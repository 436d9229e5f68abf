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


@pytest.mark.parametrize("every", ["0.5", "0", "nan", "inf", "86401"])
def test_a_probe_interval_out_of_bounds_names_its_variable_and_the_bounds(every):
    """Below 1 s the prober re-read the store under the retriever's lock in a tight loop."""
    with pytest.raises(ConfigError, match=r"RATED_PROBE_EVERY: must be 1 to 86400 seconds") as exc:
        Settings.from_env({"RATED_PROBE_EVERY": every})
    assert "\n" not in str(exc.value)
    with pytest.raises(ConfigError, match=r"probe_every 0.5: must be 1 to 86400 seconds"):
        Settings.from_env({}, probe_every=0.5)
    assert Settings.from_env({"RATED_PROBE_EVERY": "1"}).probe_every == 1.0


@pytest.mark.parametrize("timeout", ["0", "-1", "nan", "inf", "61"])
def test_a_probe_timeout_out_of_bounds_names_its_variable(timeout):
    """An infinite one made a shutdown wait for ever for the probe in flight."""
    with pytest.raises(ConfigError, match=r"RATED_PROBE_TIMEOUT: must be above 0 and at most 60 seconds"):
        Settings.from_env({"RATED_PROBE_TIMEOUT": timeout})
    assert Settings.from_env({"RATED_PROBE_TIMEOUT": "60"}).probe_timeout == 60.0
