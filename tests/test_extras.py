"""rated.extras: a missing optional dependency is one ConfigError naming the extra to install."""

from __future__ import annotations

import re
import sys

import pytest

from rated.errors import ConfigError
from rated.extras import install_hint, require_extra


def test_a_module_that_does_not_import_names_the_extra_and_the_module(monkeypatch):
    monkeypatch.setitem(sys.modules, "json", None)  # `import json` now raises ImportError
    with pytest.raises(ConfigError) as info:
        require_extra("rated serve", "service", ("os", "json"))
    message = str(info.value)
    assert message.startswith("rated serve needs the 'service' extra, which is not installed (")
    assert "'json'" in message and "pip install 'rated[service]'" in message and "\n" not in message


def test_modules_that_import_pass():
    require_extra("anything", "service", ("os", "json"))


def test_the_hint_gives_the_checkout_form_too():
    """Not on a registry yet: in a checkout, pip install 'rated[x]' would look there, not here."""
    assert install_hint("redis") == "pip install 'rated[redis]' (from a checkout: pip install -e '.[redis]')"


def test_other_missing_extras_give_the_same_hint(monkeypatch):
    from rated.encode.runtime import resolve_backend
    from rated.errors import ModelError, StoreError
    from rated.store.redis import RedisStore

    monkeypatch.setitem(sys.modules, "redis", None)
    with pytest.raises(StoreError, match=re.escape(install_hint("redis"))):
        RedisStore("redis://localhost:6379/0")
    monkeypatch.setitem(sys.modules, "openvino", None)
    with pytest.raises(ModelError, match=re.escape(install_hint("openvino"))):
        resolve_backend("openvino")
