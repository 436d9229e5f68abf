"""OnnxEncoder on a tiny prepared model: shapes, order, batching, truncation, errors."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

from rated.encode import Encoder
from rated.encode.onnx import ENCODER_THREADS_ENV, OnnxEncoder, default_threads
from rated.errors import IndexFormatError, ModelError

TEXTS = [
    "send email",
    "get the weather in a city",
    "a",
    "",
    "book a flight to the city of the stock price tool search and find",
    "Émoji 🚀 and ünïcode",
    "get stock price",
]


@pytest.fixture(scope="module")
def encoder(tiny_model_dir):
    return OnnxEncoder.load(tiny_model_dir, threads=1)


def test_protocol_shape_dtype_norm(encoder):
    assert isinstance(encoder, Encoder)
    assert encoder.name == "tiny-bert" and encoder.dim == 16 and len(encoder.fingerprint) == 16
    out = encoder.encode_tools(TEXTS)
    assert out.shape == (len(TEXTS), 16) and out.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(out, axis=1), 1.0, atol=1e-5)
    assert encoder.encode_queries([]).shape == (0, 16)
    assert encoder.encode_queries([]).dtype == np.float32


def test_batching_and_length_sorting_keep_input_order(encoder):
    one_by_one = np.vstack([encoder.encode_queries([t]) for t in TEXTS])
    for batch_size in (1, 2, 3, 64):
        np.testing.assert_allclose(encoder.encode_tools(TEXTS, batch_size=batch_size), one_by_one, atol=1e-5)
    np.testing.assert_allclose(encoder.encode_queries(TEXTS), encoder.encode_tools(TEXTS), atol=1e-6)
    # different texts give different vectors (the model is not constant)
    assert float(one_by_one[0] @ one_by_one[1]) < 0.999


def test_truncates_at_max_seq_length(encoder):
    # the tiny model truncates at 12 word pieces ([CLS] + 10 + [SEP]); what follows cannot matter
    base = "send email to the city of a tool search find book"
    a, b = encoder.encode_queries([base + " weather stock price", base + " flight get and"])
    np.testing.assert_allclose(a, b, atol=1e-6)
    c, d = encoder.encode_queries(["send email", "send email weather"])
    assert float(c @ d) < 0.9999


def test_progress_bar_does_not_change_results(encoder, capsys):
    many = TEXTS * 5
    np.testing.assert_allclose(
        encoder.encode_tools(many, batch_size=4, progress=True), encoder.encode_tools(many), atol=1e-6
    )
    assert capsys.readouterr().out == ""  # progress goes to stderr, never stdout


def test_bad_inputs(encoder):
    with pytest.raises(TypeError, match="single string"):
        encoder.encode_queries("send email")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"texts\[1\] is int"):
        encoder.encode_tools(["ok", 3])  # type: ignore[list-item]


def test_load_checks_the_folder(tmp_path, tiny_model_dir):
    model_dir = tmp_path / "m"
    shutil.copytree(tiny_model_dir, model_dir)
    manifest = json.loads((model_dir / "manifest.json").read_text())
    (model_dir / "manifest.json").write_text(json.dumps(dict(manifest, format_version=0)))
    with pytest.raises(IndexFormatError):
        OnnxEncoder.load(model_dir)
    (model_dir / "manifest.json").write_text(json.dumps(manifest))
    (model_dir / "model.onnx").write_bytes(b"truncated")
    with pytest.raises(ModelError, match="model.onnx"):
        OnnxEncoder.load(model_dir)
    with pytest.raises(ModelError, match="not a prepared model folder"):
        OnnxEncoder.load(tmp_path)


def test_quantized_copy_is_close(tmp_path, tiny_model_dir, encoder):
    model_dir = tmp_path / "m"
    shutil.copytree(tiny_model_dir, model_dir)
    q = OnnxEncoder.load(model_dir, threads=1, quantized=True)
    assert (model_dir / "model.int8.onnx").is_file() and q.name.endswith("-int8")
    cos = (q.encode_tools(TEXTS) * encoder.encode_tools(TEXTS)).sum(1)
    assert cos.min() > 0.95


def test_thread_setting(monkeypatch):
    monkeypatch.setenv(ENCODER_THREADS_ENV, "3")
    assert default_threads() == 3
    for bad in ("many", "0", "-2"):  # 0 and negatives were silently taken as 1
        monkeypatch.setenv(ENCODER_THREADS_ENV, bad)
        with pytest.raises(ModelError, match=f"{ENCODER_THREADS_ENV} must be a positive integer"):
            default_threads()
    monkeypatch.delenv(ENCODER_THREADS_ENV)
    assert 1 <= default_threads() <= 4


def test_token_budget_batches_are_bounded_and_complete(encoder):
    from rated.encode.onnx import _token_batches

    lengths = np.array([2, 3, 3, 5, 8, 8, 20, 40])
    batches = _token_batches(lengths, np.arange(8), max_texts=3, max_tokens=16)
    assert np.concatenate(batches).tolist() == list(range(8))
    for b in batches:
        assert len(b) <= 3 and (len(b) == 1 or len(b) * lengths[b[-1]] <= 16)
    assert [len(b) for b in batches] == [3, 2, 1, 1, 1]

    reference = encoder.encode_tools(TEXTS)
    encoder.max_tokens = 8  # forces many small batches
    try:
        np.testing.assert_allclose(encoder.encode_tools(TEXTS), reference, atol=1e-5)
    finally:
        from rated.encode.onnx import MAX_BATCH_TOKENS

        encoder.max_tokens = MAX_BATCH_TOKENS


def test_default_threads_count_the_cpus_the_process_may_use(monkeypatch):
    """In a container or under taskset with 1 of a host's 64 CPUs, os.cpu_count() says 64: 4 encoder threads
    on one CPU only contend."""
    import os

    monkeypatch.delenv(ENCODER_THREADS_ENV, raising=False)
    monkeypatch.setattr(os, "cpu_count", lambda: 64)
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {7}, raising=False)
    assert default_threads() == 1
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(12)), raising=False)
    assert default_threads() == 4
