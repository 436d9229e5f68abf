"""CrewAI: the tool classes of the ``crewai-tools`` wheel (name, description, args schema, ``env_vars``).

The wheel ships the source its ``generate_tool_specs.py`` reads at import time; we read the same fields with
``ast`` instead of importing ``crewai``.
"""

from __future__ import annotations

from rated.catalog.collect.archive import Archive
from rated.catalog.collect.base import SourceDef
from rated.catalog.collect.fetch import PackageSpec
from rated.catalog.collect.normalise import integration_key
from rated.catalog.collect.pytools import ToolClass, wheel_tools
from rated.catalog.schema import Tool

__all__ = ["PACKAGE", "SOURCE", "parse"]

PACKAGE = PackageSpec("pypi", "crewai-tools", "1.15.30")
_BASES = frozenset({"BaseTool"})


def parse(archives: list[Archive]) -> list[Tool]:
    (archive,) = archives
    return wheel_tools(
        archive, "crewai", tools_package="crewai_tools.tools", bases=_BASES, integration_of=_integration
    )


def _integration(c: ToolClass) -> str:
    """``crewai_tools.tools.serper_dev_tool.serper_dev_tool`` -> ``serperdev``; ``aws.s3`` -> ``s3``."""
    parts = c.cls.module.split(".")
    folder = (
        parts[2] if len(parts) > 3 and parts[1] == "tools" else parts[-2] if len(parts) > 2 else parts[-1]
    )
    return integration_key(folder) or folder


SOURCE = SourceDef(name="crewai", packages=(PACKAGE,), parse=parse)
