"""``rated.encode.encoder_from_spec``: the names ``rated index --encoder`` and the library's ``encoder=``
share (``default``, ``hash[-DIM]``, an ONNX model folder), and the ``ConfigError`` naming a name that is
none of them, raised before anything is loaded."""

from __future__ import annotations

import pytest

import rated.encode
from rated.encode import encoder_from_spec
from rated.encode.onnx import OnnxEncoder
from rated.encode.testing import HashEncoder
from rated.errors import ConfigError


@pytest.mark.parametrize(("spec", "dim"), [("hash", 256), ("hash-64", 64), ("hash-2", 2)])
def test_hash_names_give_the_fake_encoder_of_that_size(spec, dim):
    encoder = encoder_from_spec(spec, progress=False)
    assert isinstance(encoder, HashEncoder)
    assert (encoder.dim, encoder.name) == (dim, f"hash-{dim}-s0")


@pytest.mark.parametrize("spec", ["hash-x", "hash-1", "hash-0", "hash-\u00b2", "hash-6.4"])
def test_a_hash_name_without_a_usable_size_is_refused_by_name(spec):
    # hash-1 and hash-² were a ValueError traceback from the CLI before
    with pytest.raises(ConfigError, match=rf"encoder {spec!r}: expected 'hash' or 'hash-DIM'"):
        encoder_from_spec(spec, progress=False)


@pytest.mark.parametrize("spec", ["nosuch", "", "Default", "hash64"])
def test_an_unknown_name_is_refused_by_name(spec):
    with pytest.raises(ConfigError, match=rf"encoder {spec!r}: not 'default', 'hash', 'hash-DIM' or an"):
        encoder_from_spec(spec, progress=False)


def test_a_model_folder_that_does_not_exist_is_refused_by_its_path(tmp_path):
    missing = str(tmp_path / "no-such-model")
    with pytest.raises(ConfigError, match=f"encoder {missing!r}: .*existing ONNX model folder"):
        encoder_from_spec(missing, progress=False)


def test_a_model_folder_is_loaded(tiny_model_dir):
    encoder = encoder_from_spec(str(tiny_model_dir), progress=False)
    assert isinstance(encoder, OnnxEncoder)
    assert encoder.model_dir == tiny_model_dir


def test_the_library_takes_a_model_folder_as_a_path_too(tiny_model_dir):
    from rated.retriever_setup import check_encoder_object

    encoder = check_encoder_object(tiny_model_dir)  # a pathlib.Path, as a caller builds one
    assert isinstance(encoder, OnnxEncoder) and encoder.model_dir == tiny_model_dir


@pytest.mark.parametrize("progress", [True, False])
def test_default_is_the_embedded_model_prepared_with_the_callers_progress(monkeypatch, progress):
    asked = []
    stand_in = HashEncoder(8)

    def default_encoder(**kwargs):
        asked.append(kwargs)
        return stand_in

    monkeypatch.setattr(rated.encode, "default_encoder", default_encoder)  # the real model is not loaded
    assert encoder_from_spec("default", progress=progress) is stand_in
    assert asked == [{"progress": progress}]
