"""Pins the public surface so that it only changes on purpose (as httpx does)."""

import rated


def test_public_names_are_sorted_and_importable() -> None:
    names = [n for n in rated.__all__ if n != "__version__"]
    assert names == sorted(names)
    for name in rated.__all__:
        assert hasattr(rated, name), name


def test_every_error_derives_from_one_root() -> None:
    errors = [getattr(rated, n) for n in rated.__all__ if n.endswith("Error")]
    assert errors, "no errors exported"
    for cls in errors:
        assert issubclass(cls, rated.RatedError), cls


def test_import_has_no_logging_or_env_side_effects() -> None:
    import logging
    import os
    import subprocess
    import sys

    code = (
        "import logging, os, json; before = dict(os.environ); import rated; "
        "print(json.dumps([logging.getLogger().level, before == dict(os.environ), "
        "'torch' in __import__('sys').modules]))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    level, env_same, torch_loaded = __import__("json").loads(out)
    assert level == logging.WARNING
    assert env_same is True
    assert torch_loaded is False
    assert os.environ is not None


def test_the_facade_is_exported() -> None:
    assert {"Retriever", "Hit", "ToolHealth", "Tool", "Outcome", "Policy"} <= set(rated.__all__)
