"""Reopening an index whose encoder's model folder is damaged: the default model is prepared again (as
``rated index`` already did), a fine-tuned one is named. Fast: stand-ins for the default encoder."""

from __future__ import annotations

import pytest

from rated import Tool
from rated import retriever_setup as setup
from rated.encode.prepare import MINILM
from rated.encode.testing import HashEncoder
from rated.errors import ConfigError, ModelError
from rated.retriever import Retriever

TOOLS = [
    Tool(id="mail", name="send_email", description="Send an email message"),
    Tool(id="weather", name="weather_forecast", description="Weather forecast for a city"),
]


class FolderEncoder:
    """Looks like an OnnxEncoder loaded from ``model_dir``: the identity the index records."""

    def __init__(self, model_dir, name: str = MINILM.name, fingerprint: str = "f00d"):
        self.name, self.dim, self.fingerprint, self.model_dir = name, 32, fingerprint, model_dir
        self._inner = HashEncoder(32, seed=3)

    def encode_tools(self, texts, *, batch_size=64, progress=False):
        return self._inner.encode_tools(texts)

    def encode_queries(self, texts, *, batch_size=64, progress=False):
        return self._inner.encode_queries(texts)


def damaged_folder(tmp_path):
    folder = tmp_path / "models" / MINILM.name
    folder.mkdir(parents=True)
    (folder / "model.onnx").write_bytes(b"truncated")  # no manifest.json: OnnxEncoder.load refuses it
    return folder


def test_a_damaged_default_model_folder_is_prepared_again_on_reopen(tmp_path, monkeypatch):
    folder = damaged_folder(tmp_path)
    db = tmp_path / "r.db"
    Retriever.from_catalog(TOOLS, db=db, encoder=FolderEncoder(folder)).close()
    calls = []

    def prepared_again(progress=True, quantized=None):
        calls.append(quantized)
        return FolderEncoder(folder)

    monkeypatch.setattr(setup, "default_encoder", prepared_again)
    with Retriever.open(db) as r:  # used to fail with the folder's ModelError on every open
        assert r.retrieve("send an email", k=1)[0].id == "mail"
    assert calls == [False]


def test_a_damaged_fine_tuned_model_folder_is_still_an_error(tmp_path, monkeypatch):
    folder = damaged_folder(tmp_path)
    db = tmp_path / "r.db"
    Retriever.from_catalog(TOOLS, db=db, encoder=FolderEncoder(folder, name="my-finetune")).close()

    def no_default(*args, **kwargs):
        raise AssertionError("the default model cannot stand in for a fine-tuned one")

    monkeypatch.setattr(setup, "default_encoder", no_default)
    with pytest.raises(ModelError):
        Retriever.open(db)


def test_other_weights_in_the_default_folder_are_refused(tmp_path, monkeypatch):
    folder = damaged_folder(tmp_path)
    db = tmp_path / "r.db"
    Retriever.from_catalog(TOOLS, db=db, encoder=FolderEncoder(folder)).close()
    monkeypatch.setattr(setup, "default_encoder", lambda **kw: FolderEncoder(folder, fingerprint="beef"))
    with pytest.raises(ConfigError, match="indexed with encoder"):
        Retriever.open(db)
