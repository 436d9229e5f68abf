"""Agreement with sentence-transformers: the real model against a stored fixture, the tiny one live."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "minilm_reference.npz"


@pytest.fixture(scope="module")
def reference():
    with np.load(FIXTURE, allow_pickle=False) as data:
        return [str(t) for t in data["texts"]], data["embeddings"], json.loads(str(data["meta"]))


@pytest.fixture(scope="module")
def minilm_dir():
    from rated.encode.prepare import prepare_minilm

    return prepare_minilm(progress=False)


def _backends() -> list:
    """onnxruntime always; OpenVINO when its extra is installed (it then runs bfloat16 where it can)."""
    try:
        import openvino  # noqa: F401
    except ImportError:
        return ["onnxruntime", pytest.param("openvino", marks=pytest.mark.skip("openvino not installed"))]
    return ["onnxruntime", "openvino"]


@pytest.mark.slow
@pytest.mark.parametrize("backend", _backends())
def test_onnx_minilm_matches_sentence_transformers(minilm_dir, reference, backend):
    from rated.encode.onnx import OnnxEncoder

    texts, expected, meta = reference
    assert max(meta["untruncated_token_counts"]) > 256  # the fixture exercises truncation
    manifest = json.loads((minilm_dir / "manifest.json").read_text())
    assert manifest["files"]["model.safetensors"]["sha256"] == meta["safetensors_sha256"]
    enc = OnnxEncoder.load(minilm_dir, backend=backend)
    assert enc.dim == 384 and enc.backend == backend
    for batch_size in (64, 3):
        got = enc.encode_tools(texts, batch_size=batch_size)
        cos = (got * expected).sum(1)
        assert cos.min() >= 0.999, dict(zip(texts, cos.round(5), strict=True))
    singles = np.vstack([enc.encode_queries([t]) for t in texts])
    assert (singles * expected).sum(1).min() >= 0.999


@pytest.mark.slow
def test_quantized_minilm_stays_close(minilm_dir, reference):
    from rated.encode.onnx import OnnxEncoder

    texts, expected, _ = reference
    got = OnnxEncoder.load(minilm_dir, quantized=True).encode_tools(texts)
    cos = (got * expected).sum(1)
    assert cos.min() >= 0.95 and cos.mean() >= 0.985, dict(zip(texts, cos.round(4), strict=True))


@pytest.mark.slow
def test_default_encoder_is_cached_and_semantic(minilm_dir):
    from rated.encode import default_encoder

    enc = default_encoder(progress=False)
    assert default_encoder() is enc and not enc.name.endswith("-int8")
    assert default_encoder(quantized=True).name.endswith("-int8")
    q, mail, weather = enc.encode_queries(
        [
            "send an email to my boss saying I will be late",
            "Send an email message to a recipient",
            "Get the weather forecast for a city",
        ]
    )
    assert float(q @ mail) > float(q @ weather) + 0.2


@pytest.mark.slow
@pytest.mark.train
def test_sentence_transformers_adapter_agrees_with_onnx_export(tiny_checkpoint, tiny_model_dir):
    pytest.importorskip("sentence_transformers")
    from rated.encode.onnx import OnnxEncoder
    from rated.encode.st import SentenceTransformerEncoder

    texts = ["send email", "get the weather in a city", "", "book a flight " * 20]
    st = SentenceTransformerEncoder(tiny_checkpoint)
    assert st.dim == 16
    ref = st.encode_tools(texts)
    assert ref.dtype == np.float32 and st.encode_queries([]).shape == (0, 16)
    got = OnnxEncoder.load(tiny_model_dir).encode_tools(texts)
    assert (got * ref).sum(1).min() >= 0.9999
