"""LangChain: the concrete ``BaseTool`` classes of the ``langchain-community`` wheel, read with ``ast``."""

from __future__ import annotations

from rated.catalog.collect.archive import Archive
from rated.catalog.collect.base import SourceDef
from rated.catalog.collect.fetch import PackageSpec
from rated.catalog.collect.pytools import ToolClass, wheel_tools
from rated.catalog.schema import Tool

__all__ = ["PACKAGE", "SOURCE", "parse"]

PACKAGE = PackageSpec("pypi", "langchain-community", "0.4.2")
_BASES = frozenset({"BaseTool", "StructuredTool"})


def parse(archives: list[Archive]) -> list[Tool]:
    (archive,) = archives
    return wheel_tools(
        archive,
        "langchain",
        tools_package="langchain_community.tools",
        bases=_BASES,
        integration_of=_integration,
        class_prefix="langchain_community.tools.",
    )


def _integration(c: ToolClass) -> str:
    """The folder under ``tools/`` (``gmail``), or the module for single-file tools (``ifttt``)."""
    parts = c.cls.module.split(".")
    return parts[2] if len(parts) > 2 else parts[-1]


SOURCE = SourceDef(name="langchain", packages=(PACKAGE,), parse=parse)
