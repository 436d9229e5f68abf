"""LangChain: the concrete ``BaseTool`` classes of the ``langchain-community`` wheel, read with ``ast``."""

from __future__ import annotations

from rated.catalog.collect.archive import Archive, LayoutError
from rated.catalog.collect.base import SourceDef
from rated.catalog.collect.fetch import PackageSpec
from rated.catalog.collect.pysource import PySource
from rated.catalog.collect.pytools import ToolClass, to_tools, tool_classes
from rated.catalog.schema import Tool

__all__ = ["PACKAGE", "SOURCE", "parse"]

PACKAGE = PackageSpec("pypi", "langchain-community", "0.4.2")
_PREFIX = "langchain_community/tools/"
_BASES = frozenset({"BaseTool", "StructuredTool"})


def parse(archives: list[Archive]) -> list[Tool]:
    (archive,) = archives
    src = PySource.from_archive(archive, "langchain_community/")
    if not src.modules("langchain_community.tools"):
        raise LayoutError(f"{archive.spec}: no {_PREFIX} modules in the wheel (has its layout changed?)")
    classes = tool_classes(src, "langchain_community.tools.", lambda q: q.rpartition(".")[2] in _BASES)
    if not classes:
        raise LayoutError(f"{archive.spec}: no BaseTool subclasses with a literal name under {_PREFIX}")
    return to_tools("langchain", archive, src, classes, _integration)


def _integration(c: ToolClass) -> str:
    """The folder under ``tools/`` (``gmail``), or the module for single-file tools (``ifttt``)."""
    parts = c.cls.module.split(".")
    return parts[2] if len(parts) > 2 else parts[-1]


SOURCE = SourceDef(name="langchain", packages=(PACKAGE,), parse=parse)
