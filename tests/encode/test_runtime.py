"""The graph runtimes: backend choice, OpenVINO against onnxruntime, padding, threads, bad settings."""

from __future__ import annotations

import os
import shutil
import sys
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from rated.encode.onnx import OnnxEncoder
from rated.encode.runtime import BACKEND_ENV, STANDARD_GRAPH_NAME, resolve_backend, standard_graph_path
from rated.errors import ModelError

TEXTS = ["send an email", "get the weather in a city", "", "book a flight " * 20, "x", "convert 3 usd to eur"]


def test_explicit_and_env_choices(monkeypatch):
    monkeypatch.delenv(BACKEND_ENV, raising=False)
    assert resolve_backend("onnxruntime") == "onnxruntime"
    assert resolve_backend("auto", quantized=True) == "onnxruntime"  # the int8 graph is onnxruntime's
    monkeypatch.setenv(BACKEND_ENV, " ONNXRuntime ")
    assert resolve_backend() == "onnxruntime"
    monkeypatch.setenv(BACKEND_ENV, "tensorrt")
    with pytest.raises(ModelError, match=f"{BACKEND_ENV} must be one of auto, onnxruntime, openvino"):
        resolve_backend()
    with pytest.raises(ModelError, match="backend must be one of"):
        resolve_backend("cuda")


def test_missing_openvino(monkeypatch):
    monkeypatch.setitem(sys.modules, "openvino", None)  # makes ``import openvino`` raise ImportError
    assert resolve_backend("auto") == "onnxruntime"
    with pytest.raises(ModelError, match="needs the openvino extra"):
        resolve_backend("openvino")


def test_int8_with_openvino(monkeypatch):
    with pytest.raises(ModelError, match="backend='openvino' with quantized=True"):
        resolve_backend("openvino", quantized=True)
    monkeypatch.setenv(BACKEND_ENV, "openvino")  # a preference: asking for int8 explicitly wins
    assert resolve_backend(quantized=True) == "onnxruntime"


def test_standard_graph_needs_the_weights(tmp_path, tiny_model_dir):
    folder = tmp_path / "m"
    shutil.copytree(tiny_model_dir, folder)
    (folder / "model.safetensors").unlink()
    (folder / STANDARD_GRAPH_NAME).unlink(missing_ok=True)  # built by an earlier test on this folder
    with pytest.raises(ModelError, match="no model.safetensors"):
        standard_graph_path(folder, folder / "model.onnx")


@pytest.fixture(scope="module")
def both(tiny_model_dir):
    pytest.importorskip("openvino")
    ort = OnnxEncoder.load(tiny_model_dir, backend="onnxruntime")
    ov = OnnxEncoder.load(tiny_model_dir, backend="openvino")
    return ort, ov


def test_openvino_agrees_with_onnxruntime(both):
    ort, ov = both
    assert (ort.backend, ov.backend) == ("onnxruntime", "openvino")
    assert ort.precision == "f32" and ov.precision in ("f32", "bf16")  # bf16 where the CPU has it
    assert ov.name == ort.name and ov.fingerprint == ort.fingerprint  # the same model, not a cheaper one
    for batch_size in (64, 2):
        a, b = ort.encode(TEXTS, batch_size=batch_size), ov.encode(TEXTS, batch_size=batch_size)
        assert b.dtype == np.float32 and b.shape == a.shape
        assert (a * b).sum(1).min() >= 0.999
    singles = np.vstack([ov.encode_queries([t]) for t in TEXTS])
    assert (singles * ort.encode(TEXTS)).sum(1).min() >= 0.999


def test_padding_to_a_shape_bucket_changes_nothing(both, monkeypatch):
    from rated.encode import runtime

    _, ov = both
    texts = ["send an email", "get the weather in a city today", "x"]  # none a multiple of 16 tokens
    padded = [ov.encode_queries([t]) for t in texts] + [ov.encode(texts)]
    monkeypatch.setattr(runtime, "PAD_MULTIPLE", 1)  # the exact input widths, no padding
    exact = [ov.encode_queries([t]) for t in texts] + [ov.encode(texts)]
    for a, b in zip(padded, exact, strict=True):
        np.testing.assert_allclose(a, b, atol=1e-5)


def test_threads_get_their_own_requests(both):
    _, ov = both
    expected = [ov.encode_queries([t]) for t in TEXTS]
    with ThreadPoolExecutor(4) as pool:
        got = list(pool.map(lambda i: ov.encode_queries([TEXTS[i % len(TEXTS)]]), range(48)))
    for i, row in enumerate(got):
        np.testing.assert_allclose(row, expected[i % len(TEXTS)], atol=1e-6)


def test_the_standard_graph_is_built_once_and_rebuilt_when_stale(tmp_path, tiny_model_dir):
    folder = tmp_path / "m"
    shutil.copytree(tiny_model_dir, folder)
    graph = standard_graph_path(folder, folder / "model.onnx")
    built = graph.read_bytes()
    marker = b"kept while newer than model.onnx"
    graph.write_bytes(marker)
    assert standard_graph_path(folder, folder / "model.onnx").read_bytes() == marker
    newer = graph.stat().st_mtime + 10
    os.utime(folder / "model.onnx", (newer, newer))  # the fused graph was rebuilt after it: stale
    assert standard_graph_path(folder, folder / "model.onnx").read_bytes() == built


def test_auto_falls_back_where_openvino_cannot_run(tmp_path, tiny_model_dir, monkeypatch, caplog):
    pytest.importorskip("openvino")
    from rated.encode import runtime

    monkeypatch.setattr(runtime, "openvino_speeds_up", lambda: True)  # as on a CPU with bfloat16
    folder = tmp_path / "m"
    shutil.copytree(tiny_model_dir, folder)
    (folder / "model.safetensors").unlink()  # nothing to export the standard graph from
    (folder / STANDARD_GRAPH_NAME).unlink(missing_ok=True)
    with caplog.at_level("WARNING", logger="rated.encode.runtime"):
        enc = OnnxEncoder.load(folder, verify=False, backend="auto")
    assert enc.backend == "onnxruntime" and "using onnxruntime" in caplog.text
    assert enc.encode(["still works"]).shape == (1, enc.dim)
    with pytest.raises(ModelError, match="OpenVINO cannot run"):
        OnnxEncoder.load(folder, verify=False, backend="openvino")


def test_default_is_onnxruntime_even_where_openvino_would_be_faster(monkeypatch):
    from rated.encode import runtime

    monkeypatch.delenv(BACKEND_ENV, raising=False)
    monkeypatch.setattr(runtime, "openvino_speeds_up", lambda: True)
    assert resolve_backend() == "onnxruntime"  # the published figures are onnxruntime's: opt in to change
    assert resolve_backend("auto") == "openvino"
    monkeypatch.setenv(BACKEND_ENV, "auto")
    assert resolve_backend() == "openvino"
    monkeypatch.setattr(runtime, "openvino_speeds_up", lambda: False)
    assert resolve_backend() == "onnxruntime"
