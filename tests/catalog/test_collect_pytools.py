"""wheel_tools, shared by the BaseTool sources (CrewAI, LangChain); layout errors name the wheel."""

from __future__ import annotations

from pathlib import Path

import pytest
from catalog_fixtures import write_wheel

from rated.catalog.collect import crewai, langchain
from rated.catalog.collect.archive import Archive, LayoutError
from rated.catalog.collect.pytools import wheel_tools

TOOL = """
from langchain_core.tools import BaseTool


class Ping(BaseTool):
    name: str = "ping"
    description: str = "Ping a host and report the round trip."

    def _run(self, host: str) -> str:
        return host
"""


def _archive(tmp_path: Path, spec, files: dict) -> Archive:  # noqa: ANN001
    return Archive(write_wheel(tmp_path / f"{spec.name}.whl", spec.name, spec.version, files, "MIT"), spec)


def test_wheel_tools_reads_classes_under_the_prefix(tmp_path: Path) -> None:
    archive = _archive(tmp_path, langchain.PACKAGE, {"langchain_community/tools/net/ping.py": TOOL})
    kw = {"tools_package": "langchain_community.tools", "bases": frozenset({"BaseTool"})}
    (tool,) = wheel_tools(archive, "demo", integration_of=lambda c: "net", **kw)
    assert tool.id == "demo:ping" and tool.tags == ("net",) and tool.source == "demo"
    assert tool.provenance.path == "langchain_community/tools/net/ping.py"
    with pytest.raises(LayoutError, match=r"in langchain_community\.other$"):  # classes outside the prefix
        wheel_tools(archive, "demo", integration_of=str, class_prefix="langchain_community.other.", **kw)


@pytest.mark.parametrize(
    ("module", "files", "message"),
    [
        (crewai, {"crewai_tools/tools/x.py": "A = 1\n"}, r"no BaseTool subclasses .* in crewai_tools$"),
        (crewai, {"crewai_tools/x.py": "A = 1\n"}, r"no crewai_tools/tools/ modules in the wheel"),
        (langchain, {"langchain_community/tools/x.py": "A = 1\n"}, r"in langchain_community\.tools$"),
    ],
)
def test_layout_errors_name_the_package(tmp_path: Path, module, files: dict, message: str) -> None:  # noqa: ANN001
    with pytest.raises(LayoutError, match=message) as info:
        module.parse([_archive(tmp_path, module.PACKAGE, files)])
    assert str(info.value).startswith(str(module.PACKAGE))
