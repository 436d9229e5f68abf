"""The ONNX BERT graph must compute what BERT computes: checked against a plain numpy forward pass."""

from __future__ import annotations

import json
import math

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from tiny_bert import TINY_CONFIG, tiny_weights

from rated.encode.onnx_build import BertConfig, build_bert_onnx, export_bert_onnx, load_bert_weights
from rated.errors import ModelError

_erf = np.vectorize(math.erf, otypes=[np.float64])


def _layer_norm(x: np.ndarray, g: np.ndarray, b: np.ndarray, eps: float) -> np.ndarray:
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * g + b


def numpy_bert(cfg: dict, w: dict, ids: np.ndarray, mask: np.ndarray, types: np.ndarray):
    """Reference BERT forward pass in float64 + mean pooling + L2 normalisation."""
    w = {k: v.astype(np.float64) for k, v in w.items() if v.dtype.kind == "f"}
    eps, nh = cfg["layer_norm_eps"], cfg["num_attention_heads"]
    b, s = ids.shape
    hd = cfg["hidden_size"] // nh
    x = w["embeddings.word_embeddings.weight"][ids]
    x = x + w["embeddings.position_embeddings.weight"][np.arange(s)][None]
    x = x + w["embeddings.token_type_embeddings.weight"][types]
    x = _layer_norm(x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"], eps)
    neg = (1.0 - mask[:, None, None, :]) * -1e9
    for i in range(cfg["num_hidden_layers"]):
        p = f"encoder.layer.{i}"

        def lin(t: np.ndarray, name: str, p: str = p) -> np.ndarray:
            return t @ w[f"{p}.{name}.weight"].T + w[f"{p}.{name}.bias"]

        def heads(t: np.ndarray) -> np.ndarray:
            return t.reshape(b, s, nh, hd).transpose(0, 2, 1, 3)

        q, k, v = (heads(lin(x, f"attention.self.{n}")) for n in ("query", "key", "value"))
        scores = q @ k.transpose(0, 1, 3, 2) / math.sqrt(hd) + neg
        probs = np.exp(scores - scores.max(-1, keepdims=True))
        probs /= probs.sum(-1, keepdims=True)
        ctx = (probs @ v).transpose(0, 2, 1, 3).reshape(b, s, -1)
        ln = f"{p}.attention.output.LayerNorm"
        x = _layer_norm(lin(ctx, "attention.output.dense") + x, w[f"{ln}.weight"], w[f"{ln}.bias"], eps)
        inter = lin(x, "intermediate.dense")
        inter = 0.5 * inter * (1.0 + _erf(inter / math.sqrt(2.0)))
        ln = f"{p}.output.LayerNorm"
        x = _layer_norm(lin(inter, "output.dense") + x, w[f"{ln}.weight"], w[f"{ln}.bias"], eps)
    m = mask[..., None].astype(np.float64)
    pooled = (x * m).sum(1) / np.maximum(m.sum(1), 1e-9)
    return x, pooled / np.linalg.norm(pooled, axis=1, keepdims=True)


@pytest.fixture(scope="module")
def tiny():
    cfg = dict(TINY_CONFIG, vocab_size=50)
    return cfg, tiny_weights(cfg, seed=3)


def _inputs(rng: np.random.Generator, vocab: int):
    ids = rng.integers(5, vocab, size=(3, 9))
    mask = np.ones_like(ids)
    mask[1, 6:] = 0  # padded rows: padding must not leak into the result
    mask[2, 3:] = 0
    ids[mask == 0] = 0
    types = np.zeros_like(ids)
    types[0, 5:] = 1
    return ids.astype(np.int64), mask.astype(np.int64), types.astype(np.int64)


@pytest.mark.parametrize("fused", [True, False])
def test_graph_matches_numpy_reference(tiny, fused):
    cfg, w = tiny
    model = build_bert_onnx(BertConfig.from_dict(cfg), w, fused=fused)
    onnx.checker.check_model(model)
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    ids, mask, types = _inputs(np.random.default_rng(0), cfg["vocab_size"])
    hidden, emb = sess.run(
        ["last_hidden_state", "sentence_embedding"],
        {"input_ids": ids, "attention_mask": mask, "token_type_ids": types},
    )
    ref_hidden, ref_emb = numpy_bert(cfg, w, ids, mask, types)
    valid = mask.astype(bool)
    np.testing.assert_allclose(hidden[valid], ref_hidden[valid], atol=2e-4)
    np.testing.assert_allclose(emb, ref_emb, atol=1e-5)
    assert emb.dtype == np.float32 and emb.shape == (3, cfg["hidden_size"])


def test_padding_does_not_change_embedding(tiny):
    cfg, w = tiny
    sess = ort.InferenceSession(
        build_bert_onnx(BertConfig.from_dict(cfg), w).SerializeToString(), providers=["CPUExecutionProvider"]
    )
    ids = np.array([[2, 10, 11, 12, 3]], dtype=np.int64)
    padded = np.concatenate([ids, np.zeros((1, 4), np.int64)], axis=1)
    mask = (padded != 0).astype(np.int64)
    alone = sess.run(["sentence_embedding"], {"input_ids": ids, "attention_mask": np.ones_like(ids),
                                              "token_type_ids": np.zeros_like(ids)})[0]  # fmt: skip
    batched = sess.run(["sentence_embedding"], {"input_ids": padded, "attention_mask": mask,
                                                "token_type_ids": np.zeros_like(padded)})[0]  # fmt: skip
    np.testing.assert_allclose(alone, batched, atol=1e-5)


def test_export_strips_checkpoint_prefixes(tmp_path, tiny):
    from safetensors.numpy import save_file

    cfg, w = tiny
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    save_file({"bert." + k: v for k, v in w.items()}, str(tmp_path / "model.safetensors"))
    assert "embeddings.word_embeddings.weight" in load_bert_weights(tmp_path / "model.safetensors")
    out = export_bert_onnx(tmp_path, tmp_path / "m.onnx", fused=False)
    onnx.checker.check_model(str(out))


def test_config_errors_are_clear(tiny):
    cfg, w = tiny
    with pytest.raises(ModelError, match="not divisible"):
        BertConfig.from_dict(dict(cfg, num_attention_heads=5))
    with pytest.raises(ModelError, match="hidden_act"):
        BertConfig.from_dict(dict(cfg, hidden_act="swish"))
    with pytest.raises(ModelError, match="model_type"):
        BertConfig.from_dict(dict(cfg, model_type="roberta"))
    with pytest.raises(ModelError, match="missing a field"):
        BertConfig.from_dict({"model_type": "bert", "hidden_size": 16})
    with pytest.raises(ModelError, match="encoder.layer.1"):
        broken = {k: v for k, v in w.items() if not k.startswith("encoder.layer.1.output.dense")}
        build_bert_onnx(BertConfig.from_dict(cfg), broken)
    with pytest.raises(ModelError, match="shape"):
        build_bert_onnx(BertConfig.from_dict(dict(cfg, vocab_size=49)), w)
