"""Unwritable output paths for the catalog layer are one clear rated error, never an OSError traceback."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rated.catalog.loaders import save_catalog
from rated.catalog.schema import Tool
from rated.cli import main
from rated.errors import CatalogError, ConfigError
from rated.plotting import pyplot, save_png


@pytest.fixture
def blocker(tmp_path: Path) -> Path:
    """A regular file: nothing can be created "inside" it, even by root."""
    path = tmp_path / "file.txt"
    path.write_text("x")
    return path


def test_save_catalog_into_an_impossible_path(blocker: Path, tmp_path: Path) -> None:
    tools = [Tool(id="a", name="a")]
    with pytest.raises(CatalogError, match="cannot write the catalog"):
        save_catalog(tools, blocker / "cat.jsonl")
    with pytest.raises(CatalogError, match="cannot write the catalog"):
        save_catalog(tools, tmp_path)  # a directory
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file.txt"]  # no temporary file left behind


def test_save_png_into_an_impossible_path(blocker: Path, tmp_path: Path) -> None:
    plt = pyplot()
    fig = plt.figure()
    with pytest.raises(ConfigError, match="cannot write the plot"):
        save_png(fig, blocker / "plot.png")
    assert not plt.fignum_exists(fig.number)  # freed even on failure
    with pytest.raises(ConfigError, match="cannot write the plot"):
        save_png(plt.figure(), tmp_path)  # a directory: not silently written to "<dir>.png"
    assert not (tmp_path.parent / f"{tmp_path.name}.png").exists()
    out = save_png(plt.figure(), tmp_path / "plot")  # no suffix: written where asked, as a PNG
    assert out == tmp_path / "plot" and out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_cli_catalog_commands_with_bad_output_paths(
    blocker: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    catalog = tmp_path / "cat.jsonl"
    catalog.write_text(json.dumps({"id": "a", "name": "send_email", "description": "Send an email."}) + "\n")
    for out in (tmp_path, blocker / "cat.jsonl"):
        code = main(["catalog", "build", "--offline", "--encoder", "none", "--out", str(out)])
        err = capsys.readouterr().err
        assert code == 2 and "--out" in err and "Traceback" not in err
    code = main(["catalog", "stats", str(catalog), "--encoder", "hash", "--png", str(blocker / "x.png")])
    err = capsys.readouterr().err
    assert code == 2 and "cannot write the plot" in err
