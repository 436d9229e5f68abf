"""``require_extra``: a feature whose optional dependencies are not installed says which extra to install.

An install without extras has no web server or MCP SDK; without this check ``rated serve``
ended in a traceback about ``uvicorn``, and ``rated catalog mcp`` in one raised while it was explaining
another (its error path imports the SDK too). A ``ConfigError`` is one line from the CLI (exit 2).
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence

from rated.errors import ConfigError

__all__ = ["SERVICE_MODULES", "install_hint", "require_extra"]

# what `rated serve` and `rated mcp` import: the service extra
SERVICE_MODULES = ("fastapi", "uvicorn", "mcp", "prometheus_client")


def install_hint(extra: str) -> str:
    """How to install ``extra``, both ways: the package is not on a registry yet, and ``pip install
    'rated[extra]'`` run in a checkout would look there (for another project's "rated", or nothing)."""
    return f"pip install 'rated[{extra}]' (from a checkout: pip install -e '.[{extra}]')"


def require_extra(what: str, extra: str, modules: Sequence[str]) -> None:
    """Raise ``ConfigError`` naming how to install ``extra`` when one of ``modules`` does not import."""
    for name in modules:
        try:
            importlib.import_module(name)
        except ImportError as exc:
            raise ConfigError(
                f"{what} needs the {extra!r} extra, which is not installed (cannot import {name!r}: {exc}): "
                + install_hint(extra)
            ) from None
