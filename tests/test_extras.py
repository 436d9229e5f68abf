"""rated.extras: a missing optional dependency is one ConfigError naming the extra to install."""

from __future__ import annotations

import sys

import pytest

from rated.errors import ConfigError
from rated.extras import require_extra


def test_a_module_that_does_not_import_names_the_extra_and_the_module(monkeypatch):
    monkeypatch.setitem(sys.modules, "json", None)  # `import json` now raises ImportError
    with pytest.raises(ConfigError) as info:
        require_extra("rated serve", "service", ("os", "json"))
    message = str(info.value)
    assert message.startswith("rated serve needs the 'service' extra, which is not installed (")
    assert "'json'" in message and "pip install 'rated[service]'" in message and "\n" not in message


def test_modules_that_import_pass():
    require_extra("anything", "service", ("os", "json"))
